package journal

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
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
// So before a sync the leader waits, for at most half a sync's time, for
// the records it has reason to expect: an outcome for every call whose
// intent has been written and which is still open (its request went to the
// child), and an intent for every outcome of the last synced group (its
// response went to the client, which sends the next call). It stops as
// soon as each has arrived. A lone call expects nothing while its own
// record is queued, so it never waits; that is what keeps the lock-step
// latency at the floor. This is PostgreSQL's commit_delay with the delay
// ended by the records themselves instead of a fixed sleep, and its
// commit_siblings rule (no delay without other calls in flight) built in.
//
// Go's timers wake no sooner than about a millisecond here (the netpoller
// sleeps in whole milliseconds), so the bound is a timerfd read through
// the netpoller, which wakes within tens of microseconds.

// maxLinger caps the wait, whatever fdatasync costs.
const maxLinger = time.Millisecond

// calls counts the records of tools/call traffic the leader can expect.
// Kept under Journal.mu.
type calls struct {
	open      int    // intents appended without an outcome yet
	queued    int    // of those, intents still in the queue (not yet written)
	returning int    // outcomes of the last synced group not yet followed by an intent
	qOutcomes int    // outcomes in the queue
	qFirst    uint64 // seq of the first queued record
}

// appended counts a record of kind k, with seq, just queued; intent is an
// outcome's intent seq.
func (c *calls) appended(k Kind, intent uint64) {
	switch k {
	case KindIntent:
		c.open++
		c.queued++
		if c.returning > 0 {
			c.returning--
		}
	case KindOutcome:
		c.open--
		c.qOutcomes++
		if intent >= c.qFirst {
			c.queued-- // its intent is in the queue too: nothing to wait for
		}
	}
}

// expected returns how many records the leader has reason to expect that
// are not queued yet.
func (c *calls) expected() int {
	return max(c.open-c.queued, 0) + c.returning
}

// taken notes that the queue was taken for writing; next is the seq of the
// first record appended after it. It returns the outcomes taken since the
// last synced group, for synced.
func (c *calls) taken(next uint64) (outcomes int) {
	c.queued, c.qFirst = 0, next
	return c.qOutcomes
}

// synced notes that a group holding outcomes outcomes is durable: their
// responses go to the client now, and their callers may send the next
// calls.
func (c *calls) synced(outcomes int) {
	c.returning = outcomes
	c.qOutcomes -= outcomes
}

// lingerer is the leader's short timer: a timerfd read by a goroutine
// through the netpoller.
type lingerer struct {
	fd    int
	f     *os.File
	fired chan struct{} // one expiry (buffered 1; a stale one is harmless)
	poke  chan struct{} // an Append while the leader lingers (buffered 1)
}

// newLingerer returns a lingerer, or nil if the kernel has no timerfd (the
// leader then never lingers).
func newLingerer() *lingerer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	l := &lingerer{
		fd:    fd,
		f:     os.NewFile(uintptr(fd), "timerfd"),
		fired: make(chan struct{}, 1),
		poke:  make(chan struct{}, 1),
	}
	go l.run()
	return l
}

func (l *lingerer) run() {
	var buf [8]byte
	for {
		if _, err := l.f.Read(buf[:]); err != nil {
			return // closed
		}
		select {
		case l.fired <- struct{}{}:
		default:
		}
	}
}

// wait returns after d, or sooner on a poke. Only the leader calls it.
func (l *lingerer) wait(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(d.Nanoseconds(), 1))}
	if unix.TimerfdSettime(l.fd, 0, &spec, nil) != nil {
		return
	}
	select {
	case <-l.poke:
	case <-l.fired:
	}
}

// wake pokes a lingering leader. Called with Journal.mu held.
func (l *lingerer) wake() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

func (l *lingerer) close() { l.f.Close() }

// linger is the leader's wait before a sync (see above). Called by flush
// with mu held and flushing set; returns with mu held.
func (j *Journal) linger() {
	if j.lingerer == nil || j.syncCost <= 0 {
		return
	}
	deadline := time.Now().Add(min(j.syncCost, maxLinger))
	for j.err == nil && !j.closed {
		want := j.calls.expected()
		if want == 0 || len(j.q.recs)+want < 2 {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
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
