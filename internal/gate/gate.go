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
	// Decide decides one call (Call). It takes no rate tokens: a
	// rate-limited rule counts the calls of this frame decided before, so
	// the k-th call to a rule is allowed only if k tokens are there. It
	// must not retain c or the bytes it points to. The relay calls it
	// without holding any lock of its own: a decider may take its time
	// without stalling the child's answers.
	Decide(c *Call) Decision
	// Commit takes the rate tokens of every call decided in this frame. The
	// relay calls it once the frame is to be relayed; a refused frame takes
	// none, since none of its calls runs.
	Commit()
}

// Call is what a decider sees of one well-formed tools/call: read by the
// relay with every decoder's reading in mind (package frame), so that the
// call decided is the call the child runs. Its byte slices alias the
// frame and are valid only during Decide.
type Call struct {
	// Tool is the decoded params.name.
	Tool []byte
	// Args is params.arguments as the line carries it, the raw JSON value
	// (any type), when HasArgs; a call whose arguments member is repeated
	// or case-variant never reaches a decider.
	Args    []byte
	HasArgs bool
	// ArgsUnclear reports that some text inside Args is read differently
	// by some decoder (invalid UTF-8, an unpaired surrogate escape,
	// U+0000). A decider that reads the arguments' values must refuse such
	// a call rather than pick a reading; one that reads the name alone may
	// ignore it.
	ArgsUnclear bool
	// Caller is who sent the call.
	Caller *Caller
	// Revision is the protocol revision the request declares in
	// params._meta["io.modelcontextprotocol/protocolVersion"], decoded,
	// when HasRevision (2025-11-25 requests declare none).
	Revision    []byte
	HasRevision bool
	// Round is the call's round (MCP 2026-07-28 multi round-trip
	// requests; the relay's package documentation, "Rounds"): 1 for a
	// first request, n >= 2 for a retry linked to the input_required
	// answer of round n-1, 0 for a retry presenting a state the relay
	// does not know or that an earlier round claimed. The intent records
	// the same round.
	Round int
}

// Caller is who sent the calls of a session: the same for every call of
// it, as the session_start record names it.
type Caller struct {
	// Transport is "http" for a session served over Streamable HTTP, ""
	// for one over stdio.
	Transport string
	// Peer is, over HTTP, the address of the client that opened the
	// session; "" over stdio.
	Peer string
	// Principal is who the session authenticated as over HTTP
	// ("token:<id>" or "none"); over stdio, the local user that runs aegis
	// ("uid:<n>"), whose process holds the pipe.
	Principal string
}

// Verdict is what a Decision says of a call. The zero Verdict is Denied:
// an undecided call is refused.
type Verdict uint8

// Verdicts. Every one but Allowed keeps the call, and the frame carrying
// it, from the child.
const (
	Denied      Verdict = iota // a deny rule or the default; refused POLICY_DENIED
	Allowed                    // the call may reach the child
	RateLimited                // over its rule's rate; refused RATE_LIMITED
	// PendingApproval: an approve rule. The relay parks the call when it
	// can (an approvals table, a single request, room under its bound)
	// and refuses it PENDING_APPROVAL otherwise.
	PendingApproval
	// Parked: the call waits for a decision made elsewhere (an approval);
	// the relay treats it as PendingApproval.
	Parked
	// ToolChanged: the tool's definition differs from its pin and the
	// policy says on_tool_change: block (package pin); refused
	// TOOL_CHANGED, recorded as denied.
	ToolChanged
)

// String returns the verdict as the audit log's intent names it
// ("denied", "allowed", "rate_limited", "pending_approval"), and
// "parked", which the relay records as pending_approval.
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
	case Parked:
		return "parked"
	case ToolChanged:
		return "tool_changed"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Decision is the verdict on one call, with what the intent's "policy"
// records beside it and what a refusal frame says.
type Decision struct {
	Verdict Verdict
	Rule    string // the rule that decided, "" for none (null)
	Set     string // the rule set, "sha256:…"
	// Line is the line of the deciding rule (or default) in the policy
	// file the Set names; 0 for none.
	Line int
	// Reason says why a call was refused other than by the rule's action:
	// its condition failed to evaluate, or the arguments it reads are
	// read differently by some decoder. "" for none.
	Reason string
	// RetryAfter is when a RateLimited call could next be allowed.
	RetryAfter time.Duration
}

// Refused reports whether the decision keeps the call from the child.
func (d *Decision) Refused() bool { return d.Verdict != Allowed }
