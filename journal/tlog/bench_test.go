package tlog

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/journal/segment"
)

// BenchmarkTree is what the journal's leader adds per record when it
// keeps checkpoints (Tree.AppendLine of a 300-byte line: a leaf hash and,
// on average, one interior hash), beside the floor it already pays per
// record: sha256 of the line for the chain. Root is what a checkpoint
// costs beyond its signature, at a million leaves.
//
//	go test -run XXX -bench Tree ./journal/tlog/
func BenchmarkTree(b *testing.B) {
	line := bytes.Repeat([]byte("x"), 300)
	b.Run("sha256", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			sha256.Sum256(line)
		}
	})
	b.Run("AppendLine", func(b *testing.B) {
		t := NewTree()
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			t.AppendLine(line)
		}
	})
	b.Run("Root", func(b *testing.B) {
		t := NewTree()
		for range 1<<20 - 1 { // 20 set bits: the most hashes a root of about a million leaves takes
			t.AppendLeaf(Hash{1})
		}
		b.ReportAllocs()
		for b.Loop() {
			t.Root()
		}
	})
}

// BenchmarkProve is aegis prove's cost per record: reading a log and
// streaming its leaves through the compact range (ProveInclusion of its
// first record in the tree of all of it), on a chain of 4096 records of
// about 300 bytes, beside ReadSet alone with no tree (the chain's reading
// and hashing).
//
//	go test -run XXX -bench Prove ./journal/tlog/
func BenchmarkProve(b *testing.B) {
	leaves := synthChain(4096)
	data := join(leaves)
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	sets, err := segment.Sets([]string{path}, true)
	if err != nil {
		b.Fatal(err)
	}
	set := sets[0]
	c := checkpointAt(leaves, len(leaves))
	b.Run("ReadSet", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			ch := &Chain{}
			if err := ReadSet(set, ch, nil); err != nil || ch.Leaves() != uint64(len(leaves)) {
				b.Fatalf("ReadSet = %v, %d leaves; want %d", err, ch.Leaves(), len(leaves))
			}
		}
	})
	b.Run("ProveInclusion", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := ProveInclusion(set, c, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// synthChain returns n lines of about 300 bytes that a Chain takes for n
// leaves: records' openings, prev fields chaining them, a closing brace.
func synthChain(n int) [][]byte {
	lines := make([][]byte, n)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"v":2,"seq":%d,"ts":"2026-01-02T03:04:05.000000000Z","sid":"00112233445566778899aabbccddeeff","kind":"intent","prev":"sha256:%064x","call":%d,"tool":"read_file","request_digest":"sha256:%064x"}`, i, 0, i, i)
	}
	return rechain(lines)
}
