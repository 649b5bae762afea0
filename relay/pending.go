package relay

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/aegisrelay/aegis/journal"
	"github.com/cespare/xxhash/v2"
)

// call is a tools/call waiting for its response.
type call struct {
	key     []byte       // frame.ID.Key: ids match by value
	id      journal.Call // the id as its intent recorded it; the outcome repeats it
	seq     uint64       // the intent's seq
	written time.Time    // when the intent was as durable as the level asks
	order   uint64       // insertion order, for eviction of the oldest
}

// pending is the table of calls in flight, keyed by id value. Duplicate ids
// in flight are answered in the order they were sent. Not goroutine-safe:
// Relay guards it with its mutex.
type pending struct {
	byKey map[uint64][]*call
	n     int
	max   int
	next  uint64
	free  []*call
}

func newPending(max int) *pending {
	return &pending{byKey: map[uint64][]*call{}, max: max}
}

// add inserts a call. When the table is full it first evicts the oldest
// call and returns it, so that the caller records it rather than drop it.
func (p *pending) add(key []byte, id journal.Call, seq uint64) (*call, *call) {
	var evicted *call
	if p.n >= p.max {
		evicted = p.removeOldest()
	}
	c := p.get()
	c.key = append(c.key[:0], key...)
	c.id = journal.Call{Type: id.Type, Text: append(c.id.Text[:0], id.Text...)}
	c.seq, c.written, c.order = seq, time.Time{}, p.next
	p.next++
	h := xxhash.Sum64(key)
	p.byKey[h] = append(p.byKey[h], c)
	p.n++
	return c, evicted
}

// take removes and returns the oldest call with this key, or nil.
func (p *pending) take(key []byte) *call {
	h := xxhash.Sum64(key)
	list := p.byKey[h]
	for i, c := range list {
		if bytes.Equal(c.key, key) {
			p.unlink(h, list, i)
			return c
		}
	}
	return nil
}

func (p *pending) unlink(h uint64, list []*call, i int) {
	copy(list[i:], list[i+1:])
	list[len(list)-1] = nil
	list = list[:len(list)-1]
	if len(list) == 0 {
		delete(p.byKey, h)
	} else {
		p.byKey[h] = list
	}
	p.n--
}

func (p *pending) removeOldest() *call {
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
func (p *pending) drain() []*call {
	out := make([]*call, 0, p.n)
	for _, list := range p.byKey {
		out = append(out, list...)
	}
	slices.SortFunc(out, func(a, b *call) int { return cmp.Compare(a.order, b.order) })
	clear(p.byKey)
	p.n = 0
	return out
}

// release returns a call's memory for reuse.
func (p *pending) release(c *call) { p.free = append(p.free, c) }

func (p *pending) get() *call {
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c
	}
	return &call{}
}
