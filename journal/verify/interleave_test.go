package verify

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestInterleavedSessions: sessions that share one log through
// journal.Session handles (wrap --listen) interleave their records; each
// record belongs to the live session its sid names. A session still live
// when the log ends is incomplete; a record of a session that a recovery
// closed, or one after its session_end, is invalid.
func TestInterleavedSessions(t *testing.T) {
	type step struct {
		who  int    // handle index
		what string // start, call, end
	}
	ordered := []step{{0, "start"}, {1, "start"}, {0, "call"}, {1, "call"}, {1, "call"}, {0, "end"}, {1, "call"}, {1, "end"}}
	tests := []struct {
		name  string
		steps []step
		want  Status
		msg   string // a problem or gap must contain it
	}{
		{"interleaved, both ended", ordered, Valid, ""},
		{"one never ends", ordered[:len(ordered)-1], Incomplete, "has no session_end"},
		{"after session_end", append(append([]step{}, ordered...), step{0, "call"}), Invalid, "after session_end"},
		{"record of no session", []step{{0, "start"}, {1, "call"}, {0, "end"}}, Invalid, "outside its session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			// The journal's sid is the first session's: its certificate names it.
			j, err := journal.Open(path, journal.Options{Key: testKey(t), Durability: mustDurability(t, "reply"), SID: [16]byte{1}})
			if err != nil {
				t.Fatal(err)
			}
			hs := []*journal.Journal{j.Session([16]byte{1}), j.Session([16]byte{2})}
			counts := make([]record.Counts, len(hs))
			calls := newCallRecords()
			for _, s := range tc.steps {
				h := hs[s.who]
				switch s.what {
				case "start":
					_, err = h.Append(&record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "reply"})
				case "call":
					err = calls.call(h, s.who+1)
					counts[s.who].Intents++
					counts[s.who].Outcomes++
				case "end":
					var seq uint64
					seq, err = h.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: counts[s.who]})
					if err == nil {
						err = h.Wait(seq, journal.BeforeResponse)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			rep := verifyFile(t, path, Options{})
			if rep.Status != tc.want {
				t.Fatalf("Status = %v (problems %v, gaps %v); want %v", rep.Status, rep.Problems, rep.Gaps, tc.want)
			}
			if tc.msg != "" && !strings.Contains(fmtProblems(rep), tc.msg) {
				t.Errorf("findings %s; want one containing %q", fmtProblems(rep), tc.msg)
			}
		})
	}
}

func fmtProblems(rep *Report) string {
	var b strings.Builder
	for _, p := range append(append([]Problem{}, rep.Problems...), rep.Gaps...) {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}
