package journal

import (
	"time"
)

// Linger: how a leader makes one fdatasync cover every call in flight.
//
// A leader syncs what is queued as soon as it leads. With many calls in
// flight that splits them into cohorts: the records that arrive during a
// sync wait for the next one, which starts the moment this one ends and
// carries only them, while the records this sync released come back (the
// child answers the requests it let through, the client sends the next
// call after the responses it let through) during that next sync. Groups
// then alternate, big and small, and each call sits in half the syncs it
// could: the two-cohort effect.
//
// So before a sync the leader waits, for at most two syncs' time, for the
// records it has reason to expect: an outcome for every call of the last
// synced group that is still open (its request has just gone to the
// child), and an intent for every outcome of that group (its response has
// just gone to the client, which sends the next call). It stops as soon as
// each has arrived. Calls synced before that are slow ones (a tool that
// takes seconds), and are not waited for. A lone call expects nothing
// while its own record is queued, so it never waits: lock-step latency
// pays no linger. This is PostgreSQL's commit_delay with the delay ended
// by the records themselves instead of a fixed sleep, and its
// commit_siblings rule (no delay without other calls in flight) built in.
//
// Two syncs, not one: over pre-zeroed space a sync can take less time
// than the goroutines or the client's calls that a group releases take to
// come back when CPUs are few, and a bound of one sync then splits groups
// that two keep whole; lone calls never wait either way. BENCHMARKS.md
// ("Group commit") has the measurements (aegis-bench -only inflight).
//
// On Linux the bound is a timerfd read through the netpoller, not a Go
// timer: the netpoller sleeps in whole milliseconds, so a Go timer
// shorter than that can wake a millisecond late, longer than the wait it
// bounds, while a timerfd that fires is a readiness event that wakes it
// at once. Elsewhere it is a Go timer (linger_other.go).

// maxLinger caps the wait, whatever fdatasync costs.
const maxLinger = time.Millisecond

// Hint is what the appender knows about a record's place in a call: a
// record that a later record answers (an intent, answered by its outcome)
// or a record that answers an earlier one. The leader counts with it the
// records it has reason to expect (above); the journal knows nothing else
// of what a record means. The zero Hint (every record outside a call)
// expects nothing and answers nothing.
type Hint struct {
	// Awaits: a later record answers this one, and it follows a record
	// that Answers (the caller's next call after a response).
	Awaits bool
	// Answers: this record answers the awaiting record at seq Answered.
	Answers  bool
	Answered uint64
}

// calls counts the records the leader can expect, from the appenders'
// hints. Kept under Journal.mu. Records are told apart by seq ranges: the
// queue starts at qFirst; what was written since the last sync starts at
// tFirst; the last synced group started at gFirst.
type calls struct {
	qIntents  int // awaiting records in the queue, not answered yet
	tIntents  int // awaiting records written since the last sync, not answered yet
	answering int // awaiting records of the last synced group, not answered yet
	returning int // answers of the last synced group not yet followed by an awaiting record
	qOutcomes int // answers appended since the last sync was taken
	qFirst    uint64
	tFirst    uint64
	gFirst    uint64
}

// appended counts a record just queued, as its hint says.
func (c *calls) appended(h Hint) {
	switch {
	case h.Awaits:
		c.qIntents++
		if c.returning > 0 {
			c.returning--
		}
	case h.Answers:
		c.qOutcomes++
		switch a := h.Answered; {
		case a >= c.qFirst:
			c.qIntents--
		case a >= c.tFirst:
			c.tIntents--
		case a >= c.gFirst && c.answering > 0:
			c.answering--
		}
	}
}

// expected returns how many records the leader has reason to expect soon
// that are not queued yet: the outcomes of the last synced group's calls
// (their requests have just gone to the child) and the intents of the
// calls after its outcomes (their responses have just gone to the client).
// Calls whose intents were synced before that are slow ones: not waited
// for.
func (c *calls) expected() int {
	return c.answering + c.returning
}

// taken notes that the queue was taken for writing; next is the seq of the
// first record appended after it. It returns the outcomes appended since
// the last synced group, for synced.
func (c *calls) taken(next uint64) (outcomes int) {
	c.tIntents += c.qIntents
	c.qIntents, c.qFirst = 0, next
	return c.qOutcomes
}

// synced notes that everything taken is durable, outcomes of it outcomes:
// their responses go to the client now, and the requests of the intents
// go to the child (if they have not already).
func (c *calls) synced(outcomes int) {
	c.answering, c.gFirst = c.tIntents, c.tFirst
	c.tIntents, c.tFirst = 0, c.qFirst
	c.returning = outcomes
	c.qOutcomes -= outcomes
}

// wake pokes a lingering leader. Called with Journal.mu held.
func (l *lingerer) wake() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// linger is the leader's wait before a sync (see above). Called by Wait,
// before flush, with mu held and flushing set; returns with mu held.
func (j *Journal) linger() {
	if j.lingerer == nil || j.syncCost <= 0 {
		return
	}
	deadline := time.Now().Add(min(2*j.syncCost, maxLinger))
	for j.err == nil && !j.closed {
		want := j.calls.expected()
		if want == 0 || len(j.q.recs)+want < 2 {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			j.lingerTimeouts++
			return
		}
		j.lingers++
		j.lingering = true
		j.mu.Unlock()
		j.lingerer.wait(left)
		j.mu.Lock()
		j.lingering = false
	}
}
