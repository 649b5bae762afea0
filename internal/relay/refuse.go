package relay

import (
	"strconv"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/journal/record"
)

// refusal is a call of a refused frame: its intent's seq, its id, and
// whether it was refused itself or for a sibling's sake.
type refusal struct {
	seq  uint64
	call record.Call
	own  bool
}

// answerFrame appends to st.answer the answer to the refused frame in st.f:
// one refusal for a single request, an array for a batch with every request
// that has an id, nothing when no request has one.
func (st *upstream) answerFrame() {
	batch := st.f.Kind == frame.Batch
	mark := len(st.answer)
	if batch {
		st.answer = append(st.answer, '[')
	}
	k, answered := 0, 0
	for i := range st.f.Msgs {
		m := &st.f.Msgs[i]
		var d *gate.Decision
		if isCall(m) {
			d = &st.decs[k]
			k++
		}
		if m.Type != frame.Request {
			continue // notifications are answered by no one; responses are not requests
		}
		code, rule, retry := CodeHostDenied, "", time.Duration(0)
		if d != nil && d.Refused() {
			code, rule, retry = codeOf(d.Verdict), d.Rule, d.RetryAfter
		}
		if answered > 0 {
			st.answer = append(st.answer, ',')
		}
		st.answer = AppendRefusal(st.answer, answerID(m), code, rule, retry)
		answered++
	}
	if answered == 0 {
		st.answer = st.answer[:mark]
		return
	}
	if batch {
		st.answer = append(st.answer, ']')
	}
	st.answer = append(st.answer, '\n')
}

// answerID is the id token a refusal of m carries: the request's own, as
// it was sent, or null where its id is ambiguous or not an id at all
// (JSON-RPC answers null when the id cannot be determined).
func answerID(m *frame.Message) []byte {
	switch m.ID.Type {
	case frame.IDString, frame.IDNumber:
		if !strings.HasPrefix(m.Malformed, "id:") {
			return m.ID.Raw
		}
	}
	return nil
}

// writeClient writes refusal frames to the client, serialised with the
// Downstream pump's writes. A client that is gone gets no answer: the
// refused frame stays refused and recorded, and Downstream reports the
// broken pipe when it next writes.
func (r *Relay) writeClient(p []byte) {
	r.wmu.Lock()
	r.cfg.Client.Write(p)
	r.wmu.Unlock()
}

// The refusal frame. These are part of the wire format: the
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

	// data.aegis.code, spelled in gate (gate.CodePolicyDenied and the
	// rest say when each is written). A parked call (Config.Approvals) is
	// answered APPROVAL_DENIED or APPROVAL_TIMEOUT when it is not released.
	CodePolicyDenied    = gate.CodePolicyDenied
	CodeRateLimited     = gate.CodeRateLimited
	CodePendingApproval = gate.CodePendingApproval
	CodeHostDenied      = gate.CodeHostDenied
	CodeToolChanged     = gate.CodeToolChanged
	CodeApprovalDenied  = gate.CodeApprovalDenied
	CodeApprovalTimeout = gate.CodeApprovalTimeout
)

// Reasons of the host_denied outcomes of a refused frame.
const (
	ReasonNotExecuted = "not executed"
	ReasonSibling     = "not executed: sibling call in this batch was refused"
)

// Refusals of calls no rule is asked about: a parser differential could
// make the child run another tool than the one aegis would judge.
func refuseMalformed(set string) gate.Decision {
	return gate.Decision{Verdict: gate.Denied, Set: set}
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

// AppendRefusalReason is AppendRefusal with data.aegis.reason, when reason
// is not "" (valid UTF-8: an approver's reason, bounded by package
// approval).
func AppendRefusalReason(dst, id []byte, code, rule, reason string) []byte {
	dst = AppendRefusal(dst, id, code, rule, 0)
	if reason == "" {
		return dst
	}
	dst = append(dst[:len(dst)-len("}}}}")], `,"reason":`...)
	dst = appendJSONString(dst, reason)
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
