package verify

import (
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// approvalsGolden is the golden log of a session whose approve rule parked
// three calls: one approved, one denied, one expired (record's tests
// decode it); -update rewrites it.
var approvalsGolden = filepath.Join("..", "record", "testdata", "approvals.jsonl")

// TestApprovalsGolden: parked intents, approval records of every decision
// and the outcomes that follow them are written as the golden file holds
// them, and verify.
func TestApprovalsGolden(t *testing.T) {
	checkGolden(t, approvalsGolden, writeSteps(t, approvalsSteps()))
}

// approvalsSet is the rule set of approvalsSteps' session.
const approvalsSet = "sha256:1d506e6a4fc13593145c469d99002db90c53c4636e1b582b7d707636221ad6c0"

// parkedIntent is the step of an intent an approve rule parks under id.
func parkedIntent(id string, call string) func(map[string]uint64) record.Body {
	return func(map[string]uint64) record.Body {
		return &record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte(call)}, Tool: []byte("write_file"), HasTool: true,
			Verdict: record.VerdictPendingApproval, Rule: "rules[0] write_file", Set: approvalsSet, RuleLine: 4,
			Approval: &record.ApprovalTerms{ID: id, Server: "files", Caller: "uid:1000", TimeoutMS: 300000}}
	}
}

// approvalsSteps are the golden log's: three calls parked, one approved,
// one denied, one expired.
func approvalsSteps() []roundsStep {
	const set = approvalsSet
	parked := parkedIntent
	return []roundsStep{
		{"start", func(map[string]uint64) record.Body {
			return &record.SessionStart{Aegis: "golden", Argv: []string{"mcp-server-filesystem"}, Name: "files", Durability: "none", PolicySet: set}
		}},
		{"in1", parked("0123456789abcdef", "1")},
		{"in2", parked("fedcba9876543210", "2")},
		{"in3", parked("00112233aabbccdd", "3")},
		{"ok1", func(s map[string]uint64) record.Body {
			return &record.Approval{ID: "0123456789abcdef", Intent: s["in1"], Decision: record.ApprovalApproved, HasBy: true, UID: 1000, User: "ann",
				Grant: record.GrantPrefix + "0123456789abcdef"}
		}},
		{"out1", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, Intent: s["in1"], HasResponse: true, Status: record.StatusOK, LatencyNS: 1000}
		}},
		{"no2", func(s map[string]uint64) record.Body {
			return &record.Approval{ID: "fedcba9876543210", Intent: s["in2"], Decision: record.ApprovalDenied, HasBy: true, UID: 1000, User: "ann",
				Reason: "not on \"prod\"", Grant: record.GrantDenyAll}
		}},
		{"out2", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: record.Call{Type: record.IDNumber, Text: []byte("2")}, Intent: s["in2"], Status: record.StatusHostDenied, Reason: "not executed: approval denied"}
		}},
		{"exp3", func(s map[string]uint64) record.Body {
			return &record.Approval{ID: "00112233aabbccdd", Intent: s["in3"], Decision: record.ApprovalExpired, Reason: "no decision within 5m0s", Grant: record.GrantDenyAll}
		}},
		{"out3", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: record.Call{Type: record.IDNumber, Text: []byte("3")}, Intent: s["in3"], Status: record.StatusHostDenied, Reason: "not executed: approval expired"}
		}},
		{"end", func(map[string]uint64) record.Body {
			return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 3, FramesOut: 1, Intents: 3, Outcomes: 3, Refused: 2}}
		}},
	}
}
