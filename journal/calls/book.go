package calls

import (
	"encoding/hex"
	"fmt"
	"math"

	"github.com/aegisrelay/aegis/journal/record"
)

// Options configure a Book.
type Options struct {
	// Exclusive: a session_start without a transport (a stdio wrap) cuts
	// the sessions live before it (CutStart). aegis log sets it, to show
	// such a session as over where the next one starts; verify leaves it
	// unset, so that such a session stays live and its lack is judged at
	// the end of the log.
	Exclusive bool
	// Partial: the records read may lack any before them (a log whose
	// first segments are gone); a record of a sid no session_start
	// opened opens its session, without a start, rather than being
	// outside its session. As if Missing(math.MaxUint64) were called
	// before the first record.
	Partial bool
}

// How says how a session stopped being live.
type How int

// The ways a session closes.
const (
	Ended       How = iota // its session_end
	CutRecovery            // a recovery: the crash it answers ended the session
	CutStart               // a stdio session_start (Options.Exclusive)
	CutEnd                 // the end of the log (Book.Close)
)

// Book follows the sessions and calls of one log, a record at a time in
// log order: Enter, then Count, then Settle for each record (or Add, the
// three at once). S is what the caller keeps per session (Session.Data),
// C per call (Call.Data). A Book is not safe for concurrent use; after
// Close it is spent.
type Book[S, C any] struct {
	// OnClose, if set, is called as a session stops being live, after
	// the record that closes it is counted (Settle), or before the record
	// that cuts it off (a recovery, a stdio session_start) is entered,
	// or at Close; before the session's cut anomaly, if any.
	OnClose func(s *Session[S, C], how How)
	// OnAnomaly, if set, is called with each anomaly as it is found.
	OnAnomaly func(a Anomaly)

	exclusive bool
	byID      map[[16]byte]*Session[S, C]
	cur       *Session[S, C]   // the session the last record entered belongs to
	live      []*Session[S, C] // opened and not closed, in the order opened
	// gapEnd: the lowest seq after every missing range so far; sessions
	// and intents from before it may have begun in the missing records.
	gapEnd uint64
	// After a recovery: the sid the next session_start must carry.
	expect    [16]byte
	expecting bool
	answered  Call[C] // the call Count returns, kept here so that returning it allocates nothing
}

// New returns an empty Book.
func New[S, C any](opts Options) *Book[S, C] {
	b := &Book[S, C]{exclusive: opts.Exclusive, byID: map[[16]byte]*Session[S, C]{}}
	if opts.Partial {
		b.gapEnd = math.MaxUint64
	}
	return b
}

// Session is one session of the log as read so far. Its counts grow as
// its records are counted; the pointer stays the session's for the life
// of the Book.
type Session[S, C any] struct {
	SID      [16]byte
	FirstSeq uint64
	LastSeq  uint64
	Records  uint64 // counted: every record of it but a recovery before it
	Intents  uint64
	Outcomes uint64
	// Started: its session_start was read. A session opened by a record
	// after missing records is not.
	Started   bool
	Ended     bool // its session_end was read
	EndReason string
	// Data is the caller's, zero until it sets it.
	Data S

	// Revision is the protocol revision of its protocol record, or, until
	// one is read, the one its first intent declaring one declares; "" if
	// none.
	Revision string

	open   map[uint64]Call[C] // calls waiting for their outcome, by intent seq
	gapped bool               // records of it may be in missing records
	closed bool               // no longer live: its records end here

	// Rounds and tasks (rounds.go), each made when first needed.
	awaiting map[uint64]*thread[C] // calls whose input_required outcome (by seq) waits for a retry
	claimed  map[uint64]uint64     // input_required outcomes a retry answered: the retry's seq
	tasks    map[uint64]*thread[C] // calls that became a task, by the intent seq of that round
	requests map[uint64]struct{}   // the seqs of the server_request records
	taskIDs  map[string]*thread[C] // the calls that became a task, by task id (taskKey)

	// Approvals (approvals.go), each made when first needed.
	parked      map[uint64]*parked // calls parked for approval, by intent seq, until their outcome
	approvalIDs map[string]uint64  // the approval ids its intents parked calls under: the intent's seq

	egress *egress // its egress connections (egress.go), made when first needed
}

// Live reports whether s is live: opened and not yet closed.
func (s *Session[S, C]) Live() bool { return !s.closed }

// Waiting is the number of s's calls still waiting for their outcome.
func (s *Session[S, C]) Waiting() int { return len(s.open) }

// Each calls f with each call of s still waiting for its outcome, in no
// particular order. f must not count records into the Book.
func (s *Session[S, C]) Each(f func(c *Call[C])) {
	for _, c := range s.open {
		f(&c)
	}
}

// Live returns the sessions live now, in the order they opened. The
// slice is the Book's: valid until the next call into it, not to be
// changed.
func (b *Book[S, C]) Live() []*Session[S, C] { return b.live }

// Lookup returns the session sid names, or nil if none was opened.
func (b *Book[S, C]) Lookup(sid [16]byte) *Session[S, C] { return b.byID[sid] }

// Missing tells the Book that the records up to end are missing (a
// segment of the set is gone, which the caller reports): the sessions
// live now, and any opened by a record before end, may have records
// there, so that what those would hold is not held against them.
func (b *Book[S, C]) Missing(end uint64) {
	b.gapEnd = max(b.gapEnd, end)
	if b.cur != nil {
		b.cur.gapped = true
	}
	for _, s := range b.byID {
		if !s.Ended {
			s.gapped = true
		}
	}
}

// Add enters r, counts it with c as its call's Data if it is an intent
// that opens one, and settles it: the three steps at once, for a caller
// that keeps nothing of r's session between them. It returns what Count
// does.
func (b *Book[S, C]) Add(r *record.Record, c C) (s *Session[S, C], answered *Call[C]) {
	s = b.Enter(r)
	if s == nil {
		return nil, nil
	}
	answered = b.Count(r, c)
	b.Settle()
	return s, answered
}

// Enter finds the session r belongs to and makes it current: a recovery
// cuts every live session and names the next (it belongs to none: nil);
// a session_start opens its session; any other record must fall inside a
// live session or one that ended, else it is outside its session (an
// anomaly; nil). A session_start's session has a zero Data, for the
// caller to set.
func (b *Book[S, C]) Enter(r *record.Record) *Session[S, C] {
	switch r.Kind {
	case record.KindRecovery:
		b.cut(CutRecovery)
		b.expect, b.expecting = r.SID, true
		return nil
	case record.KindSessionStart:
		if b.expecting && b.expect != r.SID {
			b.anomaly(Anomaly{Kind: WrongSessionAfterRecovery, Rec: r, Msg: "session_start after a recovery carries another session id"})
		}
		b.expecting = false
		if st, ok := r.Body.(*record.SessionStart); ok && b.exclusive && st.Transport == "" {
			b.cut(CutStart)
		}
		if _, dup := b.byID[r.SID]; dup {
			b.anomaly(Anomaly{Kind: ReusedSessionID, Rec: r, Msg: fmt.Sprintf("session id %x reused", r.SID)})
		}
		b.open(&Session[S, C]{SID: r.SID, FirstSeq: r.Seq, Started: true, open: map[uint64]Call[C]{}})
		return b.cur
	}
	if b.expecting {
		b.anomaly(Anomaly{Kind: NoSessionAfterRecovery, Rec: r, Msg: "a recovery must be followed by its session_start"})
		b.expecting = false
	}
	if b.gapEnd > 0 && b.byID[r.SID] == nil {
		// A session whose start is in missing records.
		b.open(&Session[S, C]{SID: r.SID, FirstSeq: r.Seq, open: map[uint64]Call[C]{}, gapped: true})
	}
	// The current session is always the one its sid maps to: look the
	// map up only for a record of another session.
	if b.cur == nil || b.cur.SID != r.SID {
		s := b.byID[r.SID]
		if s == nil || s.closed && !s.Ended {
			b.anomaly(Anomaly{Kind: OutsideSession, Rec: r, Msg: fmt.Sprintf("%s record outside its session", r.Kind)})
			return nil
		}
		b.cur = s
	}
	if b.cur.Ended {
		b.anomaly(Anomaly{Kind: AfterEnd, Rec: r, Msg: fmt.Sprintf("%s record after session_end", r.Kind)})
	}
	return b.cur
}

// open makes s the current session, live and found by its sid.
func (b *Book[S, C]) open(s *Session[S, C]) {
	b.cur = s
	b.byID[s.SID] = s
	b.live = append(b.live, s)
}

// Count counts r in the session Enter returned for it (not nil): an
// intent with an id opens a call whose Data is c; an outcome answers its
// intent's call, which it returns (nil if it answers none); a
// session_end ends the session, which Settle then closes. The returned
// call is valid until the next call into the Book.
func (b *Book[S, C]) Count(r *record.Record, c C) (answered *Call[C]) {
	s := b.cur
	s.Records++
	s.LastSeq = r.Seq
	switch body := r.Body.(type) {
	case *record.Intent:
		s.Intents++
		if body.HasRevision && s.Revision == "" {
			s.Revision = body.Revision.String()
		}
		if body.Call.Type == record.IDNull {
			break
		}
		s.noteIntent(r.Seq)
		if body.Approval != nil { // a first round or a retry
			b.park(s, r, body)
		}
		if body.Round.By != "" {
			s.makeRounds()
			if t := b.retry(s, r, body); t != nil {
				rc := Call[C]{Intent: t.call.Intent, Data: t.call.Data, t: t}
				rc.setID(body.Call)
				s.open[r.Seq] = rc
				return &t.call
			}
		}
		call := makeCall(r.Seq, body.Call, c)
		if !r.TS.IsZero() {
			call.start = r.TS.UnixNano()
		}
		s.open[r.Seq] = call
	case *record.Outcome:
		s.Outcomes++
		call, ok := s.open[body.Intent]
		switch {
		case !ok && s.gapped && body.Intent < b.gapEnd:
			// Its intent may be in the missing records.
		case !ok:
			b.anomaly(Anomaly{Kind: UnknownIntent, Rec: r, Msg: fmt.Sprintf("outcome for intent seq %d, which is not an open intent of this session", body.Intent)})
		case !call.matches(body.Call):
			// A copy, so that call, whose bytes ID returns, stays on the
			// stack on the path every outcome takes.
			want := call
			b.anomaly(Anomaly{Kind: CallMismatch, Rec: r, Msg: fmt.Sprintf("outcome call %s does not match intent seq %d's call %s", callText(body.Call), body.Intent, callText(want.ID()))})
		}
		if ok {
			delete(s.open, body.Intent)
			if s.parked != nil {
				b.settleParked(s, r, body)
			}
			if call.t != nil || body.Status == record.StatusInputRequired || body.Status == record.StatusTask {
				s.makeRounds()
			}
			return b.answer(s, r, body, call)
		}
	case *record.Task:
		s.makeRounds()
		return b.task(s, r, body)
	case *record.ServerRequest:
		s.makeRounds()
		b.request(s, r, body)
	case *record.ClientAnswer:
		s.makeRounds()
		b.answerRequest(s, r, body)
	case *record.Approval:
		b.decide(s, r, body)
	case *record.Egress:
		b.connect(s, r, body)
	case *record.SessionStart:
		s.grantEgress(body)
	case *record.Protocol:
		s.Revision = body.Revision.String()
	case *record.SessionEnd:
		s.Ended, s.EndReason = true, body.Reason
		if !s.gapped && (body.Counts.Intents != s.Intents || body.Counts.Outcomes != s.Outcomes) {
			b.anomaly(Anomaly{Kind: CountsMismatch, Rec: r, Msg: fmt.Sprintf("session_end counts %d intents and %d outcomes; the log holds %d and %d",
				body.Counts.Intents, body.Counts.Outcomes, s.Intents, s.Outcomes)})
		}
		for seq := range s.open {
			if !s.gapped || seq >= b.gapEnd {
				b.anomaly(Anomaly{Kind: Unanswered, Rec: r, Msg: fmt.Sprintf("intent seq %d has no outcome in a session that ended", seq)})
			}
		}
		b.endTasks(s, r)
		b.endEgress(s, r)
	}
	return nil
}

// Settle closes the current session if the record just counted ended it
// (OnClose with Ended). Call it after Count, once what the caller keeps
// of the session is up to date with the record.
func (b *Book[S, C]) Settle() {
	if s := b.cur; s != nil && s.Ended && !s.closed {
		b.retire(s, Ended)
	}
}

// Close ends the log: every live session is cut (CutEnd), in the order
// they opened, and a recovery with no session after it is reported.
func (b *Book[S, C]) Close() {
	b.cut(CutEnd)
	if b.expecting {
		b.expecting = false
		b.anomaly(Anomaly{Kind: NoSessionAfterRecovery, Cut: true, Msg: "log ends after a recovery, before its session_start"})
	}
}

// cut closes every live session, in the order they opened, and leaves
// none current.
func (b *Book[S, C]) cut(how How) {
	for len(b.live) > 0 {
		b.retire(b.live[0], how)
	}
	b.cur = nil
}

// retire closes the live session s, reporting what it lacks, if anything.
func (b *Book[S, C]) retire(s *Session[S, C], how How) {
	for i, l := range b.live {
		if l == s {
			b.live = append(b.live[:i], b.live[i+1:]...)
			break
		}
	}
	s.closed = true
	s.settlePending()
	if b.OnClose != nil {
		b.OnClose(s, how)
	}
	// Its rounds and tasks are settled: a record of it after its close is
	// an anomaly already (after its end, or outside its session).
	s.awaiting, s.claimed, s.tasks, s.requests, s.taskIDs = nil, nil, nil, nil, nil
	s.parked, s.approvalIDs = nil, nil
	s.egress = nil
	if !s.Ended {
		b.anomaly(Anomaly{Kind: NoEnd, Cut: true, Seq: s.LastSeq, HasSeq: true,
			Msg: fmt.Sprintf("session %s has no session_end (aegis stopped without closing it, or its tail was cut); %d intents without outcome", hex.EncodeToString(s.SID[:]), len(s.open))})
	}
}

func (b *Book[S, C]) anomaly(a Anomaly) {
	if a.Rec != nil {
		a.Seq, a.HasSeq = a.Rec.Seq, true
	}
	if b.OnAnomaly != nil {
		b.OnAnomaly(a)
	}
}
