package relay

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"slices"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/cespare/xxhash/v2"
)

// call is a tools/call waiting for its response.
type call struct {
	key     []byte      // frame.ID.Key: ids match by value
	id      record.Call // the id as its intent recorded it; the outcome repeats it
	seq     uint64      // the intent's seq
	written time.Time   // when the intent was as durable as the level asks
	order   uint64      // insertion order, for eviction of the oldest

	// op is what the request was: frame.OpToolsCall for a tools/call
	// (it has an intent), or a request the relay follows without an
	// intent (initialize; tasks/get, tasks/result, tasks/cancel naming a
	// live task, whose id is task).
	op    frame.Op
	round int      // a tools/call's round number (rounds.go)
	match [32]byte // a tools/call's match digest; zero: none
	task  []byte   // a task request's task id key (taskKey)
	// cancelled: in the table of late calls, a call the client cancelled
	// (its late answer is relayed), not one that timed out.
	cancelled bool

	// With Config.CallTimeout only (timeout.go).
	answerID []byte // the id token a timeout answer carries; empty: never timed out
	queued   bool   // on its table's deadline queue
	inTable  bool   // in a table, not answered, evicted or drained
	qprev    *call  // the deadline queue's links
	qnext    *call
}

// callTable is the table of calls in flight, keyed by id value. Duplicate ids
// in flight are answered in the order they were sent. Not goroutine-safe:
// Relay guards it with its mutex.
//
// Its memory is bounded in bytes whatever the ids: a key longer than
// maxKey is held as its SHA-256 (keyOf), and an id's text as the bounded
// form its records encode (record.Call.Bound), so a call holds at most a
// few hundred bytes and the table at most max of them.
type callTable struct {
	byKey map[uint64][]*call
	n     int
	max   int
	next  uint64
	free  []*call
	kbuf  []byte // keyOf's result for a long key
	// lists are emptied lists of byKey, kept for reuse (at most as many
	// as the calls in the table, plus one).
	lists [][]*call

	// The deadline queue (timeout.go): the calls released to the child
	// that a timeout can answer, in the order released, which with one
	// timeout for every call is the order of their deadlines.
	qhead, qtail *call
}

// maxKey is the longest id key held as it is; a longer one is held as
// hashedKey followed by its SHA-256. Keys (frame.ID.Key) start with 'N',
// 's' or 'n', so the two forms never meet.
const (
	maxKey    = 64
	hashedKey = 'H'
)

// keyOf returns the form of key the table holds: key itself, or for a
// long one its hashed form in p.kbuf (valid until the next keyOf).
func (p *callTable) keyOf(key []byte) []byte {
	if len(key) <= maxKey {
		return key
	}
	sum := sha256.Sum256(key)
	p.kbuf = append(append(p.kbuf[:0], hashedKey), sum[:]...)
	return p.kbuf
}

func newCallTable(max int) *callTable {
	return &callTable{byKey: map[uint64][]*call{}, max: max}
}

// add inserts a call. When the table is full it first evicts the oldest
// call and returns it, so that the caller records it rather than drop it.
func (p *callTable) add(key []byte, id record.Call, seq uint64) (*call, *call) {
	var evicted *call
	if p.n >= p.max {
		evicted = p.removeOldest()
	}
	c := p.get()
	key = p.keyOf(key)
	c.key = append(c.key[:0], key...)
	// Bound keeps a short id aliased to the frame: copy it.
	b := id.Bound(c.id.Text)
	if !b.Abbreviated() {
		b.Text = append(c.id.Text[:0], b.Text...)
	}
	c.id = b
	c.seq, c.written, c.order = seq, time.Time{}, p.next
	c.answerID, c.inTable = c.answerID[:0], true
	c.op, c.round, c.match, c.task, c.cancelled = frame.OpToolsCall, 1, [32]byte{}, c.task[:0], false
	p.next++
	h := xxhash.Sum64(key)
	list, ok := p.byKey[h]
	if !ok && len(p.lists) > 0 {
		list = p.lists[len(p.lists)-1]
		p.lists = p.lists[:len(p.lists)-1]
	}
	p.byKey[h] = append(list, c)
	p.n++
	return c, evicted
}

// remove takes c, found by find, out of the table.
func (p *callTable) remove(c *call) {
	h := xxhash.Sum64(c.key)
	list := p.byKey[h]
	for i, d := range list {
		if d == c {
			p.unlink(h, list, i)
			return
		}
	}
}

// find returns the oldest call with this key, or nil, and leaves it in
// the table.
func (p *callTable) find(key []byte) *call {
	key = p.keyOf(key)
	for _, c := range p.byKey[xxhash.Sum64(key)] {
		if bytes.Equal(c.key, key) {
			return c
		}
	}
	return nil
}

func (p *callTable) unlink(h uint64, list []*call, i int) {
	p.dequeue(list[i])
	list[i].inTable = false
	copy(list[i:], list[i+1:])
	list[len(list)-1] = nil
	list = list[:len(list)-1]
	if len(list) == 0 {
		delete(p.byKey, h)
		if len(p.lists) < p.n+1 {
			p.lists = append(p.lists, list) // for the next id: steady state allocates nothing
		}
	} else {
		p.byKey[h] = list
	}
	p.n--
}

func (p *callTable) removeOldest() *call {
	var oh uint64
	oi := -1
	var oldest *call
	for h, list := range p.byKey {
		for i, c := range list {
			if oldest == nil || c.order < oldest.order {
				oldest, oh, oi = c, h, i
			}
		}
	}
	if oldest != nil {
		p.unlink(oh, p.byKey[oh], oi)
	}
	return oldest
}

// drain removes every call, oldest first.
func (p *callTable) drain() []*call {
	out := make([]*call, 0, p.n)
	for _, list := range p.byKey {
		out = append(out, list...)
	}
	slices.SortFunc(out, func(a, b *call) int { return cmp.Compare(a.order, b.order) })
	for _, c := range out {
		c.queued, c.inTable, c.qprev, c.qnext = false, false, nil, nil
	}
	clear(p.byKey)
	p.n, p.qhead, p.qtail = 0, nil, nil
	return out
}

// enqueue puts c, a call in the table just released to the child, at the
// tail of the deadline queue.
func (p *callTable) enqueue(c *call) {
	if c.queued || !c.inTable {
		return
	}
	c.queued, c.qprev, c.qnext = true, p.qtail, nil
	if p.qtail != nil {
		p.qtail.qnext = c
	} else {
		p.qhead = c
	}
	p.qtail = c
}

// dequeue takes c off the deadline queue, if it is on it.
func (p *callTable) dequeue(c *call) {
	if !c.queued {
		return
	}
	if c.qprev != nil {
		c.qprev.qnext = c.qnext
	} else {
		p.qhead = c.qnext
	}
	if c.qnext != nil {
		c.qnext.qprev = c.qprev
	} else {
		p.qtail = c.qprev
	}
	c.queued, c.qprev, c.qnext = false, nil, nil
}

// release returns a call's memory for reuse.
func (p *callTable) release(c *call) { p.free = append(p.free, c) }

func (p *callTable) get() *call {
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c
	}
	return &call{}
}
