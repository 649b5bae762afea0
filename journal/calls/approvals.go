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
}

// park notes the intent at seq as parked under its approval terms. An id
// is its session's once: a second intent parked under it is an anomaly.
func (b *Book[S, C]) park(s *Session[S, C], r *record.Record, in *record.Intent) {
	if s.parked == nil {
		s.parked, s.approvalIDs = map[uint64]*parked{}, map[string]uint64{}
	}
	id := in.Approval.ID
	if first, dup := s.approvalIDs[id]; dup {
		b.anomaly(Anomaly{Kind: ApprovalReused, Rec: r, Msg: fmt.Sprintf("approval id %q parks a second call (the first is intent seq %d)", id, first)})
		return
	}
	s.approvalIDs[id] = r.Seq
	s.parked[r.Seq] = &parked{id: id, digest: in.RequestDigest}
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
	delete(s.parked, o.Intent)
	switch p.decision {
	case record.ApprovalApproved:
	case "":
		if o.Status != record.StatusHostDenied || o.Reason != ReasonApprovalEnded {
			b.anomaly(Anomaly{Kind: ApprovalSkipped, Rec: r, Msg: fmt.Sprintf("outcome of intent seq %d, parked for approval %q, comes before any decision (status %s, reason %q)",
				o.Intent, p.id, o.Status, o.Reason)})
		}
	default:
		if o.Status != record.StatusHostDenied {
			b.anomaly(Anomaly{Kind: ApprovalSkipped, Rec: r, Msg: fmt.Sprintf("outcome of intent seq %d has status %s after its approval %q was %s", o.Intent, o.Status, p.id, p.decision)})
		}
	}
}
