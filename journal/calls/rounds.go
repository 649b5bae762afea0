package calls

import (
	"fmt"
	"slices"

	"github.com/aegisrelay/aegis/journal/record"
)

// maxKept bounds the rounds a call keeps, and the events a task keeps:
// a log that retries one call, or polls one task, without end costs a
// count past these, never unbounded memory.
const maxKept = 256

// Round is one round of a call: an intent and, once read, its outcome.
type Round struct {
	Intent     uint64 // the seq of the round's intent
	Outcome    uint64 // the seq of its outcome, when HasOutcome
	HasOutcome bool
	Status     string // the outcome's status; "" until it is read
	// LatencyNS is the outcome's recorded latency_ns (the round's own),
	// when HasLatency.
	LatencyNS  int64
	HasLatency bool
	// N and By are the intent's round.n and round.by; 1 and "" for the
	// first round.
	N  int
	By string
}

// Task is the task a call became: the outcome of status task that made
// it, and the task records naming the intent of that outcome's round.
type Task struct {
	ID      string // the task id as recorded (its prefix and "…" if abbreviated)
	Intent  uint64 // the seq of the intent whose outcome made the task
	Outcome uint64 // the seq of that outcome
	// Events are the task records, in log order (at most maxKept; the
	// rest are counted in EventsMore). The end, if read, is the last.
	Events     []TaskEvent
	EventsMore int
	Ended      bool
	End        TaskEvent // when Ended

	id record.Bounded // as recorded, to match the task records' task_id
}

// TaskEvent is one task record.
type TaskEvent struct {
	Seq    uint64
	Event  string // record.TaskEnd, …
	Via    string
	Status string // an end's execution status
}

// thread is what a call of several rounds or a task holds beyond a
// Call: its canonical Call (the one Count returns), its rounds and its
// task.
type thread[C any] struct {
	call       Call[C]
	rounds     []Round
	roundsMore int
	task       *Task
	waiting    bool // its input_required outcome waits for a retry (Session.awaiting)
}

// Rounds returns the call's rounds, the first included, or nil for a call
// of one round (its intent, Intent, and its outcome). At most maxKept are
// kept; RoundsMore counts the rest. The slice is the Book's, valid while
// it is, not to be changed.
func (c *Call[C]) Rounds() []Round {
	if c.t == nil || len(c.t.rounds) < 2 {
		return nil
	}
	return c.t.rounds
}

// RoundsMore counts the rounds past those Rounds returns.
func (c *Call[C]) RoundsMore() int {
	if c.t == nil {
		return 0
	}
	return c.t.roundsMore
}

// Task returns the call's task, or nil if it became none. It is the
// Book's, valid while it is, not to be changed.
func (c *Call[C]) Task() *Task {
	if c.t == nil {
		return nil
	}
	return c.t.task
}

// thread returns the call's thread, making it (with the first round) if
// it has none. It returns the canonical call.
func (b *Book[S, C]) thread(c *Call[C]) *thread[C] {
	if c.t == nil {
		t := &thread[C]{call: *c, rounds: []Round{{Intent: c.Intent, N: 1}}}
		t.call.t = t
		c.t = t
	}
	return c.t
}

// retry links an intent with a round to the call whose input_required
// outcome it answers, and returns the call it continues (nil: it opens a
// call of its own). A round of no recorded outcome (round.of null:
// unknown or reused state, as the relay found) starts a call of its own
// with no anomaly; one whose of names no input_required outcome of its
// session waiting for a retry, or one that a round already claimed, is an
// anomaly, and starts a call of its own too.
func (b *Book[S, C]) retry(s *Session[S, C], r *record.Record, in *record.Intent) *thread[C] {
	rd := in.Round
	linked := rd.By == record.RoundByState || rd.By == record.RoundByMatch
	switch {
	case !linked && (rd.HasOf || rd.By != record.RoundUnknownState && rd.By != record.RoundReusedState):
		b.anomaly(Anomaly{Kind: RoundUnlinked, Rec: r, Msg: fmt.Sprintf("intent round by %q is no link the format writes (by state or match with an outcome, unknown_state or reused_state with none)", rd.By)})
		return nil
	case !linked:
		return nil
	case !rd.HasOf:
		b.anomaly(Anomaly{Kind: RoundUnlinked, Rec: r, Msg: fmt.Sprintf("intent round by %s names no outcome (of null)", rd.By)})
		return nil
	}
	t, ok := s.awaiting[rd.Of]
	switch {
	case ok:
		delete(s.awaiting, rd.Of)
		t.waiting = false
		s.claimed[rd.Of] = r.Seq
		if len(t.rounds) < maxKept {
			t.rounds = append(t.rounds, Round{Intent: r.Seq, N: rd.N, By: rd.By})
		} else {
			t.roundsMore++
		}
		t.call.Done = false
		return t
	case s.claimed[rd.Of] != 0:
		b.anomaly(Anomaly{Kind: RoundClaimedTwice, Rec: r, Msg: fmt.Sprintf("intent round of outcome seq %d, which the round at seq %d already answers", rd.Of, s.claimed[rd.Of])})
	case s.gapped && rd.Of < b.gapEnd:
		// Its outcome may be in the missing records.
	default:
		b.anomaly(Anomaly{Kind: RoundUnlinked, Rec: r, Msg: fmt.Sprintf("intent round of outcome seq %d, which is no input_required outcome of this session", rd.Of)})
	}
	return nil
}

// answer settles the call c (taken from the open calls) with its round's
// outcome o (record r), and returns the call to report.
func (b *Book[S, C]) answer(s *Session[S, C], r *record.Record, o *record.Outcome, c Call[C]) *Call[C] {
	switch {
	case c.t == nil && o.Status != record.StatusInputRequired && o.Status != record.StatusTask:
		// A call of one round: the common case, allocating nothing.
		c.Status, c.Reason, c.Done = o.Status, o.Reason, true
		c.LatencyNS, c.HasLatency = o.LatencyNS, latencyRecorded(o)
		if o.Status == record.StatusOther {
			c.ResultType = o.ResultType.String()
		}
		b.answered = c
		return &b.answered
	case c.t == nil:
		b.thread(&c)
	}
	t := c.t
	last := &t.rounds[len(t.rounds)-1]
	if t.roundsMore == 0 {
		last.Outcome, last.HasOutcome, last.Status = r.Seq, true, o.Status
		last.LatencyNS, last.HasLatency = o.LatencyNS, latencyRecorded(o)
	}
	call := &t.call
	call.Status, call.Reason, call.Done = o.Status, o.Reason, true
	call.ResultType = ""
	if o.Status == record.StatusOther {
		call.ResultType = o.ResultType.String()
	}
	call.LatencyNS, call.HasLatency = b.whole(t, r, o.LatencyNS, latencyRecorded(o))
	switch o.Status {
	case record.StatusInputRequired:
		t.waiting, call.Done = true, false
		if !s.closed { // a closed session's retries are not linked
			s.awaiting[r.Seq] = t
		}
	case record.StatusTask:
		call.Done = false
		t.task = &Task{ID: o.TaskID.String(), id: bounded(o.TaskID), Intent: o.Intent, Outcome: r.Seq}
		key := taskKey(o.TaskID)
		if prev, ok := s.taskIDs[key]; ok && !prev.task.Ended {
			// Its task records could be either call's: this one takes
			// none, and is done as it is.
			b.anomaly(Anomaly{Kind: TaskIDReused, Rec: r, Msg: fmt.Sprintf("outcome names task %s, which the call of intent seq %d holds, not ended", o.TaskID, prev.task.Intent)})
			call.Done = true
			break
		}
		if !s.closed { // nor its task records
			s.tasks[o.Intent] = t
			s.taskIDs[key] = t
		}
	}
	if s.closed {
		// An outcome after its session closed (an anomaly already): it
		// waits for nothing that will be counted.
		call.Done = true
	}
	return call
}

// latencyRecorded reports whether an outcome's latency_ns is the call's:
// an answer, or aegis's own (timeout), or a cancel.
func latencyRecorded(o *record.Outcome) bool {
	return o.HasResponse || o.Status == record.StatusTimeout || o.Status == record.StatusCancelled
}

// whole is the call's latency at the record r whose recorded latency is
// ns (has: ns is recorded), and whether it is known: ns for a call of one
// round, whose latency it is; else from the first intent's ts to r's.
func (b *Book[S, C]) whole(t *thread[C], r *record.Record, ns int64, has bool) (int64, bool) {
	if len(t.rounds) == 1 && t.roundsMore == 0 {
		return ns, has
	}
	if r.TS.IsZero() || t.call.start == 0 {
		return 0, false
	}
	return r.TS.UnixNano() - t.call.start, true
}

// bounded returns a copy of v that aliases no line.
func bounded(v record.Bounded) record.Bounded {
	v.Text = append([]byte(nil), v.Text...)
	return v
}

// task counts a task record: it must name the intent of a call of its
// session whose outcome made a task of the same task_id; a task has at
// most one end. It returns the call to report.
func (b *Book[S, C]) task(s *Session[S, C], r *record.Record, tr *record.Task) *Call[C] {
	t := s.tasks[tr.Intent]
	if t == nil || t.task == nil || !t.task.id.Equal(tr.TaskID) {
		if !(s.gapped && tr.Intent < b.gapEnd) {
			b.anomaly(Anomaly{Kind: TaskWithoutCall, Rec: r, Msg: fmt.Sprintf("task record of task %s names intent seq %d, which is no call of this session that became that task", tr.TaskID, tr.Intent)})
		}
		return nil
	}
	k := t.task
	ev := TaskEvent{Seq: r.Seq, Event: tr.Event, Via: tr.Via, Status: tr.Status}
	if tr.Event == record.TaskEnd && k.Ended {
		b.anomaly(Anomaly{Kind: TaskEndedTwice, Rec: r, Msg: fmt.Sprintf("a second end of task %s (the first at seq %d)", tr.TaskID, k.End.Seq)})
		return nil
	}
	if len(k.Events) < maxKept {
		k.Events = append(k.Events, ev)
	} else {
		k.EventsMore++
	}
	call := &t.call
	if tr.Event == record.TaskEnd {
		k.Ended, k.End = true, ev
		call.Status, call.Reason, call.Done = tr.Status, tr.Reason, true
		call.LatencyNS, call.HasLatency = b.whole(t, r, tr.LatencyNS, true)
	}
	return call
}

// taskKey is a task id as recorded, whole or abbreviated, as a map key.
func taskKey(v record.Bounded) string {
	v = v.Bound()
	if v.Len > 0 {
		return "\x00" + string(v.Sum[:])
	}
	return string(v.Text)
}

// request counts a server_request: each seq it names must be a call of
// its session in flight (waiting for its outcome, or its task's end). A
// call waiting for a retry is not: its server has answered, and the
// revision of rounds (2026-07-28) has no server requests.
func (b *Book[S, C]) request(s *Session[S, C], r *record.Record, q *record.ServerRequest) {
	s.requests[r.Seq] = struct{}{}
	for _, seq := range q.Calls {
		if _, ok := s.open[seq]; ok {
			continue
		}
		if t := s.tasks[seq]; t != nil && !t.task.Ended {
			continue
		}
		if s.gapped && seq < b.gapEnd {
			continue
		}
		b.anomaly(Anomaly{Kind: RequestOfNoCall, Rec: r, Msg: fmt.Sprintf("server_request names seq %d, which is no call of this session in flight", seq)})
		return
	}
}

// answerRequest counts a client_answer: it must answer a server_request
// of its session.
func (b *Book[S, C]) answerRequest(s *Session[S, C], r *record.Record, a *record.ClientAnswer) {
	if _, ok := s.requests[a.Request]; ok || s.gapped && a.Request < b.gapEnd {
		return
	}
	b.anomaly(Anomaly{Kind: AnswerWithoutRequest, Rec: r, Msg: fmt.Sprintf("client_answer to seq %d, which is no server_request of this session", a.Request)})
}

// endTasks reports, at a session_end, each task of the session without
// its end (the relay writes an unfinished end for a task open at the
// end of its session).
func (b *Book[S, C]) endTasks(s *Session[S, C], r *record.Record) {
	var open []uint64
	for seq, t := range s.tasks {
		if k := t.task; k != nil && !k.Ended && (!s.gapped || seq >= b.gapEnd) {
			open = append(open, seq)
		}
	}
	slices.Sort(open)
	for _, seq := range open {
		b.anomaly(Anomaly{Kind: TaskWithoutEnd, Rec: r, Msg: fmt.Sprintf("task %s (intent seq %d) has no end in a session that ended", s.tasks[seq].task.ID, seq)})
	}
}

// settlePending marks done the calls of s that wait for a retry, a
// task's end, or the outcome of their last round (a retry whose outcome
// never came): its records end here.
func (s *Session[S, C]) settlePending() {
	s.EachPending(func(c *Call[C]) { c.Done = true })
	for _, c := range s.open {
		if c.t != nil {
			c.t.call.Done = true
		}
	}
}

// EachPending calls f with each call of s that has its outcome but waits
// for more (a retry of an input_required outcome, or its task's end), in
// no particular order. f must not count records into the Book.
func (s *Session[S, C]) EachPending(f func(c *Call[C])) {
	for _, t := range s.awaiting {
		f(&t.call)
	}
	for _, t := range s.tasks {
		if t.task != nil && !t.task.Ended && !t.waiting {
			f(&t.call)
		}
	}
}

// makeRounds makes s's tables of rounds and tasks, once: a session of
// calls of one round never needs them.
func (s *Session[S, C]) makeRounds() {
	if s.awaiting == nil {
		s.awaiting, s.claimed = map[uint64]*thread[C]{}, map[uint64]uint64{}
		s.tasks, s.requests = map[uint64]*thread[C]{}, map[uint64]struct{}{}
		s.taskIDs = map[string]*thread[C]{}
	}
}
