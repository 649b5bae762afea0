package relay

import (
	"crypto/sha256"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/cespare/xxhash/v2"
)

// task is a live task: a tools/call whose outcome had status task, until
// its end (package documentation, "Tasks").
type task struct {
	key     string         // taskKey of its id
	id      record.Bounded // its id as its records write it (at most MaxValueBytes)
	intent  uint64         // the seq of the call's intent
	written time.Time      // when the call was released to the child
	v2025   bool           // created by a 2025-11-25 CreateTaskResult
	// waiting: the last status seen was input_required; seen holds the
	// xxhash of the inputRequests keys recorded for it, at most maxSeen
	// (a ring: the oldest is forgotten).
	waiting bool
	seen    []uint64
	prev    *task // the table's order, oldest first
	next    *task
}

// maxSeen bounds the inputRequests keys a live task remembers.
const maxSeen = 32

// taskKey is the form of a task id the table holds: the decoded id, or
// for one longer than maxKey hashedKey and its SHA-256.
func taskKey(id []byte) []byte {
	if len(id) <= maxKey {
		return id
	}
	sum := sha256.Sum256(id)
	return append([]byte{hashedKey}, sum[:]...)
}

// boundedOf is id as a record writes it, holding no more of it than the
// record does.
func boundedOf(id []byte) record.Bounded {
	b := record.Call{Type: record.IDString, Text: id}.Bound(nil)
	text := b.Text
	if !b.Abbreviated() {
		text = append([]byte(nil), id...)
	}
	return record.Bounded{Text: text, Len: b.Len, Sum: b.Sum}
}

// taskTable holds the live tasks, at most max of them. Under Relay.mu.
type taskTable struct {
	byKey      map[string]*task
	head, tail *task
	n, max     int
}

func newTaskTable(max int) *taskTable {
	return &taskTable{byKey: map[string]*task{}, max: max}
}

// find returns the live task with this id, or nil.
func (t *taskTable) find(id []byte) *task {
	if t.n == 0 {
		return nil
	}
	return t.byKey[string(taskKey(id))]
}

// add enters a new task, and returns the oldest, evicted to make room, if
// the table was full.
func (t *taskTable) add(k *task) *task {
	var evicted *task
	if t.n >= t.max && t.head != nil {
		evicted = t.head
		t.remove(evicted)
	}
	t.byKey[k.key] = k
	k.prev = t.tail
	if t.tail != nil {
		t.tail.next = k
	} else {
		t.head = k
	}
	t.tail = k
	t.n++
	return evicted
}

func (t *taskTable) remove(k *task) {
	if k.prev != nil {
		k.prev.next = k.next
	} else {
		t.head = k.next
	}
	if k.next != nil {
		k.next.prev = k.prev
	} else {
		t.tail = k.prev
	}
	k.prev, k.next = nil, nil
	delete(t.byKey, k.key)
	t.n--
}

// newKeys reports whether keys holds a key the task has not recorded yet,
// and remembers them.
func (k *task) newKeys(keys [][]byte) bool {
	fresh := false
	for _, key := range keys {
		h := xxhash.Sum64(key)
		known := false
		for _, s := range k.seen {
			if s == h {
				known = true
				break
			}
		}
		if known {
			continue
		}
		fresh = true
		if len(k.seen) >= maxSeen {
			copy(k.seen, k.seen[1:])
			k.seen = k.seen[:maxSeen-1]
		}
		k.seen = append(k.seen, h)
	}
	return fresh
}
