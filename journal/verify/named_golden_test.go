package verify

import (
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// namedGolden is the golden log of a session_start that names its server
// and client (record's tests decode it); -update rewrites it.
var namedGolden = filepath.Join("..", "record", "testdata", "named.jsonl")

// TestNamedGolden: a session whose session_start carries name and client
// is written as the golden file holds it, and verifies.
func TestNamedGolden(t *testing.T) {
	got := writeSteps(t, []roundsStep{
		{"start", func(map[string]uint64) record.Body {
			return &record.SessionStart{Aegis: "golden", Argv: []string{"npx", "-y", "@modelcontextprotocol/server-memory"},
				Name: "server-memory", Client: "claude-desktop", Durability: "none", PolicySet: record.PassThroughSet}
		}},
		{"i1", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("1"), Tool: []byte("read_graph"), HasTool: true, RequestDigest: sum("q1")}
		}},
		{"o1", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("1"), Intent: s["i1"], ResponseDigest: sum("a1"), HasResponse: true, Status: record.StatusOK, LatencyNS: 100}
		}},
		{"end", func(s map[string]uint64) record.Body {
			return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 1, FramesOut: 1, Intents: s["#intents"], Outcomes: s["#outcomes"]}}
		}},
	})
	checkGolden(t, namedGolden, got)
}
