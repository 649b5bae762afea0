package verify

import (
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// decidedGolden is the golden log of intents whose policy names the
// deciding rule's line and a refusal's reason (record's tests decode it);
// -update rewrites it.
var decidedGolden = filepath.Join("..", "record", "testdata", "decided.jsonl")

// TestDecidedGolden: a session whose intents carry the policy's line and
// reason is written as the golden file holds it, and verifies.
func TestDecidedGolden(t *testing.T) {
	const set = "sha256:6eae3d527e3bd264564217ebcda6713e5836cc31d16f03dffa0d0321a43b8dae"
	const rule = `rules[0] read_file when mcp.tool.arguments.path.startsWith("/srv/data/")`
	got := writeSteps(t, []roundsStep{
		{"start", func(map[string]uint64) record.Body {
			return &record.SessionStart{Aegis: "golden", Argv: []string{"server-fs"}, Durability: "none", PolicySet: set}
		}},
		{"i1", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("1"), Tool: []byte("read_file"), HasTool: true, RequestDigest: sum("q1"),
				Verdict: record.VerdictAllowed, Rule: rule, Set: set, RuleLine: 4}
		}},
		{"o1", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("1"), Intent: s["i1"], ResponseDigest: sum("a1"), HasResponse: true, Status: record.StatusOK, LatencyNS: 100}
		}},
		{"i2", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("2"), Tool: []byte("read_file"), HasTool: true, RequestDigest: sum("q2"),
				Verdict: record.VerdictDenied, Rule: rule, Set: set, RuleLine: 4, Refused: true,
				PolicyReason: `arguments: duplicate key "path"`}
		}},
		{"o2", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("2"), Intent: s["i2"], Status: record.StatusHostDenied, Reason: "not executed"}
		}},
		{"i3", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("3"), Tool: []byte("read_file"), HasTool: true, RequestDigest: sum("q3"),
				Verdict: record.VerdictDenied, Rule: rule, Set: set, RuleLine: 4, Refused: true,
				PolicyReason: "condition: no such key: path"}
		}},
		{"o3", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("3"), Intent: s["i3"], Status: record.StatusHostDenied, Reason: "not executed"}
		}},
		{"end", func(s map[string]uint64) record.Body {
			return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 3, FramesOut: 3, Intents: s["#intents"], Outcomes: s["#outcomes"], Refused: 2}}
		}},
	})
	checkGolden(t, decidedGolden, got)
}
