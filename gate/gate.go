package gate

import (
	"strconv"
	"time"
)

// Gate is the policy the relay enforces. A nil Gate is pass-through: every
// line is relayed, every intent says "pass-through", and the relay behaves
// byte for byte as one without policy code.
//
// The relay calls Begin from the client→child pump only, once for each
// frame that carries a tools/call, and decides every call of that frame
// with the FrameDecider it returns: a reload between two frames never
// splits one frame (a batch) between two rule sets, and a call keeps the
// rule set it was decided under. Begin must be cheap: it is on the path of
// every recorded call.
type Gate interface {
	Begin(now time.Time) FrameDecider
}

// FrameDecider decides the tools/calls of one frame, in order, under one
// rule set. It is valid until the next Begin on the same Gate and is used
// by one goroutine.
type FrameDecider interface {
	// Set names the rule set: "sha256:<hex>" of the policy file's bytes.
	Set() string
	// Decide decides one call by its tool name (decoded params.name). It
	// takes no rate tokens: a rate-limited rule counts the calls of this
	// frame decided before, so the k-th call to a rule is allowed only if k
	// tokens are there. It must not retain tool.
	Decide(tool []byte) Decision
	// Commit takes the rate tokens of every call decided in this frame. The
	// relay calls it once the frame is to be relayed; a refused frame takes
	// none, since none of its calls runs.
	Commit()
}

// Verdict is what a Decision says of a call. The zero Verdict is Denied:
// an undecided call is refused.
type Verdict uint8

// Verdicts. Every one but Allowed keeps the call, and the frame carrying
// it, from the child.
const (
	Denied          Verdict = iota // a deny rule or the default; refused POLICY_DENIED
	Allowed                        // the call may reach the child
	RateLimited                    // over its rule's rate; refused RATE_LIMITED
	PendingApproval                // an approve rule; refused PENDING_APPROVAL
)

// String returns the verdict as the audit log's intent names it
// ("denied", "allowed", "rate_limited", "pending_approval").
func (v Verdict) String() string {
	switch v {
	case Denied:
		return "denied"
	case Allowed:
		return "allowed"
	case RateLimited:
		return "rate_limited"
	case PendingApproval:
		return "pending_approval"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Decision is the verdict on one call, with what the intent's "policy"
// records beside it and what a refusal frame says.
type Decision struct {
	Verdict Verdict
	Rule    string // the rule that decided, "" for none (null)
	Set     string // the rule set, "sha256:…"
	// RetryAfter is when a RateLimited call could next be allowed.
	RetryAfter time.Duration
}

// Refused reports whether the decision keeps the call from the child.
func (d *Decision) Refused() bool { return d.Verdict != Allowed }
