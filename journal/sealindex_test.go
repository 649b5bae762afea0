package journal

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// TestSealIndex: with Options.Index set, the journal writes one entry per
// segment it seals, for the file that stays (the .zst when compressed, the
// plain segment when not or when compression fails), each byte for byte
// what tlog.Index.Add makes of that file; a segment of an earlier session
// that Add makes no entry of (its last record rewritten) gets none and
// fails nothing.
func TestSealIndex(t *testing.T) {
	key := testKey(t)
	strict := mustDurability(t, "strict")
	zstCreate := errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpCreate), errorfs.Base("*"+segment.CompressedExt+segment.TmpExt)), errorfs.EROFS)
	tests := []struct {
		name     string
		compress bool
		rule     *errorfs.Rule // nil: no fault
		rewrite  bool          // an earlier session's sealed segment rewritten
		wantZst  bool          // the segments that stay are compressed
	}{
		{name: "plain", compress: false},
		{name: "compressed", compress: true, wantZst: true},
		{name: "compression fails", compress: true, rule: &zstCreate},
		{name: "an earlier segment rewritten", compress: true, rewrite: true, wantZst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			idx := filepath.Join(t.TempDir(), "index")
			var broken string
			if tt.rewrite {
				rotSession(t, path, key, Options{Durability: strict, MaxSize: 2048}, 20)
				broken = rewriteBeforeLast(t, sealedIn(t, dir)[0])
			}
			opts := Options{Durability: strict, MaxSize: 2048, Compress: tt.compress, Index: tlog.NewIndex(idx)}
			if tt.rule != nil {
				var in *errorfs.Injector
				opts.FS, in = faultOS(*tt.rule)
				defer func() {
					if in.Injected() == 0 {
						t.Errorf("no fault injected (files %v)", dirNames(t, dir))
					}
				}()
			}
			rotSession(t, path, key, opts, 20)

			segs := sealedIn(t, dir)
			if len(segs) < 3 {
				t.Fatalf("sealed segments %v; want rotation", segs)
			}
			ref := filepath.Join(t.TempDir(), "ref")
			refIndex := tlog.NewIndex(ref)
			want := 0
			for _, s := range segs {
				if got := strings.HasSuffix(s, segment.CompressedExt); got != tt.wantZst {
					t.Errorf("%s stays; want compressed %v", filepath.Base(s), tt.wantZst)
				}
				if broken != "" && s == broken+segment.CompressedExt {
					continue // Add makes no entry of it (and panics)
				}
				if err := refIndex.Add(s); err != nil {
					t.Fatalf("Add(%s) = %v", s, err)
				}
				want++
			}
			got, wantFiles := dirFiles(t, idx), dirFiles(t, ref)
			if len(wantFiles) != want {
				t.Fatalf("reference index holds %d entries; want %d", len(wantFiles), want)
			}
			if !maps.EqualFunc(got, wantFiles, bytes.Equal) {
				t.Errorf("index entries %v; want %v (one per sealed segment, as Index.Add makes them)", keys(got), keys(wantFiles))
			}
		})
	}
}

// sealedIn returns the paths of the sealed segments in dir, plain or
// compressed, oldest first.
func sealedIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	var firsts []uint64
	for _, n := range dirNames(t, dir) {
		if s, ok := segment.ParseName(n); ok && !strings.HasSuffix(n, segment.TmpExt) {
			out = append(out, filepath.Join(dir, n))
			firsts = append(firsts, s.First)
		}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(firsts[a]) - int(firsts[b]) })
	sorted := make([]string, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

// rewriteBeforeLast changes one byte of the plain segment's next-to-last
// record, so that its last record no longer chains within it, and returns
// the segment's path.
func rewriteBeforeLast(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty string after the last newline
	if len(lines) < 3 {
		t.Fatalf("%s holds %d lines; want 3 at least", path, len(lines))
	}
	l := lines[len(lines)-2]
	i := bytes.Index(l, []byte(`"ts":"`)) + len(`"ts":"`)
	l[i] ^= 1 // a digit of the year: still a record line
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dirFiles returns the contents of the files in dir by name (none if dir
// does not exist).
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k[:min(len(k), 12)])
	}
	slices.Sort(out)
	return out
}

// BenchmarkSealIndex: a lock-step call (intent and outcome, each waited
// for) at none through a journal that rotates every 256 KiB, with and
// without Options.Index, plain and compressed: the entries are written by
// the sealer or the compressor beside the calls, and this is what they
// cost the calls on the cores they share. The floor is the same journal
// without an index, in the same run.
//
//	go test -run XXX -bench SealIndex -count 5 ./journal/
func BenchmarkSealIndex(b *testing.B) {
	for _, compress := range []bool{false, true} {
		for _, index := range []bool{false, true} {
			name := map[bool]string{false: "plain", true: "compressed"}[compress] + "/" + map[bool]string{false: "floor-no-index", true: "index"}[index]
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				opts := Options{Durability: mustDurability(b, "none"), Key: benchKey, MaxSize: 256 << 10, Compress: compress}
				if index {
					opts.Index = tlog.NewIndex(filepath.Join(dir, "index"))
				}
				j, err := Open(filepath.Join(dir, "audit.jsonl"), opts)
				if err != nil {
					b.Fatal(err)
				}
				c := newCallRecords()
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					if err := c.call(j, n); err != nil {
						b.Fatal(err)
					}
					n++
				}
				b.StopTimer()
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
