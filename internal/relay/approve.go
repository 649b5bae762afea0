package relay

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// Parking (package documentation, "Approvals"): with Config.Approvals, a
// call an approve rule decides is neither forwarded nor refused. Its
// intent names the approval id and its terms; its line is kept, dropped
// from the run, and the pumps go on. The approval's decision (Resolve)
// appends an approval record and then releases the kept line to the child
// as it was read, or refuses the call to the client; a session that ends
// first gives it a host_denied outcome that says so (End).

// parkedCall is a call awaiting its approval. It holds copies: the run it
// came in is reused.
type parkedCall struct {
	id       string
	seq      uint64      // its intent's
	call     record.Call // its id as the intent recorded it
	line     []byte      // the frame, with its '\n', as read
	answerID []byte      // the id token a refusal carries (answerID)
	digest   record.Digest
	rule     string
	set      string // the rule set that parked it
	round    int
	// void: a reload applied another rule set since: the call cannot be
	// released under the approval it waits for (voidParked).
	void bool
	// asked: the approval travels inside the protocol (elicit.go): the
	// first call parked under id was answered input_required, and line
	// is the client's retry once one came (nil before).
	asked *asked
}

// Outcome reasons of parked calls that never ran.
const (
	ReasonApprovalDenied  = "not executed: approval denied"
	ReasonApprovalExpired = "not executed: approval expired"
	ReasonApprovalEnded   = calls.ReasonApprovalEnded // verify reads it: the call model names it
)

// ErrNotParked: Resolve found no call under the id: its session ended.
var ErrNotParked = errors.New("relay: the call's session has ended")

// ErrVoid: an approval came for a call parked under a rule set that a
// reload has since replaced; the call was refused as expired.
var ErrVoid = errors.New("relay: the policy was reloaded since the call was parked: it was refused (APPROVAL_TIMEOUT); the client may send it again")

// reasonVoid is an approval record's reason for a call a reload voided.
const reasonVoid = "the policy was reloaded: the call needs a decision under the new rule set"

// Bounds of what parked calls hold: past either, an approve rule's call
// is refused at once (PENDING_APPROVAL) instead of parked, so that a
// client cannot make aegis keep its frames without end.
const (
	maxParked      = 1024
	maxParkedBytes = 64 << 20
)

// parks reports whether the frame in st.f, decided in st.decs, is parked
// rather than refused: approvals are on, it is one request with an id
// whose one call an approve rule decided, and the parked calls' bounds
// leave room for it. A batch is refused as before (PENDING_APPROVAL): it
// moves as one line, and one approval binds one call. r.mu is held.
func (r *Relay) parks(st *upstream, line []byte) bool {
	if r.cfg.Approvals == nil || st.f.Kind != frame.Single || len(st.decs) != 1 || len(st.f.Msgs) != 1 ||
		len(r.parked) >= maxParked || r.parkedBytes+len(line) > maxParkedBytes {
		return false
	}
	v, m := st.decs[0].Verdict, &st.f.Msgs[0]
	return (v == gate.PendingApproval || v == gate.Parked) && m.Type == frame.Request && m.Malformed == "" &&
		callOf(m).Type != record.IDNull
}

// park records the frame (chunk[start:end] is line) as parked and keeps it
// from the child. r.mu is held.
func (r *Relay) park(line []byte, start, end int, st *upstream, last uint64, n int) (uint64, int, error) {
	d, m := &st.decs[0], &st.f.Msgs[0]
	dg := digest(line)
	r.intent(st, 0, dg)
	if p := r.retryOf(st); p != nil {
		return r.parkRetry(p, line, start, end, st, dg, n)
	}
	id := approval.NewID()
	tab := r.cfg.Approvals
	terms := record.ApprovalTerms{ID: id, Server: r.cfg.Server, Caller: r.cfg.Caller.Principal,
		TimeoutMS: int64((tab.Timeout() + time.Millisecond - 1) / time.Millisecond)}
	url := r.elicitURL(st, line, id)
	terms.Elicit = url != ""
	st.in.Verdict, st.in.Rule, st.in.Set, st.in.Refused = record.VerdictPendingApproval, d.Rule, d.Set, false
	st.in.RuleLine, st.in.PolicyReason, st.in.Approval = d.Line, d.Reason, &terms
	// No hint: its answer is not coming soon, and the group commit must
	// not linger for it (journal/linger.go).
	seq, err := r.j.Append(&st.in)
	st.in.Approval = nil
	if err != nil {
		return 0, 0, err
	}
	r.counts.Intents++
	call := st.in.Call
	call.Text = slices.Clone(call.Text)
	p := &parkedCall{id: id, seq: seq, call: call, line: slices.Clone(line), answerID: slices.Clone(answerID(m)),
		digest: dg, rule: d.Rule, set: d.Set, round: st.in.Round.N}
	if r.parked == nil {
		r.parked = map[string]*parkedCall{}
	}
	r.parked[id] = p
	st.drop(start, end)
	st.lineOut = true
	if url != "" {
		if seq, err = r.elicit(p, url, m, st); err != nil {
			return 0, 0, err
		}
		n++
	} else {
		r.parkedBytes += len(p.line)
	}
	tab.Park(approval.Pending{ID: id, Server: r.cfg.Server, Tool: approval.Quote(m.Tool), Args: approval.Quote(m.Args),
		Caller: r.cfg.Caller.Principal, Since: time.Now()}, r)
	return seq, n + 1, nil
}

// Resolve carries out the decision on the call parked under id
// (approval.Resolver): an approval record, then, approved, the call's
// line to the child, byte for byte as the client sent it, once the
// record is durable; otherwise a host_denied outcome and a refusal to the
// client (APPROVAL_DENIED with the approver's reason, or
// APPROVAL_TIMEOUT). It fails with ErrNotParked once the session has
// ended, and with the journal's error.
func (r *Relay) Resolve(id string, d approval.Decision) error {
	r.mu.Lock()
	p := r.parked[id]
	if p == nil || r.ended || p.asked != nil && p.asked.decided {
		r.mu.Unlock()
		return ErrNotParked
	}
	if err := r.live(); err != nil {
		r.mu.Unlock()
		return err
	}
	var voided error
	if p.void && d.Verdict == record.ApprovalApproved {
		d, voided = approval.Decision{Verdict: record.ApprovalExpired, Reason: reasonVoid}, ErrVoid
	}
	// The approval names the intent that parked the call under id: with
	// an asked approval, the first, which the approvers were shown.
	intent, dg := p.seq, p.digest
	if p.asked != nil {
		intent, dg = p.asked.seq, p.asked.digest
	}
	a := record.Approval{ID: id, Intent: intent, RequestDigest: dg, Decision: d.Verdict,
		HasBy: d.HasBy, UID: d.UID, User: d.User, Principal: d.Principal, Reason: d.Reason, Grant: record.GrantDenyAll}
	if d.Verdict == record.ApprovalApproved {
		a.Grant = record.GrantPrefix + id
	}
	seq, err := r.j.Append(&a)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if p.asked != nil {
		p.asked.decided, p.asked.decision = true, d
		if p.line == nil {
			// No retry yet: the decision waits for it (parkRetry), and
			// its record is written now rather than with the next one
			// waited for, which may never come.
			r.mu.Unlock()
			if err := r.j.Wait(seq, journal.BeforeResponse); err != nil {
				return err
			}
			return voided
		}
	}
	delete(r.parked, id)
	r.parkedBytes -= len(p.line)
	if err := r.settle(p, d, seq); err != nil {
		return err
	}
	return voided
}

// settle carries out decision d on the parked call p, dropped from the
// parked calls, whose records up to last are appended: approved, its line
// goes to the child, byte for byte as the client sent it, once they are
// durable; otherwise it is refused to the client. r.mu is held, and
// released.
func (r *Relay) settle(p *parkedCall, d approval.Decision, seq uint64) error {
	if d.Verdict != record.ApprovalApproved {
		return r.refuseParked(p, d)
	}
	var cl frame.Classifier
	var st upstream
	cl.Classify(p.line, &st.f)
	m := &st.f.Msgs[0]
	c, last, err := r.enter(m, &st, p.call, p.seq, seq)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if p.round > 0 {
		c.round = p.round
	}
	if st.sums.prepare(&st.f, r.principal); len(st.sums.match) > 0 {
		c.match = st.sums.match[0]
	}
	if r.cfg.CallTimeout > 0 {
		r.timeable(c, m, &st.f)
	}
	child := r.child
	r.mu.Unlock()
	if err := r.release(1, last, journal.BeforeRequest, st.calls, 0); err != nil {
		return err
	}
	r.cmu.Lock()
	_, err = child.Write(p.line)
	r.cmu.Unlock()
	return err
}

// refuseParked records p's outcome as refused by d and answers the
// client. r.mu is held, and released.
func (r *Relay) refuseParked(p *parkedCall, d approval.Decision) error {
	reason, code := ReasonApprovalDenied, CodeApprovalDenied
	if d.Verdict == record.ApprovalExpired {
		reason, code = ReasonApprovalExpired, CodeApprovalTimeout
	}
	o := record.Outcome{Call: p.call, Intent: p.seq, Status: record.StatusHostDenied, Reason: reason}
	seq, err := r.j.Append(&o)
	if err == nil {
		r.counts.Outcomes++
		r.counts.Refused++
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if err := r.j.Wait(seq, journal.BeforeResponse); err != nil {
		return err
	}
	answerReason := ""
	if d.Verdict == record.ApprovalDenied {
		answerReason = d.Reason
	}
	r.writeClient(append(AppendRefusalReason(nil, p.answerID, code, p.rule, answerReason), '\n'))
	return nil
}

// endParked gives every parked call its outcome as the session ends, in
// the order they were parked, and drops it from the approvals. r.mu is
// held.
func (r *Relay) endParked() error {
	ps := make([]*parkedCall, 0, len(r.parked))
	for _, p := range r.parked {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *parkedCall) int { return cmp.Compare(a.seq, b.seq) })
	r.parked, r.parkedBytes = nil, 0
	for _, p := range ps {
		if p.asked != nil && !p.asked.decided {
			r.cfg.Approvals.Drop(p.id)
		}
		if p.line == nil {
			continue // an asked call whose retry never came: it has its outcome
		}
		if p.asked == nil {
			r.cfg.Approvals.Drop(p.id)
		}
		o := record.Outcome{Call: p.call, Intent: p.seq, Status: record.StatusHostDenied, Reason: ReasonApprovalEnded}
		if _, err := r.j.Append(&o); err != nil {
			return err
		}
		r.counts.Outcomes++
		r.counts.Refused++
	}
	return nil
}

// voidParked marks every call parked under another rule set than set,
// which a reload has just applied: an approval of the old rule set does
// not carry over. It returns their ids, for the caller to expire once r.mu
// is released. r.mu is held.
func (r *Relay) voidParked(set string) []string {
	var ids []string
	for id, p := range r.parked {
		if p.set != set && !p.void {
			p.void = true
			ids = append(ids, id)
		}
	}
	return ids
}

// expireVoid expires the calls voidParked marked.
func (r *Relay) expireVoid(ids []string) {
	for _, id := range ids {
		r.cfg.Approvals.Decide(id, approval.Decision{Verdict: record.ApprovalExpired, Reason: reasonVoid})
	}
}
