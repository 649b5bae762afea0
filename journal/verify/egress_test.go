package verify

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// egressRec makes an egress record of connection conn (0: a log before
// opening records) to localhost:8443, naming the intents in as in flight.
func egressRec(conn uint64, open bool, decision string, in ...string) func(map[string]uint64) record.Body {
	return func(s map[string]uint64) record.Body {
		e := &record.Egress{Host: "localhost", Port: 8443, Method: "CONNECT", Decision: decision, SNI: "localhost",
			Conn: conn, Open: open, InFlight: []uint64{}}
		if decision == record.EgressAllowed {
			e.Addr, e.Grant = "127.0.0.1:8443", "localhost:8443"
			if !open {
				e.BytesUp, e.BytesDown, e.DurationMS = 517, 4096, 12
			}
		} else {
			e.Reason = "no grant"
		}
		for _, n := range in {
			e.InFlight = append(e.InFlight, s[n])
		}
		return e
	}
}

// edited is an egress step's record with f applied.
func edited(body func(map[string]uint64) record.Body, f func(*record.Egress)) func(map[string]uint64) record.Body {
	return func(s map[string]uint64) record.Body {
		e := body(s).(*record.Egress)
		f(e)
		return e
	}
}

// egressSteps are a confined session's under --allow-egress: a call in
// flight while connection 1 is opened and ends, connection 2 refused,
// connection 3 opened and ended after the call's outcome.
func egressSteps() []roundsStep {
	return []roundsStep{
		{"start", func(map[string]uint64) record.Body {
			return &record.SessionStart{Aegis: "test", Argv: []string{"server"}, Name: "fetch", Durability: "none", PolicySet: "pass-through",
				Confine: &record.ConfineRequest{Egress: []string{"localhost:8443"}}}
		}},
		{"in1", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("1"), Tool: []byte("fetch"), HasTool: true, Verdict: record.VerdictPassThrough, Set: "pass-through"}
		}},
		{"open1", egressRec(1, true, record.EgressAllowed, "in1")},
		{"close1", egressRec(1, false, record.EgressAllowed, "in1")},
		{"refused2", egressRec(2, false, record.EgressRefused, "in1")},
		{"out1", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("1"), Intent: s["in1"], HasResponse: true, Status: record.StatusOK, LatencyNS: 1000}
		}},
		{"open3", egressRec(3, true, record.EgressAllowed, "in1")},
		{"close3", egressRec(3, false, record.EgressAllowed, "in1")},
		{"end", func(s map[string]uint64) record.Body {
			return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 1, FramesOut: 1, Intents: 1, Outcomes: 1}}
		}},
	}
}

// TestEgressPairing: logs like a confined session's under
// --allow-egress, written and signed by the journal's writer, each with
// one thing about its egress records changed, are invalid, the first
// finding naming it, at the record it is about (at); an untouched
// one, one whose records predate opening records, and one whose open
// connection a crash left (no session_end: incomplete, a note) are not.
func TestEgressPairing(t *testing.T) {
	allowed, refused := record.EgressAllowed, record.EgressRefused
	for _, tc := range []struct {
		name string
		edit func([]roundsStep) []roundsStep
		at   string // the step the problem is at; "" for valid
		want string
	}{
		{"as written", func(s []roundsStep) []roundsStep { return s }, "", ""},
		{"before opening records", func(s []roundsStep) []roundsStep {
			s = without(without(s, "open1"), "open3")
			s = replaced(s, "close1", egressRec(0, false, allowed, "in1"))
			s = replaced(s, "refused2", egressRec(0, false, refused, "in1"))
			return replaced(s, "close3", egressRec(0, false, allowed))
		}, "", ""},
		{"closed, never opened", func(s []roundsStep) []roundsStep {
			return without(s, "open1")
		}, "close1", "egress connection 1 ends allowed, but no opening record of this session opened it"},
		{"opened twice", func(s []roundsStep) []roundsStep {
			return after(s, "open1", roundsStep{"again", egressRec(1, true, allowed, "in1")})
		}, "again", "egress connection 1 opened again"},
		{"opened after it ended", func(s []roundsStep) []roundsStep {
			return after(s, "close1", roundsStep{"again", egressRec(1, true, allowed, "in1")})
		}, "again", "egress connection 1 opened again"},
		{"opened under a refused number", func(s []roundsStep) []roundsStep {
			return replaced(s, "open3", egressRec(2, true, allowed, "in1"))
		}, "open3", "egress connection 2 opened again"},
		{"closed twice", func(s []roundsStep) []roundsStep {
			return after(s, "close1", roundsStep{"again", egressRec(1, false, allowed, "in1")})
		}, "again", "egress connection 1 recorded again: an earlier record of this session ended it"},
		{"refused under an ended number", func(s []roundsStep) []roundsStep {
			return replaced(s, "refused2", egressRec(1, false, refused, "in1"))
		}, "refused2", "egress connection 1 recorded again"},
		{"opened, ends refused", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", egressRec(1, false, refused, "in1"))
		}, "close1", "egress connection 1, opened as allowed, ends refused"},
		{"ends to another host", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", edited(egressRec(1, false, allowed, "in1"), func(e *record.Egress) { e.Host = "example.com" }))
		}, "close1", `egress connection 1 ends with host "example.com" (opened to "localhost")`},
		{"ends to another port", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", edited(egressRec(1, false, allowed, "in1"), func(e *record.Egress) { e.Port = 443 }))
		}, "close1", "ends with port 443 (opened to 8443)"},
		{"ends by another method", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", edited(egressRec(1, false, allowed, "in1"), func(e *record.Egress) { e.Method = "GET" }))
		}, "close1", `ends with method "GET"`},
		{"ends at another address", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", edited(egressRec(1, false, allowed, "in1"), func(e *record.Egress) { e.Addr = "10.0.0.1:8443" }))
		}, "close1", `ends with address "10.0.0.1:8443" (opened to "127.0.0.1:8443")`},
		{"ends by another grant", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", edited(egressRec(1, false, allowed, "in1"), func(e *record.Egress) { e.Grant = "*.localhost:8443" }))
		}, "close1", `ends with grant "*.localhost:8443"`},
		{"ends with another server name", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", edited(egressRec(1, false, allowed, "in1"), func(e *record.Egress) { e.SNI = "" }))
		}, "close1", `ends with sni "" (opened with "localhost")`},
		{"ends with other calls in flight", func(s []roundsStep) []roundsStep {
			return replaced(s, "close1", egressRec(1, false, allowed))
		}, "close1", "ends with in_flight [] (opened with [1])"},
		{"in flight: no intent", func(s []roundsStep) []roundsStep {
			return replaced(s, "refused2", egressRec(2, false, refused, "open1"))
		}, "refused2", "egress record names intent seq 2 as in flight, which is no intent of a call of this session before it"},
		{"in flight: an outcome", func(s []roundsStep) []roundsStep {
			s = replaced(s, "open3", egressRec(3, true, allowed, "out1"))
			return replaced(s, "close3", egressRec(3, false, allowed, "out1"))
		}, "open3", "names intent seq 5 as in flight"},
		{"in flight: too many", func(s []roundsStep) []roundsStep {
			return replaced(s, "refused2", edited(egressRec(2, false, refused), func(e *record.Egress) {
				for range record.MaxEgressInFlight + 1 {
					e.InFlight = append(e.InFlight, 1)
				}
			}))
		}, "refused2", "egress record names 65 calls in flight; at most 64"},
		{"session ends with a connection open", func(s []roundsStep) []roundsStep {
			return without(s, "close3")
		}, "end", "egress connection 3 opened, not closed, in a session that ended"},
		{"egress in a session granting none", func(s []roundsStep) []roundsStep {
			return replaced(s, "start", func(map[string]uint64) record.Body {
				return &record.SessionStart{Aegis: "test", Argv: []string{"server"}, Name: "fetch", Durability: "none", PolicySet: "pass-through"}
			})
		}, "open1", "egress record in a session whose session_start grants no egress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := tc.edit(egressSteps())
			log := writeSteps(t, steps)
			rep := verifyBytes(t, log, Options{Key: fuzzPub})
			if tc.want == "" {
				if rep.Status != Valid || len(rep.Notes) != 0 {
					t.Fatalf("Verify = %v %v, notes %q; want valid, no note", rep.Status, rep.Problems, rep.Notes)
				}
				return
			}
			seq := uint64(slices.IndexFunc(steps, func(s roundsStep) bool { return s.name == tc.at }))
			if rep.Status != Invalid || len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0].Msg, tc.want) || rep.Problems[0].Seq != seq {
				t.Fatalf("Verify = %v %v; want invalid, the first problem at seq %d saying %s", rep.Status, rep.Problems, seq, tc.want)
			}
		})
	}
}

// TestEgressCut: a log a crash cut (no session_end) with a connection
// opened and not closed is incomplete for the session's lack of an end,
// with no problem, and a note naming the connection: its opening record
// is what a crash leaves of it.
func TestEgressCut(t *testing.T) {
	steps := egressSteps()
	steps = without(without(steps, "end"), "close3")
	rep := verifyBytes(t, writeSteps(t, steps), Options{Key: fuzzPub})
	want := "session c3010203000000000000000000000000: egress connection 3 opened, not closed (the log ends)"
	if rep.Status != Incomplete || len(rep.Problems) != 0 || !slices.Equal(rep.Notes, []string{want}) {
		t.Fatalf("Verify = %v, problems %v, gaps %v, notes %q; want incomplete, no problem, the note %q", rep.Status, rep.Problems, rep.Gaps, rep.Notes, want)
	}
}

// TestEgressOtherSession: on a log two sessions share (wrap --listen),
// an egress record naming as in flight an intent of the other session
// is invalid; naming its own session's is not.
func TestEgressOtherSession(t *testing.T) {
	for _, other := range []bool{false, true} {
		t.Run(fmt.Sprintf("other=%v", other), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			j, err := journal.Open(path, journal.Options{Key: testKey(t), Durability: mustDurability(t, "none"), SID: [16]byte{1}})
			if err != nil {
				t.Fatal(err)
			}
			a, b := j.Session([16]byte{1}), j.Session([16]byte{2})
			start := &record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "none",
				Confine: &record.ConfineRequest{Egress: []string{"localhost:8443"}}}
			intent := &record.Intent{Call: num("1"), Tool: []byte("fetch"), HasTool: true, Verdict: record.VerdictPassThrough, Set: "pass-through"}
			var inA, inB, refusedAt uint64
			must := func(seq uint64, err error) uint64 {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				return seq
			}
			must(a.Append(start))
			must(b.Append(start))
			inA = must(a.Append(intent))
			inB = must(b.Append(intent))
			named := inA
			if other {
				named = inB
			}
			refusedAt = must(a.Append(&record.Egress{Host: "localhost", Port: 8443, Method: "CONNECT", Decision: record.EgressRefused, Reason: "no grant",
				InFlight: []uint64{named}, Conn: 1}))
			for _, h := range []struct {
				j  *journal.Journal
				in uint64
			}{{a, inA}, {b, inB}} {
				must(h.j.Append(&record.Outcome{Call: num("1"), Intent: h.in, HasResponse: true, Status: record.StatusOK, LatencyNS: 1000}))
				must(h.j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 1, Outcomes: 1}}))
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			rep := verifyFile(t, path, Options{})
			if !other {
				if rep.Status != Valid {
					t.Fatalf("Verify = %v %v; want valid", rep.Status, rep.Problems)
				}
				return
			}
			want := fmt.Sprintf("names intent seq %d as in flight, which is no intent of a call of this session", inB)
			if rep.Status != Invalid || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Msg, want) || rep.Problems[0].Seq != refusedAt {
				t.Fatalf("Verify = %v %v; want invalid, one problem at seq %d saying %s", rep.Status, rep.Problems, refusedAt, want)
			}
		})
	}
}
