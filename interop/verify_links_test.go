package interop

import (
	"crypto/sha256"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// linkStep is one record of a log the journal's writer signs: its name,
// and its body given the seqs of the records named before it.
type linkStep struct {
	name string
	body func(seqs map[string]uint64) record.Body
}

// TestVerifyLinksThroughBinary: aegis verify, the binary a user runs,
// reads the links of rounds, tasks and server requests. A log the
// journal's writer signs with the key keygen made, holding a call
// answered input_required and its retry, a task and its end, and a
// server request and its answer, is VALID; the same log with one link
// pointing at a record of the wrong kind, an outcome claimed by a second
// round, or a task ended twice or never, is INVALID, naming that line's
// seq and what is wrong with it, though every signature holds.
func TestVerifyLinksThroughBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	keyPath := filepath.Join(dir, "key")
	pub := keygen(t, aegis, keyPath)
	key, err := record.ReadPrivateKeyFile(keyPath, false)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(s string) record.Digest { return sha256.Sum256([]byte(s)) }
	bv := func(s string) record.Bounded { return record.BoundedOf([]byte(s)) }
	num := func(s string) record.Call { return record.Call{Type: record.IDNumber, Text: []byte(s)} }
	rev := bv("2026-07-28")
	state := sum("state-1")
	// session is a session of 2026-07-28 on record: a round, a task, a
	// server request, each linked as the relay links them; edits replace
	// the steps they name.
	session := func(edits map[string]linkStep) []linkStep {
		steps := []linkStep{
			{"start", func(map[string]uint64) record.Body {
				return &record.SessionStart{Aegis: "links", Argv: []string{"server"}, Durability: "none", PolicySet: record.PassThroughSet}
			}},
			{"i1", func(map[string]uint64) record.Body {
				return &record.Intent{Call: num("1"), Tool: []byte("book"), HasTool: true, RequestDigest: sum("q1"), Revision: rev, HasRevision: true}
			}},
			{"o1", func(s map[string]uint64) record.Body {
				return &record.Outcome{Call: num("1"), Intent: s["i1"], ResponseDigest: sum("a1"), HasResponse: true, Status: record.StatusInputRequired,
					LatencyNS: 100, ResultType: bv("input_required"), HasResultType: true, RequestState: state, HasRequestState: true,
					InputRequests: []record.InputRequest{{Key: bv("ok"), Method: bv("elicitation/create"), HasMethod: true}}}
			}},
			{"i2", func(s map[string]uint64) record.Body {
				return &record.Intent{Call: num("2"), Tool: []byte("book"), HasTool: true, RequestDigest: sum("q2"), Revision: rev, HasRevision: true,
					Round: record.Round{Of: s["o1"], HasOf: true, By: record.RoundByState, N: 2}, RequestState: state, HasRequestState: true,
					InputResponses: []record.InputResponse{{Key: bv("ok"), Action: record.ActionAccept}}}
			}},
			{"o2", func(s map[string]uint64) record.Body {
				return &record.Outcome{Call: num("2"), Intent: s["i2"], ResponseDigest: sum("a2"), HasResponse: true, Status: record.StatusOK,
					LatencyNS: 200, ResultType: bv("complete"), HasResultType: true}
			}},
			{"i3", func(map[string]uint64) record.Body {
				return &record.Intent{Call: num("3"), Tool: []byte("render"), HasTool: true, RequestDigest: sum("q3"), Revision: rev, HasRevision: true}
			}},
			{"sr", func(s map[string]uint64) record.Body {
				return &record.ServerRequest{Call: num("0"), Method: bv("elicitation/create"), ResponseDigest: sum("sr"), Calls: []uint64{s["i3"]}}
			}},
			{"ca", func(s map[string]uint64) record.Body {
				return &record.ClientAnswer{Call: num("0"), Request: s["sr"], RequestDigest: sum("ca"), Status: record.StatusOK, Action: record.ActionDecline}
			}},
			{"o3", func(s map[string]uint64) record.Body {
				return &record.Outcome{Call: num("3"), Intent: s["i3"], ResponseDigest: sum("a3"), HasResponse: true, Status: record.StatusTask,
					LatencyNS: 300, ResultType: bv("task"), HasResultType: true, TaskID: bv("t-3"), HasTaskID: true}
			}},
			{"t3end", func(s map[string]uint64) record.Body {
				return &record.Task{TaskID: bv("t-3"), Intent: s["i3"], Event: record.TaskEnd, Via: "tasks/get", Digest: sum("g3"), HasDigest: true,
					Status: record.StatusOK, LatencyNS: 3000}
			}},
			{"end", func(s map[string]uint64) record.Body {
				return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 6, FramesOut: 6, Intents: 3, Outcomes: 3}}
			}},
		}
		var out []linkStep
		for _, st := range steps {
			if e, ok := edits[st.name]; ok {
				if e.body != nil {
					out = append(out, linkStep{st.name, e.body})
				}
				if e.name != "" {
					out = append(out, linkStep{e.name, st.body})
				}
				continue
			}
			out = append(out, st)
		}
		return out
	}
	tests := []struct {
		name  string
		edits map[string]linkStep
		at    string // the step whose line holds the problem; "" when valid
		want  string
	}{
		{"genuine", nil, "", ""},
		{"a round of an intent", map[string]linkStep{"i2": {body: func(s map[string]uint64) record.Body {
			return &record.Intent{Call: num("2"), Tool: []byte("book"), HasTool: true, RequestDigest: sum("q2"),
				Round: record.Round{Of: s["i1"], HasOf: true, By: record.RoundByState, N: 2}, RequestState: state, HasRequestState: true}
		}}}, "i2", "which is no input_required outcome of this session"},
		{"an outcome claimed by a second round", map[string]linkStep{"i3": {body: func(s map[string]uint64) record.Body {
			return &record.Intent{Call: num("3"), Tool: []byte("render"), HasTool: true, RequestDigest: sum("q3"),
				Round: record.Round{Of: s["o1"], HasOf: true, By: record.RoundByState, N: 2}, RequestState: state, HasRequestState: true}
		}}}, "i3", "which the round at seq"},
		{"a task end of a call that is no task", map[string]linkStep{"t3end": {body: func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv("t-3"), Intent: s["i2"], Event: record.TaskEnd, Via: "tasks/get", Digest: sum("g3"), HasDigest: true,
				Status: record.StatusOK, LatencyNS: 3000}
		}}}, "t3end", "which is no call of this session that became that task"},
		{"a task ended twice", map[string]linkStep{"t3end": {body: func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv("t-3"), Intent: s["i3"], Event: record.TaskEnd, Via: "tasks/get", Digest: sum("g3"), HasDigest: true,
				Status: record.StatusOK, LatencyNS: 3000}
		}, name: "t3end2"}}, "t3end2", "a second end of task"},
		{"an answer to no server request", map[string]linkStep{"ca": {body: func(s map[string]uint64) record.Body {
			return &record.ClientAnswer{Call: num("0"), Request: s["i3"], RequestDigest: sum("ca"), Status: record.StatusOK, Action: record.ActionDecline}
		}}}, "ca", "which is no server_request of this session"},
		{"a task without end at session_end", map[string]linkStep{"t3end": {}}, "end", "has no end in a session that ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			steps := session(tt.edits)
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			seqs := map[string]uint64{}
			for _, st := range steps {
				seq, err := j.Append(st.body(seqs))
				if err == nil {
					err = j.Wait(seq, journal.BeforeResponse)
				}
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				seqs[st.name] = seq
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(aegis, "verify", "--key", pub, path).CombinedOutput()
			if tt.at == "" {
				if err != nil || !strings.Contains(string(out), "VALID") {
					t.Fatalf("aegis verify: %v\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), "INVALID") {
				t.Fatalf("aegis verify: %v\n%s\nwant INVALID", err, out)
			}
			if !strings.Contains(string(out), tt.want) || !strings.Contains(string(out), "seq "+strconv.FormatUint(seqs[tt.at], 10)) {
				t.Errorf("aegis verify said\n%s\nwant %q at seq %d", out, tt.want, seqs[tt.at])
			}
			if strings.Contains(strings.ToLower(string(out)), "signature") {
				t.Errorf("aegis verify said\n%s\nwant the signatures to hold", out)
			}
		})
	}
}
