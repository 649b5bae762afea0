package tlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/aegisrelay/aegis/journal/segment"
)

// Proof types, the "type" of a proof's JSON: part of the format.
const (
	TypeInclusion   = "aegis.inclusion/v1"
	TypeConsistency = "aegis.consistency/v1"
)

// An Inclusion proves that Line is leaf Index of the tree of Size leaves
// whose root is Root (a checkpoint's). Hashes is RFC 6962's audit path,
// from the leaf's sibling up (RFC 9162 2.1.3).
type Inclusion struct {
	Type   string `json:"type"`
	Origin string `json:"origin"`
	Size   uint64 `json:"tree_size"`
	Root   Hash   `json:"root"`
	Index  uint64 `json:"leaf_index"`
	// Line is the record's line without its '\n', exactly: a record is
	// valid UTF-8, which a JSON string holds byte for byte.
	Line   string `json:"line"`
	Hashes []Hash `json:"proof"`
}

// A Consistency proves that the tree of OldSize leaves with root OldRoot
// is the first OldSize leaves of the tree of NewSize leaves with root
// NewRoot (RFC 9162 2.1.4).
type Consistency struct {
	Type    string `json:"type"`
	Origin  string `json:"origin"`
	OldSize uint64 `json:"old_size"`
	OldRoot Hash   `json:"old_root"`
	NewSize uint64 `json:"new_size"`
	NewRoot Hash   `json:"new_root"`
	Hashes  []Hash `json:"proof"`
}

// Check checks p against the checkpoint c (its origin, size and root).
func (p *Inclusion) Check(c Checkpoint) error {
	if p.Type != TypeInclusion {
		return fmt.Errorf("%w: type %q, not %q", ErrProof, p.Type, TypeInclusion)
	}
	if p.Origin != c.Origin || p.Size != c.Size || p.Root != c.Root {
		return fmt.Errorf("%w: the proof is for %s at size %d, the checkpoint is %s at size %d", ErrProof, p.Origin, p.Size, c.Origin, c.Size)
	}
	leaf := LeafHash([]byte(p.Line))
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, p.Index, p.Size, leaf[:], byteSlices(p.Hashes), p.Root[:]); err != nil {
		return fmt.Errorf("%w: leaf %d of %d: %v", ErrProof, p.Index, p.Size, rootError(err))
	}
	return nil
}

// Check checks p against the old and new checkpoints.
func (p *Consistency) Check(old, new Checkpoint) error {
	if p.Type != TypeConsistency {
		return fmt.Errorf("%w: type %q, not %q", ErrProof, p.Type, TypeConsistency)
	}
	if old.Origin != new.Origin {
		return fmt.Errorf("%w: the checkpoints are of two logs, %s and %s", ErrOrigin, old.Origin, new.Origin)
	}
	if p.Origin != old.Origin || p.OldSize != old.Size || p.OldRoot != old.Root || p.NewSize != new.Size || p.NewRoot != new.Root {
		return fmt.Errorf("%w: the proof is for %s from size %d to %d, the checkpoints are %s at sizes %d and %d", ErrProof, p.Origin, p.OldSize, p.NewSize, old.Origin, old.Size, new.Size)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, p.OldSize, p.NewSize, byteSlices(p.Hashes), p.OldRoot[:], p.NewRoot[:]); err != nil {
		return fmt.Errorf("%w: from size %d to %d: %v", ErrProof, p.OldSize, p.NewSize, rootError(err))
	}
	return nil
}

// rootError words the verifier's root mismatch with the roots in base64,
// as checkpoints and proofs write hashes (its own message lists their
// bytes in decimal); any other error is returned as it is.
func rootError(err error) error {
	var m proof.RootMismatchError
	if !errors.As(err, &m) || len(m.CalculatedRoot) != len(Hash{}) || len(m.ExpectedRoot) != len(Hash{}) {
		return err
	}
	return fmt.Errorf("the proof leads to root %s, not the checkpoint's %s", Hash(m.CalculatedRoot), Hash(m.ExpectedRoot))
}

func byteSlices(hs []Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}

// ProveInclusion reads the log set until the tree holds c.Size leaves and
// returns the inclusion proof of the record seq in c's tree, checked
// against c before it is returned. The log's first c.Size leaves must
// hash to c's root (or ErrRewritten), and the log hold that many (or
// ErrCut). Memory: the compact range and the proof's hashes, O(log n).
//
// With WithIndex, the sealed segments that hold none of the leaves asked
// for are not read but hashed, and their leaves taken from the index
// (doc.go, "Index"); if what that gives does not hash to c's root, the
// whole set is read, as without an index.
func ProveInclusion(set *segment.Set, c Checkpoint, seq uint64, opts ...ProveOption) (*Inclusion, error) {
	if seq >= c.Size {
		return nil, fmt.Errorf("%w: seq %d is not in the checkpoint's tree of %d records", ErrNoRecord, seq, c.Size)
	}
	nodes, err := proof.Inclusion(seq, c.Size)
	if err != nil {
		return nil, err
	}
	p := &Inclusion{Type: TypeInclusion, Origin: c.Origin, Size: c.Size, Root: c.Root, Index: seq}
	var line []byte
	hashes, err := collectAt(set, c, nodes.IDs, func(s uint64, l []byte) {
		if s == seq {
			line = bytes.Clone(l)
		}
	}, func(first, end uint64) bool { return first <= seq && seq < end }, 0, nil, proveOptions(opts))
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(line) {
		return nil, fmt.Errorf("%w: the line of seq %d is not UTF-8, as no record is", ErrRewritten, seq)
	}
	p.Line = string(line)
	if p.Hashes, err = rehash(nodes, hashes); err != nil {
		return nil, err
	}
	return p, p.Check(c)
}

// ProveConsistency reads the log set until the tree holds new.Size leaves
// and returns the consistency proof from old to new, checked before it is
// returned. Both checkpoints' roots must be the log's. WithIndex is as
// for ProveInclusion.
func ProveConsistency(set *segment.Set, old, new Checkpoint, opts ...ProveOption) (*Consistency, error) {
	if old.Origin != new.Origin {
		return nil, fmt.Errorf("%w: the checkpoints are of two logs, %s and %s", ErrOrigin, old.Origin, new.Origin)
	}
	if old.Size > new.Size {
		return nil, fmt.Errorf("%w: the old checkpoint's tree (%d) is larger than the new one's (%d)", ErrProof, old.Size, new.Size)
	}
	nodes, err := proof.Consistency(old.Size, new.Size)
	if err != nil {
		return nil, err
	}
	var oldRoot Hash
	hashes, err := collectAt(set, new, nodes.IDs, nil, func(first, end uint64) bool { return first < old.Size && old.Size < end }, old.Size, &oldRoot, proveOptions(opts))
	if err != nil {
		return nil, err
	}
	if old.Size == 0 {
		oldRoot = EmptyRoot
	}
	if oldRoot != old.Root {
		return nil, fmt.Errorf("%w: the log's first %d records do not hash to the old checkpoint's root", ErrRewritten, old.Size)
	}
	p := &Consistency{Type: TypeConsistency, Origin: new.Origin, OldSize: old.Size, OldRoot: old.Root, NewSize: new.Size, NewRoot: new.Root}
	if p.Hashes, err = rehash(nodes, hashes); err != nil {
		return nil, err
	}
	return p, p.Check(old, new)
}

func rehash(nodes proof.Nodes, hashes [][]byte) ([]Hash, error) {
	hs, err := nodes.Rehash(hashes, hashChildren)
	if err != nil {
		return nil, err
	}
	out := make([]Hash, len(hs))
	for i, h := range hs {
		out[i] = Hash(h)
	}
	return out, nil
}

// A ProveOption sets how ProveInclusion and ProveConsistency read a log.
type ProveOption func(*proveOpts)

type proveOpts struct {
	index *Index
}

// WithIndex reads the log's sealed segments through x (doc.go, "Index").
// Default: no index; every record is read.
func WithIndex(x *Index) ProveOption { return func(o *proveOpts) { o.index = x } }

func proveOptions(opts []ProveOption) proveOpts {
	var o proveOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

// collectAt streams the log's leaves through a compact range up to c.Size
// and returns the hashes of the nodes ids, in their order; at size at it
// stores the root in atRoot. The tree at c.Size must have c's origin and
// root. With an index it passes over the sealed segments for which must
// (given the leaves a segment holds, [first, end)) is false, and reads
// the whole set if that does not give c's root.
func collectAt(set *segment.Set, c Checkpoint, ids []compact.NodeID, leaf func(uint64, []byte), must func(first, end uint64) bool, at uint64, atRoot *Hash, o proveOpts) ([][]byte, error) {
	if o.index != nil {
		if hashes, err := collectOnce(set, c, ids, leaf, must, at, atRoot, o.index); err == nil {
			return hashes, nil
		}
		if atRoot != nil {
			*atRoot = Hash{}
		}
	}
	return collectOnce(set, c, ids, leaf, must, at, atRoot, nil)
}

// collectOnce is collectAt, through the index x if not nil.
func collectOnce(set *segment.Set, c Checkpoint, ids []compact.NodeID, leaf func(uint64, []byte), must func(first, end uint64) bool, at uint64, atRoot *Hash, x *Index) ([][]byte, error) {
	want := make(map[compact.NodeID]int, len(ids))
	for i, id := range ids {
		want[id] = i
	}
	hashes := make([][]byte, len(ids))
	visit := func(id compact.NodeID, h []byte) {
		if i, ok := want[id]; ok {
			hashes[i] = bytes.Clone(h)
		}
	}
	t := NewTree()
	checkOrigin := func(origin string) error {
		if origin != c.Origin {
			return fmt.Errorf("%w: the checkpoint is of %s; this log is %s", ErrOrigin, c.Origin, origin)
		}
		return nil
	}
	rootAt := func() {
		if atRoot != nil && t.Size() == at {
			*atRoot = t.Root()
		}
	}
	ch := &Chain{}
	ch.Leaf = func(seq uint64, line []byte) error {
		if seq == 0 {
			if err := checkOrigin(Origin(line)); err != nil {
				return err
			}
		}
		if leaf != nil {
			leaf(seq, line)
		}
		t.appendVisit(ch.LeafHash(), visit)
		rootAt()
		return nil
	}
	var err error
	if x != nil {
		err = x.indexed(set, t, ch, visit, c.Size, must, checkOrigin, rootAt)
	} else {
		err = ReadSet(set, ch, func() bool { return t.Size() >= c.Size })
	}
	if err != nil {
		return nil, err
	}
	if seq, broken := ch.Broken(); broken && t.Size() < c.Size {
		return nil, fmt.Errorf("%w: the record with seq %d does not chain to the one before (its prev is wrong); the checkpoint names %d records", ErrRewritten, seq, c.Size)
	}
	if t.Size() < c.Size {
		return nil, fmt.Errorf("%w: the log holds %d records; the checkpoint names %d", ErrCut, t.Size(), c.Size)
	}
	if t.Root() != c.Root {
		return nil, fmt.Errorf("%w: the log's first %d records do not hash to the checkpoint's root", ErrRewritten, c.Size)
	}
	for i, h := range hashes {
		if h == nil {
			return nil, fmt.Errorf("tlog: node %v of the proof was not computed", ids[i]) // impossible: every node of a proof lies within the tree
		}
	}
	return hashes, nil
}

// MarshalIndent is json.MarshalIndent without HTML escaping, so that a
// record's line reads as it is in the log.
func MarshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
