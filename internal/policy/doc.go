// Package policy reads aegis's tool-identity policy files and decides, by
// tool name alone, whether a tools/call may reach the child. Its Gate
// implements gate.Gate: the relay asks it about every well-formed call
// before the frame carrying the call may move, and refuses the rest itself.
// It imports the gate contract alone of the relay's side, never the relay
// or the journal: a decision is a gate.Decision, which the relay records.
//
// # The file (version 1)
//
// One YAML document, a mapping with exactly these keys:
//
//	version: 1                # required; the only version
//	default: deny             # required: allow | deny, for tools no rule matches
//	rules:                    # optional list; first match wins
//	  - tool: read_file       # required: an exact name or a glob
//	    action: allow         # required: allow | deny | approve
//	  - tool: "fs_*"
//	    action: allow
//	    rate: 10/m            # optional, allow rules only: a token bucket per rule
//	  - tool: "delete_*"
//	    action: deny
//	  - tool: write_file
//	    action: approve       # parked until a person decides (see Decisions)
//	on_tool_change: block     # optional: block | warn | allow (default warn)
//
// on_tool_change says what happens to a call to a tool whose definition
// differs from the one pinned for the server (package pin): block refuses
// it TOOL_CHANGED until a person runs aegis pin accept, warn relays it and
// says so on stderr, allow relays it; the change is recorded under all
// three (toolchange.go).
//
// Decoding is strict, and every problem is reported with file, line and
// column before anything starts (Parse returns them all, as a *Error):
// unknown and duplicate keys, values of the wrong type (tool: 123 is an
// integer; quote it), bad patterns, bad rates, a rate on a rule that is not
// allow, a rule that can never match because an earlier one matches every
// tool it does, anchors and aliases, tags other than !!str, and a second
// YAML document.
//
// Patterns (see glob.go): '*' is any run of characters, '/' included; '?'
// one character; '\' escapes the next; '[', ']', '{' and '}' are reserved.
// Names are compared with the decoded params.name byte for byte: matching
// is case-sensitive and does no Unicode normalisation, as MCP servers look
// tools up ("Delete_all" and "delete_all" with a Cyrillic "е" are other
// tools, which a server without them answers "unknown tool"; a policy that
// must not let unknown names through says default: deny).
//
// Rates are N/s, N/m, N/h, N/d or N/<Go duration> (5/30s): a bucket of N
// tokens that refills at N per period, full at start. The N+1th call in a
// window is refused with RATE_LIMITED and a retry_after_ms; the calls of one
// frame (a batch) take their tokens together and only if the frame is
// relayed, so calls that never ran never count.
//
// # Decisions
//
// The rule set is named by the SHA-256 of the file's bytes ("sha256:…"),
// recorded in session_start, in every intent, and in policy_reload. The
// deciding rule is named "rules[i] <pattern>" (i from 0), or "default".
// A deny rule (or default: deny) decides gate.Denied, an approve rule
// gate.PendingApproval, an allow rule over its rate gate.RateLimited, and
// any other allow gate.Allowed. What becomes of an approve rule's call is
// the relay's: it parks the call (recorded pending_approval, neither
// forwarded nor refused) until aegis approve (or, over --listen, the
// approvals page) sends it to the server, aegis deny refuses it
// (APPROVAL_DENIED), or --approval-timeout passes (APPROVAL_TIMEOUT);
// with --approval-timeout 0, in a batch, or when the parked calls are at
// their bound, it refuses the call at once (PENDING_APPROVAL).
//
// Decisions are lookups, not a scan of the rules (see index.go): exact
// names by map, globs by their literal prefix or suffix; only globs with
// neither ("*x*") are scanned, and their answers are cached per name.
//
// # Reload
//
// Gate.Reload swaps the whole rule set atomically; a frame keeps the set
// it was decided under. An invalid file is rejected and the old set stays.
// Both outcomes are recorded (by the caller's record function) before the
// swap. Token buckets of rules with the same pattern and rate carry over,
// so reloading the same file does not refill them. Watcher reports changes
// of the file; aegis wrap also reloads on SIGHUP.
package policy
