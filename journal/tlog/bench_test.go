package tlog

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	xtlog "golang.org/x/mod/sumdb/tlog"

	"github.com/aegisrelay/aegis/internal/vfs"
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
		n := uint64(0)
		for b.Loop() {
			t.AppendLine(line)
			n++
		}
		// The tree timed is the tree of the lines appended.
		if t.Size() != n {
			b.Fatalf("tree of %d leaves after %d lines", t.Size(), n)
		}
		if got, want := t.Root(), sameLeavesRoot(xtlog.RecordHash(line), n); got != want {
			b.Fatalf("root of %d lines %v; want x/mod tlog's %v", n, got, want)
		}
	})
	b.Run("Root", func(b *testing.B) {
		const n = 1<<20 - 1 // 20 set bits: the most hashes a root of about a million leaves takes
		t := NewTree()
		for range n {
			t.AppendLeaf(Hash{1})
		}
		b.ReportAllocs()
		var root Hash
		for b.Loop() {
			root = t.Root()
		}
		if want := sameLeavesRoot(xtlog.Hash{1}, n); root != want {
			b.Fatalf("root of %d leaves %v; want x/mod tlog's %v", n, root, want)
		}
	})
}

// sameLeavesRoot is the RFC 6962 root of n leaves that all have the hash
// leaf, with x/mod tlog's node hash: the left subtree is the largest
// power of two below n, and the perfect subtrees of equal leaves are
// hashed once per height.
func sameLeavesRoot(leaf xtlog.Hash, n uint64) Hash {
	perfect := []xtlog.Hash{leaf} // perfect[k]: the root of 2^k leaves
	for len(perfect) < 64 {
		p := perfect[len(perfect)-1]
		perfect = append(perfect, xtlog.NodeHash(p, p))
	}
	var root func(n uint64) xtlog.Hash
	root = func(n uint64) xtlog.Hash {
		if n&(n-1) == 0 {
			return perfect[bits.TrailingZeros64(n)]
		}
		k := uint64(1) << (bits.Len64(n-1) - 1)
		return xtlog.NodeHash(perfect[bits.TrailingZeros64(k)], root(n-k))
	}
	return Hash(root(n))
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

// memProof returns the inclusion proof of leaf idx in the tree of the
// leaves given by leaf(0..n-1), made as ProveInclusion makes it (the
// proof's nodes kept as a compact range passes them) but from memory.
func memProof(n, idx uint64, leaf func(i uint64) []byte) (*Inclusion, Checkpoint) {
	nodes, err := proof.Inclusion(idx, n)
	if err != nil {
		panic(err)
	}
	want := map[compact.NodeID]int{}
	for i, id := range nodes.IDs {
		want[id] = i
	}
	hashes := make([][]byte, len(nodes.IDs))
	t := NewTree()
	for i := range n {
		t.appendVisit(LeafHash(leaf(i)), func(id compact.NodeID, h []byte) {
			if j, ok := want[id]; ok {
				hashes[j] = bytes.Clone(h)
			}
		})
	}
	hs, err := rehash(nodes, hashes)
	if err != nil {
		panic(err)
	}
	c := Checkpoint{Origin: Origin(leaf(0)), Size: n, Root: t.Root()}
	return &Inclusion{Type: TypeInclusion, Origin: c.Origin, Size: n, Root: c.Root, Index: idx, Line: string(leaf(idx)), Hashes: hs}, c
}

func smallLeaf(i uint64) []byte { return fmt.Appendf(nil, `{"v":2,"seq":%d}`, i) }

// ceilLog2 is ⌈log2 n⌉ for n ≥ 1.
func ceilLog2(n uint64) int { return bits.Len64(n - 1) }

// TestInclusionProofSize: an inclusion proof in a tree of n leaves holds
// at most ⌈log2 n⌉ hashes (32·⌈log2 n⌉ bytes) and checks, for every leaf
// of every tree up to 40 leaves and for the first leaf of trees about a
// power of two up to 2^14 (BenchmarkInclusionCheck: 2^20).
func TestInclusionProofSize(t *testing.T) {
	check := func(n, idx uint64) {
		p, c := memProof(n, idx, smallLeaf)
		if err := p.Check(c); err != nil {
			t.Fatalf("proof of leaf %d of %d: Check = %v", idx, n, err)
		}
		if got, bound := 32*len(p.Hashes), 32*ceilLog2(n); got > bound {
			t.Fatalf("proof of leaf %d of %d = %d bytes; want at most 32·⌈log2 n⌉ = %d", idx, n, got, bound)
		}
	}
	for n := uint64(1); n <= 40; n++ {
		for idx := range n {
			check(n, idx)
		}
	}
	for _, n := range []uint64{1<<10 - 1, 1 << 10, 1<<10 + 1, 1<<14 + 1} {
		check(n, 0) // the longest path: ⌈log2 n⌉ hashes for n = 2^k+1
	}
}

// BenchmarkInclusionCheck is what a third party pays to check one record
// against a checkpoint (Inclusion.Check: the leaf hash and one hash per
// level), at a thousand and a million leaves, beside sha256 of the line
// alone; proof-B is the proof's hashes in bytes, bound-B 32·⌈log2 n⌉.
//
//	go test -run XXX -bench InclusionCheck ./journal/tlog/
func BenchmarkInclusionCheck(b *testing.B) {
	line := bytes.Repeat([]byte("x"), 300)
	b.Run("sha256", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sha256.Sum256(line)
		}
	})
	for _, n := range []uint64{1000, 1_000_000} {
		leaf := func(i uint64) []byte {
			if i == n/2 {
				return line
			}
			return smallLeaf(i)
		}
		p, c := memProof(n, n/2, leaf)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Check(c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(32*len(p.Hashes)), "proof-B")
			b.ReportMetric(float64(32*ceilLog2(n)), "bound-B")
		})
	}
}

// BenchmarkProveIndexed is aegis prove's cost on a rotated log of 64Ki
// records of about 300 bytes in 16 sealed segments (the last compressed)
// and a live file: ProveInclusion of a record in the middle reading every
// record (full), and through a warm index (indexed: every segment's bytes
// hashed, one segment and the live file read), beside sha256 of the set's
// files, the least the indexed reading does.
//
//	go test -run XXX -bench ProveIndexed ./journal/tlog/
func BenchmarkProveIndexed(b *testing.B) {
	const n, per = 1 << 16, 1 << 12
	leaves := synthChain(n)
	var cuts []int
	for i := per; i < n; i += per {
		cuts = append(cuts, i)
	}
	set := writeSegments(b, leaves, cuts...)
	c := checkpointAt(leaves, n)
	x := NewIndex(b.TempDir())
	if _, err := ProveInclusion(set, c, n/2, WithIndex(x)); err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, p := range set.Paths {
		st, _ := os.Stat(p)
		size += st.Size()
	}
	b.Run("sha256-files", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range set.Paths {
				if _, err := fileSum(vfs.OS, p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, tc := range []struct {
		name string
		opts []ProveOption
	}{{"full", nil}, {"indexed", []ProveOption{WithIndex(x)}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ProveInclusion(set, c, n/2, tc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
