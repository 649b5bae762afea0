package tlog

import (
	"crypto/sha256"

	"github.com/aegisrelay/aegis/journal/record"
)

// Chain picks a log's leaves out of its lines: leaf i is the line of the
// hash chain whose seq is i (doc.go, "Leaves"). Feed it every line of the
// log in order (Line), then call End; it calls its Leaf function with each
// leaf, in order, once the leaf is certain.
//
// A line is a candidate if it begins as a record does
// ({"v":2,"seq":N,…), holds a "prev":"sha256:<hex>" field and ends with
// '}' (record.PeekChain reads its seq and prev); every other line (torn bytes, a hole's NULs, a line too long to be a
// record) is passed over. A candidate whose seq is the next leaf's and
// whose prev is the SHA-256 of the leaf before (64 zeros for seq 0) is
// the next leaf. It stays pending until a line chains to it: a candidate
// with the same seq and the same prev as the pending leaf, after it,
// replaces it (a recovery record answering a torn record that was whole
// but for its '\n', package journal's "Continuing a log"). Other
// candidates (torn lines after a hole, with higher seqs, which a recovery
// answers later) are passed over.
//
// Reading costs two SHA-256 per line (the chain's and the leaf's) and no
// allocation per line in steady state; Chain holds one pending line.
// A Chain is not safe for concurrent use.
type Chain struct {
	// Leaf is called with each leaf: its seq (its index in the tree) and
	// its line, valid only during the call. An error stops the reading and
	// is returned by Line or End.
	Leaf func(seq uint64, line []byte) error

	n       uint64        // leaves given to Leaf
	last    record.Digest // SHA-256 of leaf n-1 (zeros before the first)
	has     bool          // a leaf is pending
	pend    []byte        // its line
	pendSeq uint64
	pendH   record.Digest // SHA-256 of pend
	pendP   record.Digest // its prev
	// pendLeaf is its leaf hash, if leafOK (computed ahead, or by LeafHash).
	pendLeaf Hash
	leafOK   bool
	lh       leafHasher
	// broken is set when a candidate with the next leaf's seq does not
	// chain (its prev is not the last leaf's hash); cleared when the chain
	// goes on. brokenSeq is that seq.
	broken    bool
	brokenSeq uint64

	// open makes the first candidate the next leaf, whatever its seq and
	// prev: a segment read on its own (Index), whose first record chains
	// to one in the file before.
	open bool
	// ghost is set while the last leaf was given by an index entry
	// (skip), not read: a candidate with its seq and prev, which would
	// have replaced it had it been pending, is errIndexMismatch.
	ghost     bool
	ghostSeq  uint64
	ghostPrev record.Digest
}

// Line reads the next line of the log, without its '\n'.
func (c *Chain) Line(line []byte) error { return c.line(line, nil) }

// lineInfo is what line needs of a line, computed ahead (ReadSet's
// workers): whether it is a candidate, its seq and prev, its SHA-256 and
// its leaf hash.
type lineInfo struct {
	ok   bool
	seq  uint64
	prev record.Digest
	h    record.Digest
	leaf Hash
}

func (li *lineInfo) compute(line []byte, lh *leafHasher) {
	li.seq, li.prev, li.ok = record.PeekChain(line)
	if li.ok {
		li.h = sha256.Sum256(line)
		lh.sum(line, &li.leaf)
	}
}

// line is Line with in, if not nil, computed ahead.
func (c *Chain) line(line []byte, in *lineInfo) error {
	var seq uint64
	var prev record.Digest
	var ok bool
	if in != nil {
		seq, prev, ok = in.seq, in.prev, in.ok
	} else {
		seq, prev, ok = record.PeekChain(line)
	}
	if !ok {
		return nil
	}
	if c.open {
		c.open, c.n, c.last = false, seq, prev
	}
	if c.ghost && !c.has && seq == c.ghostSeq && prev == c.ghostPrev {
		return errIndexMismatch
	}
	if c.has && seq == c.pendSeq && prev == c.pendP {
		c.hold(seq, prev, line, in)
		return nil
	}
	next, want := c.n, c.last
	if c.has {
		next, want = c.pendSeq+1, c.pendH
	}
	if seq != next {
		return nil
	}
	if prev != want {
		if !c.broken {
			c.broken, c.brokenSeq = true, seq
		}
		return nil
	}
	if err := c.commit(); err != nil {
		return err
	}
	c.hold(seq, prev, line, in)
	return nil
}

func (c *Chain) hold(seq uint64, prev record.Digest, line []byte, in *lineInfo) {
	c.has, c.pendSeq, c.pendP = true, seq, prev
	c.pend = append(c.pend[:0], line...)
	if in != nil {
		c.pendH, c.pendLeaf, c.leafOK = in.h, in.leaf, true
	} else {
		c.pendH, c.leafOK = sha256.Sum256(line), false
	}
	c.broken, c.ghost = false, false
}

// LeafHash returns the leaf hash of the leaf being given to Leaf; valid
// only during the call.
func (c *Chain) LeafHash() Hash {
	if !c.leafOK {
		c.lh.sum(c.pend, &c.pendLeaf)
		c.leafOK = true
	}
	return c.pendLeaf
}

func (c *Chain) commit() error {
	if !c.has {
		return nil
	}
	c.has = false
	c.n++
	c.last = c.pendH
	if c.Leaf != nil {
		return c.Leaf(c.pendSeq, c.pend)
	}
	return nil
}

// skip passes over the leaves of a segment that an index entry gives
// (the chain must stand where e begins: Index), as if they had been read.
func (c *Chain) skip(e *indexEntry) {
	c.n, c.last = e.First+e.Leaves, e.Out
	c.ghost, c.ghostSeq, c.ghostPrev = true, e.First+e.Leaves-1, e.LastPrev
	c.broken = false
}

// at reports whether the chain stands where e begins: its last leaf
// (pending or given) is e.First−1 and e's first record chains to it.
func (c *Chain) at(e *indexEntry) bool {
	if c.has {
		return c.pendSeq+1 == e.First && c.pendH == e.In
	}
	return c.n == e.First && c.last == e.In
}

// End gives the pending leaf, if any, to Leaf: the log has no more lines.
func (c *Chain) End() error { return c.commit() }

// Leaves returns the number of leaves given to Leaf so far.
func (c *Chain) Leaves() uint64 { return c.n }

// Broken reports the seq of a record that holds the next leaf's seq but
// does not chain to the last leaf, if no leaf followed it: a record
// rewritten (or removed) without the chain after it rewritten too.
func (c *Chain) Broken() (seq uint64, ok bool) { return c.brokenSeq, c.broken }
