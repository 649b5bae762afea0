package verify

import (
	"slices"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestApprovalsTampered: logs like the approvals golden one, each written
// and signed by the journal's writer with one thing about its approvals
// changed, are invalid, each with the finding that names what is wrong;
// a parked call no one decided before the session ended, with the outcome
// that says so, is valid.
func TestApprovalsTampered(t *testing.T) {
	approval := func(id string, intent string, decision, grant string) func(map[string]uint64) record.Body {
		return func(s map[string]uint64) record.Body {
			a := &record.Approval{ID: id, Intent: s[intent], Decision: decision, Grant: grant}
			if decision != record.ApprovalExpired {
				a.HasBy, a.UID, a.User = true, 1000, "ann"
			}
			return a
		}
	}
	outcome := func(call, intent, status, reason string) func(map[string]uint64) record.Body {
		return func(s map[string]uint64) record.Body {
			o := &record.Outcome{Call: num(call), Intent: s[intent], Status: status, Reason: reason}
			if status == record.StatusOK {
				o.HasResponse, o.LatencyNS = true, 1000
			}
			return o
		}
	}
	const id1, id2 = "0123456789abcdef", "fedcba9876543210"
	plain := func(map[string]uint64) record.Body {
		return &record.Intent{Call: num("1"), Tool: []byte("write_file"), HasTool: true, Verdict: record.VerdictAllowed, Set: approvalsSet}
	}
	for _, tc := range []struct {
		name string
		edit func([]roundsStep) []roundsStep
		want string // "" for valid
	}{
		{"undecided at the end", func(s []roundsStep) []roundsStep {
			s = without(s, "exp3")
			return replaced(s, "out3", outcome("3", "in3", record.StatusHostDenied, calls.ReasonApprovalEnded))
		}, ""},
		{"approval of an intent not parked", func(s []roundsStep) []roundsStep {
			return replaced(s, "in1", plain)
		}, `approval "0123456789abcdef" names intent seq 1, which is no parked intent of this session`},
		{"approval of the intent's seq under another id", func(s []roundsStep) []roundsStep {
			return replaced(s, "ok1", approval("0123456789abcdee", "in1", record.ApprovalApproved, record.GrantPrefix+"0123456789abcdee"))
		}, `does not match intent seq 1's approval "0123456789abcdef"`},
		{"approval with another digest", func(s []roundsStep) []roundsStep {
			return replaced(s, "ok1", func(m map[string]uint64) record.Body {
				a := approval(id1, "in1", record.ApprovalApproved, record.GrantPrefix+id1)(m).(*record.Approval)
				a.RequestDigest = sum("another frame")
				return a
			})
		}, `does not match intent seq 1's approval`},
		{"decided twice", func(s []roundsStep) []roundsStep {
			return after(s, "ok1", roundsStep{"again", approval(id1, "in1", record.ApprovalDenied, record.GrantDenyAll)})
		}, `approval "0123456789abcdef" decided a second time (denied after approved)`},
		{"decided after its outcome", func(s []roundsStep) []roundsStep {
			return after(s, "out1", roundsStep{"again", approval(id1, "in1", record.ApprovalApproved, record.GrantPrefix+id1)})
		}, `whose call has its outcome already`},
		{"approved granting deny_all", func(s []roundsStep) []roundsStep {
			return replaced(s, "ok1", approval(id1, "in1", record.ApprovalApproved, record.GrantDenyAll))
		}, `grants "deny_all"; its decision grants "approval:0123456789abcdef"`},
		{"approved granting another id", func(s []roundsStep) []roundsStep {
			return replaced(s, "ok1", approval(id1, "in1", record.ApprovalApproved, record.GrantPrefix+id2))
		}, `grants "approval:fedcba9876543210"`},
		{"denied granting its id", func(s []roundsStep) []roundsStep {
			return replaced(s, "no2", approval(id2, "in2", record.ApprovalDenied, record.GrantPrefix+id2))
		}, `(denied) grants "approval:fedcba9876543210"; its decision grants "deny_all"`},
		{"unknown decision", func(s []roundsStep) []roundsStep {
			return replaced(s, "no2", approval(id2, "in2", "maybe", record.GrantDenyAll))
		}, `has decision "maybe"`},
		{"one id parks two calls", func(s []roundsStep) []roundsStep {
			return replaced(s, "in2", parkedIntent(id1, "2"))
		}, `approval id "0123456789abcdef" parks a second call (the first is intent seq 1)`},
		{"answered before its approval", func(s []roundsStep) []roundsStep {
			s = without(s, "out1")
			return after(s, "in3", roundsStep{"out1", outcome("1", "in1", record.StatusOK, "")})
		}, `outcome of intent seq 1, parked for approval "0123456789abcdef", comes before any decision`},
		{"answered though denied", func(s []roundsStep) []roundsStep {
			return replaced(s, "out2", outcome("2", "in2", record.StatusOK, ""))
		}, `outcome of intent seq 2 has status ok after its approval "fedcba9876543210" was denied`},
		{"undecided, its outcome says expired", func(s []roundsStep) []roundsStep {
			return without(s, "exp3")
		}, `outcome of intent seq 3, parked for approval "00112233aabbccdd", comes before any decision (status host_denied, reason "not executed: approval expired")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := writeSteps(t, tc.edit(approvalsSteps()))
			rep := verifyBytes(t, log, Options{Key: fuzzPub})
			if tc.want == "" {
				if rep.Status != Valid {
					t.Fatalf("Verify = %v %v; want valid", rep.Status, rep.Problems)
				}
				return
			}
			if rep.Status != Invalid || !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return strings.Contains(p.Msg, tc.want) }) {
				t.Fatalf("Verify = %v %v; want invalid, a problem saying %s", rep.Status, rep.Problems, tc.want)
			}
		})
	}
}

// replaced is steps with the step named name made by body instead.
func replaced(steps []roundsStep, name string, body func(map[string]uint64) record.Body) []roundsStep {
	out := slices.Clone(steps)
	for i := range out {
		if out[i].name == name {
			out[i].body = body
		}
	}
	return out
}

// without is steps without the one named name.
func without(steps []roundsStep, name string) []roundsStep {
	return slices.DeleteFunc(slices.Clone(steps), func(s roundsStep) bool { return s.name == name })
}

// after is steps with add after the one named name.
func after(steps []roundsStep, name string, add roundsStep) []roundsStep {
	i := slices.IndexFunc(steps, func(s roundsStep) bool { return s.name == name })
	return slices.Insert(slices.Clone(steps), i+1, add)
}

// TestApprovalsParkedRetry: a retry round (MRTR) an approve rule parks is
// judged as a first round is: approved, then answered, it is valid; its
// outcome before the approval is not.
func TestApprovalsParkedRetry(t *testing.T) {
	const id = "0123456789abcdef"
	state := sum("state-1")
	steps := func(answerFirst bool) []roundsStep {
		s := []roundsStep{
			{"start", func(map[string]uint64) record.Body {
				return &record.SessionStart{Aegis: "golden", Argv: []string{"server"}, Name: "files", Durability: "none", PolicySet: approvalsSet}
			}},
			{"i1", func(map[string]uint64) record.Body {
				return &record.Intent{Call: num("1"), Tool: []byte("write_file"), HasTool: true, RequestDigest: sum("q1"), Verdict: record.VerdictAllowed, Set: approvalsSet}
			}},
			{"o1", func(s map[string]uint64) record.Body {
				return &record.Outcome{Call: num("1"), Intent: s["i1"], ResponseDigest: sum("a1"), HasResponse: true, Status: record.StatusInputRequired, LatencyNS: 100,
					ResultType: bv("input_required"), HasResultType: true, RequestState: state, HasRequestState: true}
			}},
			{"i2", func(s map[string]uint64) record.Body {
				return &record.Intent{Call: num("2"), Tool: []byte("write_file"), HasTool: true, RequestDigest: sum("q2"),
					Verdict: record.VerdictPendingApproval, Rule: "rules[0] write_file", Set: approvalsSet, RuleLine: 4,
					Approval: &record.ApprovalTerms{ID: id, Server: "files", Caller: "uid:1000", TimeoutMS: 300000},
					Round:    record.Round{Of: s["o1"], HasOf: true, By: record.RoundByState, N: 2}, RequestState: state, HasRequestState: true}
			}},
			{"ok2", func(s map[string]uint64) record.Body {
				return &record.Approval{ID: id, Intent: s["i2"], RequestDigest: sum("q2"), Decision: record.ApprovalApproved, HasBy: true, UID: 1000, User: "ann",
					Grant: record.GrantPrefix + id}
			}},
			{"o2", func(s map[string]uint64) record.Body {
				return &record.Outcome{Call: num("2"), Intent: s["i2"], ResponseDigest: sum("a2"), HasResponse: true, Status: record.StatusOK, LatencyNS: 200}
			}},
			{"end", func(map[string]uint64) record.Body {
				return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 2, FramesOut: 2, Intents: 2, Outcomes: 2}}
			}},
		}
		if answerFirst {
			s = without(s, "o2")
			s = after(s, "i2", roundsStep{"o2", func(m map[string]uint64) record.Body {
				return &record.Outcome{Call: num("2"), Intent: m["i2"], ResponseDigest: sum("a2"), HasResponse: true, Status: record.StatusOK, LatencyNS: 200}
			}})
		}
		return s
	}
	if rep := verifyBytes(t, writeSteps(t, steps(false)), Options{Key: fuzzPub}); rep.Status != Valid {
		t.Errorf("a parked retry, approved then answered: Verify = %v %v; want valid", rep.Status, rep.Problems)
	}
	rep := verifyBytes(t, writeSteps(t, steps(true)), Options{Key: fuzzPub})
	if rep.Status != Invalid || !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return strings.Contains(p.Msg, "comes before any decision") }) {
		t.Errorf("a parked retry answered before its approval: Verify = %v %v; want invalid", rep.Status, rep.Problems)
	}
}
