package journal

import (
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// TestTap: Options.Tap is given every byte written to the log, in order,
// each group once it is written, across rotations and at Close.
func TestTap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dur     string
		maxSize int64
	}{
		{"strict", "strict", 0},
		{"none", "none", 0},
		{"rotating", "strict", 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			var tapped bytes.Buffer
			groups := 0
			j, err := Open(path, Options{Durability: mustDurability(t, tc.dur), Key: testKey(t), MaxSize: tc.maxSize,
				Tap: func(b []byte) { tapped.Write(b); groups++ }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: tc.dur, PolicySet: record.PassThroughSet}); err != nil {
				t.Fatal(err)
			}
			var c record.Counts
			for i := range 40 {
				in := &record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte{'1' + byte(i%9)}}, Tool: []byte("echo"), HasTool: true}
				seq, err := j.Append(in)
				if err != nil {
					t.Fatal(err)
				}
				if err := j.Wait(seq, BeforeRequest); err != nil {
					t.Fatal(err)
				}
				if seq, err = j.Append(&record.Outcome{Call: in.Call, Intent: seq, Status: record.StatusOK, HasResponse: true}); err != nil {
					t.Fatal(err)
				}
				if err := j.Wait(seq, BeforeResponse); err != nil {
					t.Fatal(err)
				}
				c.Intents++
				c.Outcomes++
			}
			if _, err := j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: c}); err != nil {
				t.Fatal(err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			var file []byte
			files, _ := filepath.Glob(path + "*")
			if tc.maxSize == 0 {
				files = []string{path}
			} else if len(files) < 3 {
				t.Fatalf("%d files; want a rotation", len(files))
			}
			// Segments' names sort in seq order; the live file comes last.
			for _, f := range append(sealed(files, path), path) {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				file = append(file, bytes.TrimRight(b, "\x00")...)
			}
			if !bytes.Equal(tapped.Bytes(), file) {
				t.Fatalf("Tap got %d bytes in %d groups; the log holds %d, not the same", tapped.Len(), groups, len(file))
			}
			if groups < 2 {
				t.Fatalf("Tap called %d times; want each group", groups)
			}
		})
	}
}

// sealed returns the sealed segments among files, in seq order.
func sealed(files []string, path string) []string {
	var out []string
	for _, f := range files {
		if _, ok := segment.ParseName(f); ok && f != path {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		ia, _ := segment.ParseName(a)
		ib, _ := segment.ParseName(b)
		return cmp.Compare(ia.First, ib.First)
	})
	return out
}
