package tlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// writeSegments writes lines as a rotated log in a new folder: sealed
// segments cut at the indexes in cuts (the last one compressed, as
// --compress leaves them) and the live file with the rest, and returns
// its set.
func writeSegments(t testing.TB, lines [][]byte, cuts ...int) *segment.Set {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Join(dir, "audit.jsonl")
	start := 0
	for i, end := range append(cuts, len(lines)) {
		data := join(lines[start:end])
		path := base
		if i < len(cuts) {
			first, _, _ := record.PeekChain(lines[start])
			last, _, _ := record.PeekChain(lines[end-1])
			path = segment.Name(base, first, last)
			if i == len(cuts)-1 {
				enc, err := zstd.NewWriter(nil)
				if err != nil {
					t.Fatal(err)
				}
				data = enc.EncodeAll(data, nil)
				path += segment.CompressedExt
			}
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		start = end
	}
	sets, err := segment.Sets([]string{base}, true)
	if err != nil || len(sets) != 1 {
		t.Fatalf("segment.Sets = %v, %v", sets, err)
	}
	return sets[0]
}

// TestIndexedProofs: a proof made through the index, cold (every entry
// computed) or warm (read back), is byte for byte the one made by
// reading every record, whichever segment the leaf, the checkpoint's end
// or the old tree's end falls in; and warm, the indexed reading succeeds
// without falling back to the whole set.
func TestIndexedProofs(t *testing.T) {
	leaves := synthChain(300)
	set := writeSegments(t, leaves, 64, 100, 200, 257)
	x := NewIndex(t.TempDir())
	for _, size := range []int{300, 257, 230, 64, 1} {
		c := checkpointAt(leaves, size)
		for _, seq := range []uint64{0, 1, 63, 64, 99, 100, 150, 199, 200, 256, 257, 299} {
			if seq >= uint64(size) {
				continue
			}
			want, err := ProveInclusion(set, c, seq)
			if err != nil {
				t.Fatalf("ProveInclusion(size %d, seq %d) = %v", size, seq, err)
			}
			for _, run := range []string{"cold", "warm"} {
				got, err := ProveInclusion(set, c, seq, WithIndex(x))
				if err != nil {
					t.Fatalf("%s: ProveInclusion(size %d, seq %d, WithIndex) = %v", run, size, seq, err)
				}
				if a, b := marshal(t, got), marshal(t, want); !bytes.Equal(a, b) {
					t.Fatalf("%s: ProveInclusion(size %d, seq %d, WithIndex) = %s; want %s", run, size, seq, a, b)
				}
			}
		}
		for _, old := range []int{0, 1, 50, 64, 100, 101, 200, 257, 299} {
			if old > size {
				continue
			}
			oc := checkpointAt(leaves, max(old, 1))
			if old == 0 {
				oc = Checkpoint{Origin: c.Origin, Root: EmptyRoot}
			}
			want, err := ProveConsistency(set, oc, c)
			if err != nil {
				t.Fatalf("ProveConsistency(%d, %d) = %v", old, size, err)
			}
			got, err := ProveConsistency(set, oc, c, WithIndex(x))
			if err != nil {
				t.Fatalf("ProveConsistency(%d, %d, WithIndex) = %v", old, size, err)
			}
			if a, b := marshal(t, got), marshal(t, want); !bytes.Equal(a, b) {
				t.Fatalf("ProveConsistency(%d, %d, WithIndex) = %s; want %s", old, size, a, b)
			}
		}
	}
	// Warm: the indexed reading alone gives the proof's nodes.
	c := checkpointAt(leaves, 300)
	if _, err := collectOnce(set, c, nil, nil, func(first, end uint64) bool { return first <= 150 && 150 < end }, 0, nil, x); err != nil {
		t.Errorf("indexed reading of a genuine set = %v; want it to need no fallback", err)
	}
	ents, err := os.ReadDir(x.dir)
	if err != nil || len(ents) != 4 {
		t.Errorf("index holds %d entries (%v); want one per sealed segment, 4", len(ents), err)
	}
}

// TestIndexLies: an index entry that does not describe its segment (a
// forged range, or a stale one of a rewritten segment under the new
// bytes' name) can make the indexed reading fail, never the proof: prove
// reads the whole set then, and finds what reading every record finds.
func TestIndexLies(t *testing.T) {
	leaves := synthChain(300)
	set := writeSegments(t, leaves, 64, 100, 200, 257)
	x := NewIndex(t.TempDir())
	c := checkpointAt(leaves, 300)
	if _, err := ProveInclusion(set, c, 250, WithIndex(x)); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(x.dir)
	for _, de := range ents {
		p := filepath.Join(x.dir, de.Name())
		data, _ := os.ReadFile(p)
		var e map[string]any
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		r := e["range"].([]any)
		r[0] = Hash{7}.String()
		data, _ = json.Marshal(e)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	must := func(first, end uint64) bool { return first <= 250 && 250 < end }
	if _, err := collectOnce(set, c, nil, nil, must, 0, nil, x); !errors.Is(err, ErrRewritten) {
		t.Errorf("indexed reading through forged entries = %v; want the root not to match (ErrRewritten)", err)
	}
	want, err := ProveInclusion(set, c, 250)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ProveInclusion(set, c, 250, WithIndex(x))
	if err != nil || !bytes.Equal(marshal(t, got), marshal(t, want)) {
		t.Errorf("ProveInclusion through forged entries = %v; want the proof made without them", err)
	}
	// A rewritten segment has other bytes, so another entry: the rewrite
	// is found as without an index.
	edited := bytes.Clone(leaves[120])
	edited = bytes.Replace(edited, []byte(`"read_file"`), []byte(`"read_fil3"`), 1)
	bad := append(append(append([][]byte{}, leaves[:120]...), edited), leaves[121:]...)
	tampered := writeSegments(t, bad, 64, 100, 200, 257)
	for _, opts := range [][]ProveOption{nil, {WithIndex(x)}} {
		if _, err := ProveInclusion(tampered, c, 250, opts...); !errors.Is(err, ErrRewritten) {
			t.Errorf("ProveInclusion(a segment rewritten, %d options) = %v; want ErrRewritten", len(opts), err)
		}
	}
}

// TestIndexRecoveryAcrossSegments: a recovery record at the head of a
// segment that answers the last line of the one before (same seq, same
// prev) replaces it as the leaf when the set is read whole; the index,
// which gave that leaf from the first segment's entry, sees it and gives
// way to the whole reading.
func TestIndexRecoveryAcrossSegments(t *testing.T) {
	leaves := synthChain(120)
	recovery := bytes.Replace(leaves[63], []byte(`"kind":"intent"`), []byte(`"kind":"recovery"`), 1)
	chain := rechain(append(append(append([][]byte{}, leaves[:63]...), recovery), leaves[64:]...))
	lines := append(append(append([][]byte{}, leaves[:64]...), chain[63]), chain[64:]...)
	set := writeSegments(t, lines, 64)
	c := checkpointAt(chain, 120)
	x := NewIndex(t.TempDir())
	for _, run := range []string{"cold", "warm"} {
		for _, seq := range []uint64{10, 63, 110} {
			want, err := ProveInclusion(set, c, seq)
			if err != nil {
				t.Fatalf("ProveInclusion(seq %d) = %v", seq, err)
			}
			got, err := ProveInclusion(set, c, seq, WithIndex(x))
			if err != nil || !bytes.Equal(marshal(t, got), marshal(t, want)) {
				t.Fatalf("%s: ProveInclusion(seq %d, WithIndex) = %v; want the proof made without it", run, seq, err)
			}
		}
	}
	must := func(first, end uint64) bool { return first <= 110 && 110 < end }
	if _, err := collectOnce(set, c, nil, nil, must, 0, nil, x); !errors.Is(err, errIndexMismatch) {
		t.Errorf("indexed reading past a replaced leaf = %v; want errIndexMismatch", err)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := MarshalIndent(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
