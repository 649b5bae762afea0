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
// with one allocation (the result, which a compact range keeps).
func hashChildren(left, right []byte) []byte {
	var b [1 + 2*sha256.Size]byte
	b[0] = rfc6962.RFC6962NodeHashPrefix
	copy(b[1:], left)
	copy(b[1+sha256.Size:], right)
	h := sha256.Sum256(b[:])
	return h[:]
}

var factory = &compact.RangeFactory{Hash: hashChildren}

// Tree is the Merkle tree of a log's first Size leaves, held as a compact
// range: at most 64 hashes, one per set bit of the size. Appending a leaf
// costs one leaf hash and, amortized, one interior hash; Root costs one
// hash per set bit. A Tree is not safe for concurrent use; Clone makes an
// independent copy.
type Tree struct {
	r  *compact.Range
	lh hash.Hash // AppendLine's, reused
}

// NewTree returns the empty tree.
func NewTree() *Tree { return &Tree{r: factory.NewEmptyRange(0)} }

// AppendLine appends the leaf of line (without its '\n').
func (t *Tree) AppendLine(line []byte) { t.appendVisit(t.leafHash(line), nil) }

// leafHash is LeafHash with t's reused hasher.
func (t *Tree) leafHash(line []byte) Hash {
	if t.lh == nil {
		t.lh = sha256.New()
	}
	var h Hash
	leafHashWith(t.lh, line, &h)
	return h
}

// leafHashWith computes line's leaf hash into dst with h, reused.
func leafHashWith(h hash.Hash, line []byte, dst *Hash) {
	h.Reset()
	h.Write([]byte{rfc6962.RFC6962LeafHashPrefix})
	h.Write(line)
	var sum [sha256.Size]byte
	copy(dst[:], h.Sum(sum[:0]))
}

// AppendLeaf appends a leaf hash.
func (t *Tree) AppendLeaf(h Hash) {
	t.appendVisit(h, nil)
}

func (t *Tree) appendVisit(h Hash, visit compact.VisitFn) {
	b := make([]byte, len(h))
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
	r, err := factory.NewRange(0, t.r.End(), c)
	if err != nil {
		panic("tlog: compact range copy: " + err.Error()) // impossible: the hashes are a valid range's
	}
	return &Tree{r: r}
}
