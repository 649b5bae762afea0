package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// TestGolden pins what the writer leaves on disk, byte for byte, with a
// fixed clock, key and session ids (writeGenuineLog), in testdata/golden:
//
//   - rotated/: the genuine log rotated at 1 KiB: its sealed segments and
//     live file;
//   - torn.jsonl: what a crash during the first session's last write
//     leaves, a torn tail;
//   - prezeroed.jsonl: the first session written over pre-zeroed space,
//     as a crash leaves it (the NUL run not yet trimmed).
//
// (record/testdata/genuine.jsonl, kept by TestRecordTestdata, holds every
// record kind.) A change to the format or to the files' layout shows as a
// diff of these files; -update rewrites them.
func TestGolden(t *testing.T) {
	golden := filepath.Join("testdata", "golden")
	files := map[string][]byte{}

	dir := t.TempDir()
	if err := writeGenuineLog(filepath.Join(dir, "audit.jsonl"), 1<<10); err != nil {
		t.Fatal(err)
	}
	names, err := vfs.OS.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join("rotated", n)] = data
	}

	g := mustGenuine(t)
	i := bytes.Index(g, []byte(tornLine))
	if i < 0 {
		t.Fatal("premise: the genuine log holds the torn line")
	}
	torn := g[:i+len(tornLine)]
	files["torn.jsonl"] = torn

	pz := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := logFS{vfs.OS}.OpenAppend(pz)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(g[:i]); err != nil {
		t.Fatal(err)
	}
	z := f.z
	z.extend(z.content(), minPreZeroChunk) // as the background goroutine does
	if data, err := os.ReadFile(pz); err != nil {
		t.Fatal(err)
	} else {
		files["prezeroed.jsonl"] = data
	}
	f.f.Close() // not Close: that trims the NULs away

	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			p := filepath.Join(golden, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want []string
	filepath.WalkDir(golden, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(golden, p)
			want = append(want, rel)
		}
		return nil
	})
	var got []string
	for name := range files {
		got = append(got, name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("files written = %q; want %q (testdata/golden)", got, want)
	}
	for _, name := range got {
		w, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(files[name], w) {
			t.Errorf("%s differs from testdata/golden; if the format changed on purpose, rerun with -update", name)
		}
	}

	// What the golden files are, as verify judges them.
	tests := []struct {
		name string
		want verify.Status
	}{
		{"torn.jsonl", verify.Incomplete},
		{"prezeroed.jsonl", verify.Valid},
	}
	for _, tt := range tests {
		rep, err := verify.Stream(segment.NewContentReader(bytes.NewReader(files[tt.name])), verify.Options{Key: fuzzPub})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status != tt.want {
			t.Errorf("verify %s = %v; want %v", tt.name, rep.Status, tt.want)
		}
	}
	sets, err := segment.Sets([]string{filepath.Join(golden, "rotated", "audit.jsonl")}, true)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Set(sets[0], verify.Options{Key: fuzzPub})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != verify.Valid || len(rep.Files) < 3 {
		t.Errorf("verify rotated/ = %v over %d files; want %v over 3 or more", rep.Status, len(rep.Files), verify.Valid)
	}
}
