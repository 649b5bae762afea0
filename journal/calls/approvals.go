package calls

import (
	"fmt"

	"github.com/aegisrelay/aegis/journal/record"
)

// ReasonApprovalEnded is the execution reason of the outcome of a call
// parked for approval that no one decided before its session ended.
const ReasonApprovalEnded = "not executed: the session ended awaiting approval"

// parked is a call an approve rule parked (its intent carries approval
// terms), from its intent until its outcome.
type parked struct {
	id       string
	digest   record.Digest
	decision string // "" until its approval record is read
	// An approval asked inside the protocol (record.ApprovalTerms.Elicit):
	// elicit marks the first intent parked under the id, asked the seq of
	// aegis's input_required outcome of it (0 before), claimed that a
	// retry parks under the id; first is, for that retry, the first
	// intent's entry, whose decision it takes.
	elicit  bool
	asked   uint64
	claimed bool
	first   *parked
}

// decided is the decision p's approval made ("" for none yet).
func (p *parked) decided() string {
	if p.first != nil {
		return p.first.decision
	}
	return p.decision
}

// park notes the intent at seq as parked under its approval terms. An id
// is its session's once: a second intent parked under it is an anomaly.
func (b *Book[S, C]) park(s *Session[S, C], r *record.Record, in *record.Intent) {
	if s.parked == nil {
		s.parked, s.approvalIDs = map[uint64]*parked{}, map[string]uint64{}
	}
	id := in.Approval.ID
	if first, dup := s.approvalIDs[id]; dup {
		// The retry of a call asked inside the protocol: a round linked to
		// aegis's input_required outcome of the first, parked under its
		// id, once.
		if p := s.parked[first]; p != nil && p.asked != 0 && !p.claimed && in.Approval.Elicit && in.Round.HasOf && in.Round.Of == p.asked {
			p.claimed = true
			s.parked[r.Seq] = &parked{id: id, digest: in.RequestDigest, first: p}
			return
		}
		b.anomaly(Anomaly{Kind: ApprovalReused, Rec: r, Msg: fmt.Sprintf("approval id %q parks a second call (the first is intent seq %d)", id, first)})
		return
	}
	s.approvalIDs[id] = r.Seq
	s.parked[r.Seq] = &parked{id: id, digest: in.RequestDigest, elicit: in.Approval.Elicit}
}

// decide judges an approval record: it must name a parked intent of its
// session waiting for its decision, by that intent's id and digest, and
// its grant must be the one its decision mints.
func (b *Book[S, C]) decide(s *Session[S, C], r *record.Record, a *record.Approval) {
	p := s.parked[a.Intent]
	switch {
	case p == nil && s.gapped && a.Intent < b.gapEnd:
		// Its intent may be in the missing records.
	case p == nil && s.approvalIDs[a.ID] == a.Intent && a.Intent != 0:
		b.anomaly(Anomaly{Kind: ApprovalTwice, Rec: r, Msg: fmt.Sprintf("approval %q decides intent seq %d, whose call has its outcome already", a.ID, a.Intent)})
	case p == nil:
		b.anomaly(Anomaly{Kind: ApprovalUnparked, Rec: r, Msg: fmt.Sprintf("approval %q names intent seq %d, which is no parked intent of this session", a.ID, a.Intent)})
	case p.id != a.ID || p.digest != a.RequestDigest:
		b.anomaly(Anomaly{Kind: ApprovalMismatch, Rec: r, Msg: fmt.Sprintf("approval %q (request_digest %s) does not match intent seq %d's approval %q (request_digest %s)",
			a.ID, a.RequestDigest, a.Intent, p.id, p.digest)})
	case p.decision != "":
		b.anomaly(Anomaly{Kind: ApprovalTwice, Rec: r, Msg: fmt.Sprintf("approval %q decided a second time (%s after %s)", a.ID, a.Decision, p.decision)})
	default:
		p.decision = a.Decision
	}
	want := record.GrantDenyAll
	switch a.Decision {
	case record.ApprovalApproved:
		want = record.GrantPrefix + a.ID
	case record.ApprovalDenied, record.ApprovalExpired:
	default:
		b.anomaly(Anomaly{Kind: ApprovalGrant, Rec: r, Msg: fmt.Sprintf("approval %q has decision %q: not approved, denied or expired", a.ID, a.Decision)})
		return
	}
	if a.Grant != want {
		b.anomaly(Anomaly{Kind: ApprovalGrant, Rec: r, Msg: fmt.Sprintf("approval %q (%s) grants %q; its decision grants %q", a.ID, a.Decision, a.Grant, want)})
	}
}

// settleParked judges the outcome o of a call whose intent (at seq) is
// parked, and drops it: an approved call's outcome is what its server
// answered; any other is a refusal (host_denied), and one with no
// decision says its session ended awaiting one.
func (b *Book[S, C]) settleParked(s *Session[S, C], r *record.Record, o *record.Outcome) {
	p := s.parked[o.Intent]
	if p == nil {
		return
	}
	if p.elicit && p.asked == 0 && p.decision == "" && asksApproval(o, p.id) {
		// aegis's own answer asking for the approval: the entry stays for
		// the decision and the retry.
		p.asked = r.Seq
		return
	}
	delete(s.parked, o.Intent)
	switch p.decided() {
	case record.ApprovalApproved:
	case "":
		if o.Status != record.StatusHostDenied || o.Reason != ReasonApprovalEnded {
			b.anomaly(Anomaly{Kind: ApprovalSkipped, Rec: r, Msg: fmt.Sprintf("outcome of intent seq %d, parked for approval %q, comes before any decision (status %s, reason %q)",
				o.Intent, p.id, o.Status, o.Reason)})
		}
	default:
		if o.Status != record.StatusHostDenied {
			b.anomaly(Anomaly{Kind: ApprovalSkipped, Rec: r, Msg: fmt.Sprintf("outcome of intent seq %d has status %s after its approval %q was %s", o.Intent, o.Status, p.id, p.decided())})
		}
	}
}

// asksApproval reports whether o is the answer aegis authors to ask for
// approval id inside the protocol: input_required, without state, its
// one input request the elicitation keyed record.ElicitKeyPrefix+id.
func asksApproval(o *record.Outcome, id string) bool {
	if o.Status != record.StatusInputRequired || o.HasRequestState || len(o.InputRequests) != 1 || o.InputRequestsMore != 0 {
		return false
	}
	in := o.InputRequests[0]
	return in.HasMethod && string(in.Key.Text) == record.ElicitKeyPrefix+id && string(in.Method.Text) == "elicitation/create"
}
