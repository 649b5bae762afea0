package relay

import (
	"errors"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// Call timeouts (Config.CallTimeout). A call that the child has not
// answered CallTimeout after its request was released to it is answered
// by the relay: its outcome (record.StatusTimeout) is appended, and once
// it is as durable as an answer's outcome must be (journal.BeforeResponse)
// the client gets a refusal frame with the call's own id and the code
// CodeCallTimeout, written under wmu like every other write to the client.
// The call leaves the table of calls in flight for the table of late
// calls: the child's answer to it, when it comes, is recorded as an
// anomaly (ReasonLateAnswer) and dropped, since the client already has an
// answer for that id.
//
// The cost is one timer for the whole relay, not one per call. Every call
// waits the same CallTimeout, so the calls expire in the order they were
// released: they queue in that order (callTable's deadline queue, a list
// threaded through the calls, which an answer, an eviction or End unlinks
// in constant time), and the timer is armed for the head of the queue
// only. Arming happens when a call is released and the timer is not
// armed; when it fires, expire answers every call that is due and arms it
// again for the next. An answered call leaves its deadline armed: the
// timer then fires early for the call behind it, and only re-arms. So a
// call in lock step costs two list operations, and the timer fires about
// once per CallTimeout while calls flow. Without a CallTimeout, nothing of
// this runs.
//
// Which calls time out: a tools/call request whose line every reader
// reads alike, not malformed, whose id token as sent is at most
// maxAnswerID bytes long: its answer must name it the same way for every
// client, and the relay keeps the token to write it. Other calls stay in
// flight until they are answered or the session ends, as without a
// CallTimeout.
type timeouts struct {
	d      time.Duration
	reason string     // the reason of every timeout outcome
	fault  chan error // a journal failure met by expire (Relay.Fault); nil without a CallTimeout

	// Under Relay.mu.
	timer *time.Timer // runs expire; made on first use
	armed bool        // timer will run expire

	mu  sync.Mutex // serialises expire: its records, its wait and its write, one expiry after another
	buf []byte     // under mu: the timeout frames of one expiry
}

// maxAnswerID is the longest id token, as sent, that a timeout answers
// with: longer ones are kept out of the relay's memory (a call's bound,
// Config.MaxPending), and their calls are not timed out.
const maxAnswerID = record.MaxValueBytes

// CodeCallTimeout is data.aegis.code of the answer the relay gives a call
// that the child did not answer within Config.CallTimeout. Part of the wire
// format, like the refusal codes.
const CodeCallTimeout = "CALL_TIMEOUT"

// ReasonLateAnswer is the reason of the anomaly recorded for a line from
// the child that answers a call that timed out. Such a line is not
// relayed, unless it also answers a call still in flight (a batch), whose
// answer must reach the client: forwarded says which.
const ReasonLateAnswer = "response: answers a call that timed out (the client has had aegis's answer)"

func (tm *timeouts) init(d time.Duration) {
	tm.d = d
	tm.reason = "no answer within " + d.String()
	tm.fault = make(chan error, 1)
}

// timeable stores in c, just added to the table of calls in flight for m,
// the id token a timeout answers with, if m is a call that times out
// (timeouts above). Called with mu held.
func (r *Relay) timeable(c *call, m *frame.Message, f *frame.Frame) {
	if f.Anomaly != "" || m.Malformed != "" || m.Type != frame.Request {
		return
	}
	if id := answerID(m); id != nil && len(id) <= maxAnswerID {
		c.answerID = append(c.answerID[:0], id...)
	}
}

// startTimers puts the calls of a run just released to the child (at now)
// that can time out on the deadline queue, and arms the timer if it is
// not. Called with mu held.
func (r *Relay) startTimers(calls []*call, now time.Time) {
	if r.ended {
		return
	}
	for _, c := range calls {
		if len(c.answerID) > 0 {
			r.inFlight.enqueue(c)
		}
	}
	if h := r.inFlight.qhead; h != nil && !r.tm.armed {
		r.arm(h.written.Add(r.tm.d).Sub(now))
	}
}

// arm has the timer run expire after d. Called with mu held.
func (r *Relay) arm(d time.Duration) {
	if r.tm.timer == nil {
		r.tm.timer = time.AfterFunc(d, r.expire)
	} else {
		r.tm.timer.Reset(d)
	}
	r.tm.armed = true
}

// stop disarms the timer for good: End has run. Called with mu held.
func (tm *timeouts) stop() {
	if tm.timer != nil {
		tm.timer.Stop()
	}
	tm.armed = false
}

// expire answers every call on the deadline queue that is due: it appends
// their timeout outcomes and moves them to the table of late calls, waits
// until the outcomes pass journal.BeforeResponse, and then writes their
// timeout frames to the client in one write. It arms the timer for the
// first call not yet due. The timer's goroutine runs it.
func (r *Relay) expire() {
	r.tm.mu.Lock()
	defer r.tm.mu.Unlock()
	r.mu.Lock()
	r.tm.armed = false
	if err := r.live(); err != nil {
		r.mu.Unlock()
		r.tm.failed(err)
		return
	}
	now := r.cfg.Clock()
	buf := r.tm.buf[:0]
	var last uint64
	n := 0
	for c := r.inFlight.qhead; c != nil; c = r.inFlight.qhead {
		if due := c.written.Add(r.tm.d); now.Before(due) {
			r.arm(due.Sub(now))
			break
		}
		r.inFlight.remove(c)
		if _, evicted := r.late.add(c.key, record.Call{}, c.seq); evicted != nil {
			// Its late answer, if it ever comes, is relayed as one that
			// answers nothing: the bound on memory comes first.
			r.late.release(evicted)
		}
		buf = append(AppendRefusal(buf, c.answerID, CodeCallTimeout, "", 0), '\n')
		seq, err := r.appendOutcome(c, nil, record.StatusTimeout, r.tm.reason, now)
		if err != nil {
			r.mu.Unlock()
			r.tm.failed(err)
			return
		}
		last, n = seq, n+1
	}
	r.mu.Unlock()
	r.tm.buf = buf
	if n == 0 {
		return
	}
	if err := r.j.Wait(last, journal.BeforeResponse); err != nil {
		r.tm.failed(err)
		return
	}
	r.writeClient(buf)
}

// failed passes a journal failure that expire met on to Relay.Fault, whose
// reader then ends the session as when a pump fails; the end of the
// session (ErrEnded) is no failure.
func (tm *timeouts) failed(err error) {
	if errors.Is(err, ErrEnded) {
		return
	}
	select {
	case tm.fault <- err:
	default:
	}
}

// Fault returns the channel on which a journal failure that the timeout
// timer meets is delivered, at most once: no pump returns it while both
// are blocked in reads, so whoever runs the pumps must end the session on
// it as on a pump's error (package documentation, "Failing closed").
// Without a CallTimeout it is nil, and a receive from it blocks forever.
func (r *Relay) Fault() <-chan error { return r.tm.fault }
