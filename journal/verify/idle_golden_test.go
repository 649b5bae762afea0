package verify

import (
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// idleGolden is the golden log of a session the HTTP front ended for
// idleness (record's tests decode it); -update rewrites it.
var idleGolden = filepath.Join("..", "record", "testdata", "idle.jsonl")

// TestIdleGolden: a session whose session_end says idle is written as the
// golden file holds it, and verifies.
func TestIdleGolden(t *testing.T) {
	got := writeSteps(t, []roundsStep{
		{"start", func(map[string]uint64) record.Body {
			return &record.SessionStart{Aegis: "golden", Argv: []string{"mcp-server-everything"}, Name: "mcp-server-everything",
				Transport: "http", Peer: "127.0.0.1:50000", Principal: "none", Durability: "none", PolicySet: record.PassThroughSet}
		}},
		{"end", func(s map[string]uint64) record.Body {
			return &record.SessionEnd{Reason: record.EndIdle, Counts: record.Counts{FramesIn: 2, FramesOut: 1}}
		}},
	})
	checkGolden(t, idleGolden, got)
}
