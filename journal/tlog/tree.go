package tlog

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Hash is a node of the tree: an RFC 6962 SHA-256 hash. In JSON and
// checkpoints it is standard base64 (MarshalText).
type Hash [sha256.Size]byte

// MarshalText encodes h in standard base64 with padding.
func (h Hash) MarshalText() ([]byte, error) {
	return base64.StdEncoding.AppendEncode(nil, h[:]), nil
}

// UnmarshalText decodes standard base64 of exactly 32 bytes.
func (h *Hash) UnmarshalText(b []byte) error {
	d, err := base64.StdEncoding.DecodeString(string(b))
	if err != nil || len(d) != len(h) {
		return fmt.Errorf("not the base64 of a %d-byte hash: %q", len(h), b)
	}
	copy(h[:], d)
	return nil
}

func (h Hash) String() string { return base64.StdEncoding.EncodeToString(h[:]) }

// EmptyRoot is the root of the tree of no leaves: SHA-256 of nothing.
var EmptyRoot = Hash(sha256.Sum256(nil))

// LeafHash returns the leaf hash of a line: SHA-256(0x00 ‖ line), the
// line without its '\n'.
func LeafHash(line []byte) Hash {
	return Hash(rfc6962.DefaultHasher.HashLeaf(line))
}

// hashChildren is RFC 6962's interior node, SHA-256(0x01 ‖ left ‖ right),
// in a new slice.
func hashChildren(left, right []byte) []byte {
	var h Hash
	nodeHash(left, right, &h)
	return h[:]
}

func nodeHash(left, right []byte, dst *Hash) {
	var b [1 + 2*sha256.Size]byte
	b[0] = rfc6962.RFC6962NodeHashPrefix
	copy(b[1:], left)
	copy(b[1+sha256.Size:], right)
	*dst = sha256.Sum256(b[:])
}

// Tree is the Merkle tree of a log's first Size leaves, held as a compact
// range: at most 64 hashes, one per set bit of the size. Appending a leaf
// costs one leaf hash and, amortized, one interior hash; Root costs one
// hash per set bit. A Tree is not safe for concurrent use; Clone makes an
// independent copy.
//
// The range keeps the slices of its hashes; a Tree carves them from
// slabs of slabHashes, so that appending allocates once per slabHashes
// hashes rather than once per hash. A slab stays alive while one of its
// hashes is in the range: at most 64 slabs, whatever the size.
type Tree struct {
	f    *compact.RangeFactory
	r    *compact.Range
	lh   leafHasher
	slab []byte
}

const slabHashes = 64

// NewTree returns the empty tree.
func NewTree() *Tree {
	t := &Tree{}
	t.f = &compact.RangeFactory{Hash: t.hashChildren}
	t.r = t.f.NewEmptyRange(0)
	return t
}

// hash returns a new 32-byte slice from t's slab.
func (t *Tree) hash() []byte {
	if len(t.slab) < sha256.Size {
		t.slab = make([]byte, slabHashes*sha256.Size)
	}
	b := t.slab[:sha256.Size:sha256.Size]
	t.slab = t.slab[sha256.Size:]
	return b
}

func (t *Tree) hashChildren(left, right []byte) []byte {
	b := t.hash()
	nodeHash(left, right, (*Hash)(b))
	return b
}

// AppendLine appends the leaf of line (without its '\n').
func (t *Tree) AppendLine(line []byte) { t.appendVisit(t.leafHash(line), nil) }

// leafHash is LeafHash with t's reused hasher.
func (t *Tree) leafHash(line []byte) Hash {
	var h Hash
	t.lh.sum(line, &h)
	return h
}

// leafHasher computes leaf hashes with one SHA-256 state and one output
// buffer, reused: no allocation per leaf. The zero value is ready.
type leafHasher struct {
	h   hash.Hash
	out []byte
}

var leafPrefix = []byte{rfc6962.RFC6962LeafHashPrefix}

func (l *leafHasher) sum(line []byte, dst *Hash) {
	if l.h == nil {
		l.h, l.out = sha256.New(), make([]byte, 0, sha256.Size)
	}
	l.h.Reset()
	l.h.Write(leafPrefix)
	l.h.Write(line)
	l.out = l.h.Sum(l.out[:0])
	copy(dst[:], l.out)
}

// AppendLeaf appends a leaf hash.
func (t *Tree) AppendLeaf(h Hash) {
	t.appendVisit(h, nil)
}

func (t *Tree) appendVisit(h Hash, visit compact.VisitFn) {
	b := t.hash()
	copy(b, h[:])
	if err := t.r.Append(b, visit); err != nil {
		panic("tlog: compact range append: " + err.Error()) // impossible: the range begins at 0 and only grows here
	}
}

// Size returns the number of leaves.
func (t *Tree) Size() uint64 { return t.r.End() }

// Root returns the root hash (EmptyRoot for no leaves).
func (t *Tree) Root() Hash {
	r, err := t.r.GetRootHash(nil)
	if err != nil {
		panic("tlog: compact range root: " + err.Error()) // impossible: the range begins at 0
	}
	if r == nil {
		return EmptyRoot
	}
	return Hash(r)
}

// Clone returns a copy of t that shares nothing mutable with it.
func (t *Tree) Clone() *Tree {
	hs := t.r.Hashes()
	c := make([][]byte, len(hs))
	for i, h := range hs {
		c[i] = append([]byte(nil), h...)
	}
	n := &Tree{}
	n.f = &compact.RangeFactory{Hash: n.hashChildren}
	r, err := n.f.NewRange(0, t.r.End(), c)
	if err != nil {
		panic("tlog: compact range copy: " + err.Error()) // impossible: the hashes are a valid range's
	}
	n.r = r
	return n
}
