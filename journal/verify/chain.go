package verify

import "github.com/aegisrelay/aegis/journal/record"

// chain is the hash chain as read so far: the hash of the last line and
// the seq the next record must carry. It is kept by the verifier's
// goroutine, in line order.
type chain struct {
	prev    record.Digest // SHA-256 of the last line read
	next    uint64        // the seq the next record must carry
	started bool          // a line has been read
	// resync: the set is missing records before the next one (reported
	// once, by Set): take its seq and prev as they come. gapEnd: the
	// lowest seq after every missing range so far; sessions and intents
	// from before it may have begun in the missing records.
	resync bool
	gapEnd uint64
}

// skip moves the chain past a line that did not decode, whose SHA-256 is
// hash: the next record is checked against it, so that one changed line
// is one problem, not a cascade.
func (c *chain) skip(hash record.Digest) {
	c.prev, c.started = hash, true
	c.next++
}

// link checks that r, whose line's SHA-256 is hash, continues the chain —
// its seq the next, its prev the hash of the line before, or seq 0 and a
// zero prev for the first record; any record after missing ones (resync)
// — reports what does not to out, and moves the chain on to r.
func (c *chain) link(r *record.Record, hash record.Digest, out *findings) {
	switch {
	case c.resync:
		// Records are missing before this one, and that is reported.
		c.resync = false
	case !c.started:
		if r.Seq != 0 || r.Prev != (record.Digest{}) {
			out.invalid(r, "first record must have seq 0 and a zero prev")
		}
	default:
		if r.Seq != c.next {
			out.invalid(r, "seq %d, want %d (a line removed, added or moved)", r.Seq, c.next)
		}
		if r.Prev != c.prev {
			out.invalid(r, "prev does not match the line before (chain broken)")
		}
	}
	c.started, c.prev, c.next = true, hash, r.Seq+1
}

// missing tells the chain that the records from the next one up to end
// are in no file of the set: the next record is taken as it comes.
func (c *chain) missing(end uint64) {
	c.resync = true
	c.gapEnd = max(c.gapEnd, end)
}
