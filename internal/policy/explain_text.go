package policy

import (
	"fmt"
	"io"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
)

// WriteExplanation writes what aegis policy explain says of tool: the
// verdict and the rule that gives it (Explain), then one indented line
// for each thing that changes what a call meets (an approval, a
// condition, a rate, later rules that also match). It names the refusal
// codes a client receives.
func (p *Policy) WriteExplanation(w io.Writer, tool string) {
	e := p.Explain(tool)
	if e.Malformed != "" {
		fmt.Fprintf(w, "%q: refused (%s) whatever the rules: %s\n", tool, gate.CodePolicyDenied, e.Malformed)
		return
	}
	verdict := map[Action]string{Allow: "allowed", Deny: "denied (" + gate.CodePolicyDenied + ")",
		Approve: "parked for approval"}[e.Action]
	var why string
	switch {
	case e.Rule < 0:
		why = fmt.Sprintf("by the default (%s:%d): no rule matches", p.file, e.Line)
	case e.Exact:
		why = fmt.Sprintf("by %s (%s:%d): the exact name", e.Label, p.file, e.Line)
	default:
		why = fmt.Sprintf("by %s (%s:%d): the glob %q matches", e.Label, p.file, e.Line, p.rules[e.Rule].Tool)
	}
	fmt.Fprintf(w, "%q: %s %s\n", tool, verdict, why)
	if e.Action == Approve {
		fmt.Fprintf(w, "  the call waits for aegis approve ID (sent to the server) or aegis deny ID (%s), or, over --listen, the approvals page, at most --approval-timeout (%s); refused at once (%s) with --approval-timeout 0, in a batch, or when the parked calls are at their bound\n",
			gate.CodeApprovalDenied, gate.CodeApprovalTimeout, gate.CodePendingApproval)
	}
	if e.When != "" {
		fmt.Fprintf(w, "  only when its condition holds for the call; otherwise the next rule that matches decides, or the default\n")
	}
	if e.Rate.N > 0 {
		fmt.Fprintf(w, "  rate %s: %d calls at once, then one every %v; over it, %s with retry_after_ms\n",
			e.Rate, e.Rate.N, e.Rate.Per/time.Duration(e.Rate.N), gate.CodeRateLimited)
	}
	for _, i := range e.Also {
		r := &p.rules[i]
		fmt.Fprintf(w, "  %s (line %d, %s) matches too but comes later: first match wins\n", r.Label(), r.Line, r.Action)
	}
}
