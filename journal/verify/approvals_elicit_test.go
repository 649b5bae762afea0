package verify

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// approvalsElicitGolden is the golden log of approvals asked inside the
// protocol (wrap --approval-elicitation): -update rewrites it.
var approvalsElicitGolden = filepath.Join("..", "record", "testdata", "approvals_elicit.jsonl")

// elicitSteps: call 1 parks under id, aegis answers it input_required
// (the elicitation keyed aegis-approval-<id>), the approver approves,
// the client's retry (call 2, round 2 by match of that outcome) parks
// under the same id and is released, answered ok; call 3 parks, is
// asked, its retry (call 4) comes before the decision, which denies it.
func elicitSteps() []roundsStep {
	const id, id3 = "0123456789abcdef", "fedcba9876543210"
	parked := func(id, call, digest string, of string, elicit bool) func(map[string]uint64) record.Body {
		return func(s map[string]uint64) record.Body {
			in := &record.Intent{Call: num(call), Tool: []byte("write_file"), HasTool: true, RequestDigest: sum(digest),
				Verdict: record.VerdictPendingApproval, Rule: "rules[0] write_file", Set: approvalsSet, RuleLine: 4,
				Approval: &record.ApprovalTerms{ID: id, Server: "files", Caller: "token:0011223344556677", TimeoutMS: 300000, Elicit: elicit}}
			if of != "" {
				in.Round = record.Round{Of: s[of], HasOf: true, By: record.RoundByMatch, N: 2}
				in.InputResponses = []record.InputResponse{{Key: bv(record.ElicitKeyPrefix + id), Action: record.ActionAccept}}
			}
			return in
		}
	}
	asked := func(id, call, intent string) func(map[string]uint64) record.Body {
		return func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num(call), Intent: s[intent], ResponseDigest: sum("asked " + id), HasResponse: true, Status: record.StatusInputRequired,
				ResultType: bv("input_required"), HasResultType: true,
				InputRequests: []record.InputRequest{{Key: bv(record.ElicitKeyPrefix + id), Method: bv("elicitation/create"), HasMethod: true}}}
		}
	}
	return []roundsStep{
		{"start", func(map[string]uint64) record.Body {
			return &record.SessionStart{Aegis: "golden", Argv: []string{"server"}, Name: "files", Durability: "none", PolicySet: approvalsSet}
		}},
		{"in1", parked(id, "1", "q1", "", true)},
		{"ask1", asked(id, "1", "in1")},
		{"ok1", func(s map[string]uint64) record.Body {
			return &record.Approval{ID: id, Intent: s["in1"], RequestDigest: sum("q1"), Decision: record.ApprovalApproved, HasBy: true,
				Principal: "token:8899aabbccddeeff", Grant: record.GrantPrefix + id}
		}},
		{"in2", parked(id, "2", "q2", "ask1", true)},
		{"out2", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("2"), Intent: s["in2"], ResponseDigest: sum("a2"), HasResponse: true, Status: record.StatusOK, LatencyNS: 200}
		}},
		{"in3", parked(id3, "3", "q3", "", true)},
		{"ask3", asked(id3, "3", "in3")},
		{"in4", parked(id3, "4", "q4", "ask3", true)},
		{"no3", func(s map[string]uint64) record.Body {
			return &record.Approval{ID: id3, Intent: s["in3"], RequestDigest: sum("q3"), Decision: record.ApprovalDenied, HasBy: true,
				Principal: "token:8899aabbccddeeff", Reason: "not today", Grant: record.GrantDenyAll}
		}},
		{"out4", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("4"), Intent: s["in4"], Status: record.StatusHostDenied, Reason: "not executed: approval denied"}
		}},
		{"end", func(map[string]uint64) record.Body {
			return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 4, FramesOut: 1, Intents: 4, Outcomes: 4, Refused: 1}}
		}},
	}
}

// TestApprovalsElicitGolden: the records of approvals asked inside the
// protocol are written as the golden file holds them, and verify; and
// logs with one thing about them changed do not: an input_required
// outcome of a parked call whose terms do not ask inside the protocol,
// or that asks under another key, or with a state; a second intent under
// the id that is not the retry of aegis's answer, or a second retry; a
// retry answered though denied, or before the decision.
func TestApprovalsElicitGolden(t *testing.T) {
	checkGolden(t, approvalsElicitGolden, writeSteps(t, elicitSteps()))
	const id = "0123456789abcdef"
	intent := func(edit func(*record.Intent)) func(func(map[string]uint64) record.Body) func(map[string]uint64) record.Body {
		return func(orig func(map[string]uint64) record.Body) func(map[string]uint64) record.Body {
			return func(s map[string]uint64) record.Body { b := orig(s).(*record.Intent); edit(b); return b }
		}
	}
	outcome := func(edit func(*record.Outcome)) func(func(map[string]uint64) record.Body) func(map[string]uint64) record.Body {
		return func(orig func(map[string]uint64) record.Body) func(map[string]uint64) record.Body {
			return func(s map[string]uint64) record.Body { b := orig(s).(*record.Outcome); edit(b); return b }
		}
	}
	edit := func(name string, f func(func(map[string]uint64) record.Body) func(map[string]uint64) record.Body) func([]roundsStep) []roundsStep {
		return func(s []roundsStep) []roundsStep {
			i := slices.IndexFunc(s, func(st roundsStep) bool { return st.name == name })
			return replaced(s, name, f(s[i].body))
		}
	}
	for _, tc := range []struct {
		name string
		edit func([]roundsStep) []roundsStep
		want string
	}{
		{"asked without elicitation terms", edit("in1", intent(func(in *record.Intent) { in.Approval.Elicit = false })),
			`outcome of intent seq 1, parked for approval "0123456789abcdef", comes before any decision (status input_required`},
		{"asked under another key", edit("ask1", outcome(func(o *record.Outcome) { o.InputRequests[0].Key = bv(record.ElicitKeyPrefix + "fedcba9876543210") })),
			`comes before any decision (status input_required`},
		{"asked with a state", edit("ask1", outcome(func(o *record.Outcome) { o.RequestState, o.HasRequestState = sum("s"), true })),
			`comes before any decision (status input_required`},
		{"asked by a form", edit("ask1", outcome(func(o *record.Outcome) {
			o.InputRequests = append(o.InputRequests, record.InputRequest{Key: bv("name"), Method: bv("elicitation/create"), HasMethod: true})
		})), `comes before any decision (status input_required`},
		{"retry not linked to the answer", edit("in2", intent(func(in *record.Intent) { in.Round = record.Round{} })),
			`approval id "0123456789abcdef" parks a second call`},
		{"retry without elicitation terms", edit("in2", intent(func(in *record.Intent) { in.Approval.Elicit = false })),
			`approval id "0123456789abcdef" parks a second call`},
		{"a second retry", func(s []roundsStep) []roundsStep {
			return after(s, "out2", roundsStep{"in2b", func(m map[string]uint64) record.Body {
				in := elicitSteps()[4].body(m).(*record.Intent)
				in.Call = num("5")
				return in
			}})
		}, `approval id "0123456789abcdef" parks a second call`},
		{"retry answered though denied", edit("out4", outcome(func(o *record.Outcome) {
			o.Status, o.Reason, o.HasResponse = record.StatusOK, "", true
		})), `has status ok after its approval "fedcba9876543210" was denied`},
		{"retry answered before the decision", func(s []roundsStep) []roundsStep {
			s = without(s, "out4")
			return after(s, "in4", roundsStep{"out4", func(m map[string]uint64) record.Body {
				return &record.Outcome{Call: num("4"), Intent: m["in4"], ResponseDigest: sum("a4"), HasResponse: true, Status: record.StatusOK, LatencyNS: 1}
			}})
		}, `comes before any decision (status ok`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyBytes(t, writeSteps(t, tc.edit(elicitSteps())), Options{Key: fuzzPub})
			if rep.Status != Invalid || !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return strings.Contains(p.Msg, tc.want) }) {
				t.Fatalf("Verify = %v %v; want invalid, a problem saying %s", rep.Status, rep.Problems, tc.want)
			}
		})
	}
	_ = id
}
