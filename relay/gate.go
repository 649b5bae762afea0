package relay

import (
	"strconv"
	"time"

	"github.com/aegisrelay/aegis/journal"
)

// Gate is the tool-identity policy the relay enforces (SPEC §5). A nil Gate
// is pass-through: every line is relayed, every intent says "pass-through",
// and the relay behaves byte for byte as one without policy code.
//
// The relay calls Begin from the client→child pump only, under its lock,
// once for each frame that carries a tools/call, and decides every call of
// that frame with the Frame it returns: a reload between two frames never
// splits one frame (a batch) between two rule sets, and a call keeps the
// rule set it was decided under. Begin must be cheap: it is on the path of
// every recorded call.
type Gate interface {
	Begin(now time.Time) Frame
}

// Frame decides the tools/calls of one frame, in order, under one rule set.
// It is valid until the next Begin on the same Gate and is used by one
// goroutine.
type Frame interface {
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

// Decision is a verdict as the intent's "policy" records it, and, for a
// refusal, what the refusal frame says.
type Decision struct {
	Verdict string // journal.Verdict*
	Rule    string // the rule that decided, "" for none (null)
	Set     string // the rule set, "sha256:…"
	// Code is the refusal's data.aegis.code (Code* below), "" if allowed.
	Code string
	// RetryAfter is when a RATE_LIMITED call could next be allowed.
	RetryAfter time.Duration
}

// Refused reports whether the decision keeps the call from the child.
func (d *Decision) Refused() bool { return d.Code != "" }

// The refusal frame (SPEC §5). These are part of the wire format: the
// envelope, the code and the layer never vary.
const (
	// RefusalCode is the JSON-RPC error code of every refusal. MCP 2025-11-25
	// gives -32042 to URL-mode elicitation too; a refusal never carries
	// data.elicitations, which is what SDK clients key on.
	RefusalCode = -32042
	// RefusalMessage is the error message of every refusal.
	RefusalMessage = "aegis wrap refused this tools/call"
	// RefusalLayer is data.aegis.layer.
	RefusalLayer = "wrap"

	CodePolicyDenied    = "POLICY_DENIED"    // a deny rule, the default, or a malformed call
	CodeRateLimited     = "RATE_LIMITED"     // over the rule's rate; retry_after_ms says when
	CodePendingApproval = "PENDING_APPROVAL" // an approve rule (parking is not built)
	CodeHostDenied      = "HOST_DENIED"      // not itself refused: a sibling in its batch was
)

// Reasons of the host_denied outcomes of a refused frame.
const (
	ReasonNotExecuted = "not executed"
	ReasonSibling     = "not executed: sibling call in this batch was refused"
)

// Refusals of calls no rule is asked about: a parser differential could
// make the child run another tool than the one aegis would judge.
func refuseMalformed(set string) Decision {
	return Decision{Verdict: journal.VerdictDenied, Set: set, Code: CodePolicyDenied}
}

const refusalHead = `{"jsonrpc":"2.0","id":`
const refusalMid = `,"error":{"code":-32042,"message":"` + RefusalMessage + `","data":{"aegis":{"layer":"` + RefusalLayer + `","code":"`

// AppendRefusal appends the refusal frame answering a request, without its
// '\n'. id is the request's id token as it was sent (Message.ID.Raw), or nil
// for null. rule is added as data.aegis.rule when not empty; retry as
// retry_after_ms (whole milliseconds, rounded up) for CodeRateLimited.
func AppendRefusal(dst, id []byte, code, rule string, retry time.Duration) []byte {
	dst = append(dst, refusalHead...)
	if id == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, id...)
	}
	dst = append(dst, refusalMid...)
	dst = append(dst, code...)
	dst = append(dst, '"')
	if rule != "" {
		dst = append(dst, `,"rule":`...)
		dst = appendJSONString(dst, rule)
	}
	if code == CodeRateLimited {
		ms := (retry + time.Millisecond - 1) / time.Millisecond
		dst = append(dst, `,"retry_after_ms":`...)
		dst = strconv.AppendInt(dst, int64(max(ms, 1)), 10)
	}
	return append(dst, "}}}}"...)
}

// appendJSONString appends s as a JSON string. Rule names are valid UTF-8
// (the policy parser refuses others), so only '"', '\\' and control
// characters need escapes.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
