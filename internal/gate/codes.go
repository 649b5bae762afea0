package gate

// The codes of the refusal frame's data.aegis.code, one per reason a
// call is kept from the child. They are part of the wire format (clients
// key on them) and are spelled here, beside the verdicts they follow
// from, so that the relay that writes them and a policy that explains
// them share one spelling.
const (
	CodePolicyDenied    = "POLICY_DENIED"    // a deny rule, the default, or a malformed call
	CodeRateLimited     = "RATE_LIMITED"     // over the rule's rate; retry_after_ms says when
	CodePendingApproval = "PENDING_APPROVAL" // an approve rule, or a Parked decision: answered at once, never held
	CodeHostDenied      = "HOST_DENIED"      // not itself refused: a sibling in its batch was
	CodeToolChanged     = "TOOL_CHANGED"     // the tool's definition differs from its pin (on_tool_change: block)
	// A parked call is answered by one of these when it is not released.
	CodeApprovalDenied  = "APPROVAL_DENIED"  // an approver denied it; data.aegis.reason is theirs
	CodeApprovalTimeout = "APPROVAL_TIMEOUT" // no decision within the approvals' timeout
)
