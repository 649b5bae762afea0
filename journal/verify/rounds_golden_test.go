package verify

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

var update = flag.Bool("update", false, "rewrite the golden logs this package's tests write (record/testdata/rounds.jsonl)")

// roundsGolden is the golden log of rounds and tasks, beside the genuine
// log that package journal's tests keep: record's tests decode it.
var roundsGolden = filepath.Join("..", "record", "testdata", "rounds.jsonl")

// roundsStep is one record of a crafted log: the body, made when its
// turn comes from the seqs of the records before it (by name).
type roundsStep struct {
	name string
	body func(seq map[string]uint64) record.Body
}

// writeSteps writes the steps as one session through the journal's writer
// with a fixed clock, root key (FuzzKey), session key and sid, each step
// waited for (one commit group, signed, per record), and returns the log.
// The steps see the seqs of those before them by name, and the intents
// and outcomes so far as "#intents" and "#outcomes".
func writeSteps(tb testing.TB, steps []roundsStep) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "audit.jsonl")
	clock := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Millisecond + 11); return clock }
	j, err := journal.Open(path, journal.Options{Durability: mustDurability(tb, "none"), Key: journaltest.FuzzKey,
		Rand: bytes.NewReader(bytes.Repeat([]byte{0xc3}, 32)), Now: now, SID: [16]byte{0xc3, 1, 2, 3}})
	if err != nil {
		tb.Fatal(err)
	}
	seqs := map[string]uint64{}
	for _, s := range steps {
		b := s.body(seqs)
		switch b.(type) {
		case *record.Intent:
			seqs["#intents"]++
		case *record.Outcome:
			seqs["#outcomes"]++
		}
		seq, err := j.Append(b)
		if err == nil {
			err = j.Wait(seq, journal.BeforeResponse)
		}
		if err != nil {
			tb.Fatalf("%s: %v", s.name, err)
		}
		seqs[s.name] = seq
	}
	if err := j.Close(); err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func sum(s string) record.Digest { return sha256.Sum256([]byte(s)) }

func bv(s string) record.Bounded { return record.BoundedOf([]byte(s)) }

func num(s string) record.Call { return record.Call{Type: record.IDNumber, Text: []byte(s)} }

// roundsSteps is a session of the 2026-07-28 revision and of 2025-11-25
// tasks and server requests: one record of every new kind, and every new
// field of intents and outcomes, linked as the relay links them.
func roundsSteps() []roundsStep {
	long := strings.Repeat("t", record.MaxValueBytes+1)
	var many []record.InputRequest
	for i := range record.MaxListEntries + 2 {
		many = append(many, record.InputRequest{Key: bv("k" + string(rune('a'+i%26))), Method: bv("elicitation/create"), HasMethod: i%2 == 0})
	}
	state := sum("state-1")
	return []roundsStep{
		{"start", func(map[string]uint64) record.Body {
			return &record.SessionStart{Aegis: "golden", Argv: []string{"server"}, Durability: "none", PolicySet: record.PassThroughSet}
		}},
		{"protocol", func(map[string]uint64) record.Body { return &record.Protocol{Revision: bv("2026-07-28")} }},
		// A call answered input_required, then retried with its state.
		{"i1", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("1"), Tool: []byte("book"), HasTool: true, RequestDigest: sum("q1"),
				Revision: bv("2026-07-28"), HasRevision: true, Principal: "token:0123456789abcdef"}
		}},
		{"o1", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("1"), Intent: s["i1"], ResponseDigest: sum("a1"), HasResponse: true, Status: record.StatusInputRequired, LatencyNS: 100,
				ResultType: bv("input_required"), HasResultType: true,
				InputRequests: many, RequestState: state, HasRequestState: true}
		}},
		{"i2", func(s map[string]uint64) record.Body {
			return &record.Intent{Call: num("2"), Tool: []byte("book"), HasTool: true, RequestDigest: sum("q2"), Revision: bv("2026-07-28"), HasRevision: true,
				Round: record.Round{Of: s["o1"], HasOf: true, By: record.RoundByState, N: 2}, RequestState: state, HasRequestState: true,
				InputResponses: []record.InputResponse{{Key: bv("ka"), Action: record.ActionAccept}, {Key: bv("kb")}}, InputResponsesMore: 3}
		}},
		{"o2", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("2"), Intent: s["i2"], ResponseDigest: sum("a2"), HasResponse: true, Status: record.StatusOK, LatencyNS: 200,
				ResultType: bv("complete"), HasResultType: true}
		}},
		// A retry whose state no outcome issued.
		{"i3", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("3"), Tool: []byte("book"), HasTool: true, RequestDigest: sum("q3"),
				Round: record.Round{By: record.RoundUnknownState}, RequestState: sum("forged"), HasRequestState: true, InputResponses: []record.InputResponse{}}
		}},
		{"o3", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("3"), Intent: s["i3"], ResponseDigest: sum("a3"), HasResponse: true, Status: record.StatusOther, LatencyNS: 300,
				ResultType: bv("partial"), HasResultType: true}
		}},
		// A call that became a task, with a long task id: its life.
		{"i4", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("4"), Tool: []byte("render"), HasTool: true, RequestDigest: sum("q4")}
		}},
		{"o4", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("4"), Intent: s["i4"], ResponseDigest: sum("a4"), HasResponse: true, Status: record.StatusTask, LatencyNS: 400,
				ResultType: bv("task"), HasResultType: true, TaskID: bv(long), HasTaskID: true}
		}},
		{"t4ir", func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv(long), Intent: s["i4"], Event: record.TaskInputRequired, Via: "tasks/get", Digest: sum("g1"), HasDigest: true,
				InputRequests: []record.InputRequest{{Key: bv("confirm"), Method: bv("elicitation/create"), HasMethod: true}}}
		}},
		{"t4up", func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv(long), Intent: s["i4"], Event: record.TaskUpdate, Via: "tasks/update", Digest: sum("u1"), HasDigest: true,
				InputResponses: []record.InputResponse{{Key: bv("confirm"), Action: record.ActionDecline}}}
		}},
		{"t4end", func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv(long), Intent: s["i4"], Event: record.TaskEnd, Via: "notifications/tasks", Digest: sum("n1"), HasDigest: true,
				Status: record.StatusToolError, LatencyNS: 5000}
		}},
		// A 2025-11-25 task, cancelled, and a server request answered.
		{"i5", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("5"), Tool: []byte("slow"), HasTool: true, RequestDigest: sum("q5")}
		}},
		{"sr", func(s map[string]uint64) record.Body {
			return &record.ServerRequest{Call: num("0"), Method: bv("elicitation/create"), ResponseDigest: sum("sr"), Calls: []uint64{s["i5"]}}
		}},
		{"ca", func(s map[string]uint64) record.Body {
			return &record.ClientAnswer{Call: num("0"), Request: s["sr"], RequestDigest: sum("ca"), Status: record.StatusOK, Action: record.ActionCancel}
		}},
		{"o5", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("5"), Intent: s["i5"], ResponseDigest: sum("a5"), HasResponse: true, Status: record.StatusTask, LatencyNS: 500,
				TaskID: bv("task-5"), HasTaskID: true}
		}},
		{"t5cancel", func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv("task-5"), Intent: s["i5"], Event: record.TaskCancel, Via: "tasks/cancel", Digest: sum("c5"), HasDigest: true}
		}},
		{"t5end", func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv("task-5"), Intent: s["i5"], Event: record.TaskEnd, Via: "tasks/cancel", Digest: sum("c5r"), HasDigest: true,
				Status: record.StatusCancelled, Reason: "cancelled by the client", LatencyNS: 6000}
		}},
		// A call the client cancelled, and a task the session ended.
		{"i6", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("6"), Tool: []byte("slow"), HasTool: true, RequestDigest: sum("q6")}
		}},
		{"o6", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("6"), Intent: s["i6"], Status: record.StatusCancelled, LatencyNS: 600}
		}},
		{"i7", func(map[string]uint64) record.Body {
			return &record.Intent{Call: num("7"), Tool: []byte("render"), HasTool: true, RequestDigest: sum("q7")}
		}},
		{"o7", func(s map[string]uint64) record.Body {
			return &record.Outcome{Call: num("7"), Intent: s["i7"], ResponseDigest: sum("a7"), HasResponse: true, Status: record.StatusTask, LatencyNS: 700,
				ResultType: bv("task"), HasResultType: true, TaskID: bv("task-7"), HasTaskID: true}
		}},
		{"t7end", func(s map[string]uint64) record.Body {
			return &record.Task{TaskID: bv("task-7"), Intent: s["i7"], Event: record.TaskEnd, Via: record.ViaSessionEnd, Status: record.StatusUnfinished, LatencyNS: 7000}
		}},
		{"end", func(s map[string]uint64) record.Body {
			return &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 12, FramesOut: 12, Intents: s["#intents"], Outcomes: s["#outcomes"]}}
		}},
	}
}

// TestRoundsGolden pins the bytes of every new kind and field
// (record/testdata/rounds.jsonl, rewritten with -update) and checks that
// the log, written by the journal's writer, is Valid: every link of its
// rounds, tasks and server requests points back to a record of the right
// kind in its session.
func TestRoundsGolden(t *testing.T) {
	got := writeSteps(t, roundsSteps())
	if *update {
		if err := os.WriteFile(roundsGolden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(roundsGolden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the log written differs from %s; if the format changed on purpose, rerun with -update", roundsGolden)
	}
	rep := verifyBytes(t, got, Options{Key: journaltest.FuzzPub})
	if rep.Status != Valid {
		t.Errorf("Verify(rounds log) = %v, problems %v, gaps %v; want valid", rep.Status, rep.Problems, rep.Gaps)
	}
}

// TestRoundsFindings: each link of rounds, tasks and server requests
// that points to no record of the right kind in its session, or to one
// already claimed, is a problem of the line that holds it, and the only
// one: the golden log (TestRoundsGolden, Valid) changed in one place.
func TestRoundsFindings(t *testing.T) {
	// edit returns the golden steps with the step named at replaced by
	// the ones given (none: removed), each named.
	edit := func(at string, with ...roundsStep) []roundsStep {
		var out []roundsStep
		for _, s := range roundsSteps() {
			if s.name == at {
				out = append(out, with...)
				continue
			}
			out = append(out, s)
		}
		return out
	}
	golden := map[string]roundsStep{}
	for _, s := range roundsSteps() {
		golden[s.name] = s
	}
	with := func(name string, change func(b record.Body, s map[string]uint64)) roundsStep {
		return roundsStep{name, func(s map[string]uint64) record.Body {
			b := golden[name].body(s)
			change(b, s)
			return b
		}}
	}
	tests := []struct {
		name  string
		steps []roundsStep
		at    string // the step whose line holds the problem
		want  string
	}{
		{"a round of an intent", edit("i2", with("i2", func(b record.Body, s map[string]uint64) { b.(*record.Intent).Round.Of = s["i1"] })),
			"i2", "which is no input_required outcome of this session"},
		{"a round of an ok outcome", edit("i3", with("i3", func(b record.Body, s map[string]uint64) {
			b.(*record.Intent).Round = record.Round{Of: s["o2"], HasOf: true, By: record.RoundByMatch, N: 3}
		})), "i3", "which is no input_required outcome of this session"},
		{"a round claimed twice", edit("i3", with("i3", func(b record.Body, s map[string]uint64) {
			b.(*record.Intent).Round = record.Round{Of: s["o1"], HasOf: true, By: record.RoundByState, N: 2}
		})), "i3", "which the round at seq"},
		{"a round by state of nothing", edit("i3", with("i3", func(b record.Body, s map[string]uint64) {
			b.(*record.Intent).Round = record.Round{By: record.RoundByState, N: 2}
		})), "i3", "names no outcome"},
		{"a task record of a call that is no task", edit("t4ir", with("t4ir", func(b record.Body, s map[string]uint64) { b.(*record.Task).Intent = s["i2"] })),
			"t4ir", "which is no call of this session that became that task"},
		{"a task record of another task id", edit("t4up", with("t4up", func(b record.Body, s map[string]uint64) { b.(*record.Task).TaskID = bv("task-5") })),
			"t4up", "which is no call of this session that became that task"},
		{"two ends", edit("t4end", golden["t4end"], roundsStep{"t4end2", golden["t4end"].body}),
			"t4end2", "a second end of task"},
		{"an answer to no server request", edit("ca", with("ca", func(b record.Body, s map[string]uint64) { b.(*record.ClientAnswer).Request = s["i5"] })),
			"ca", "which is no server_request of this session"},
		{"a task without end at session_end", edit("t7end"), "end", "has no end in a session that ended"},
		{"a server request of no call in flight", edit("sr", with("sr", func(b record.Body, s map[string]uint64) { b.(*record.ServerRequest).Calls = []uint64{s["i5"], s["i2"]} })),
			"sr", "which is no call of this session in flight"},
		{"a task id held by a live task", edit("t7end",
			roundsStep{"i8", func(map[string]uint64) record.Body {
				return &record.Intent{Call: num("8"), Tool: []byte("render"), HasTool: true, RequestDigest: sum("q8")}
			}},
			roundsStep{"o8", func(s map[string]uint64) record.Body {
				return &record.Outcome{Call: num("8"), Intent: s["i8"], ResponseDigest: sum("a8"), HasResponse: true, Status: record.StatusTask, LatencyNS: 800,
					TaskID: bv("task-7"), HasTaskID: true}
			}},
			golden["t7end"]), "o8", "which the call of intent seq"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := writeSteps(t, tt.steps)
			var seq uint64
			for i, s := range tt.steps {
				if s.name == tt.at {
					seq = uint64(i)
				}
			}
			rep := verifyBytes(t, log, Options{Key: journaltest.FuzzPub})
			if rep.Status != Invalid || len(rep.Problems) != 1 || len(rep.Gaps) != 0 {
				t.Fatalf("Verify(%s) = %v, problems %v, gaps %v; want invalid, one problem", tt.name, rep.Status, rep.Problems, rep.Gaps)
			}
			if p := rep.Problems[0]; !strings.Contains(p.Msg, tt.want) || p.Seq != seq || !p.HasSeq {
				t.Errorf("Verify(%s) = problem %q at seq %d; want %q at seq %d", tt.name, p.Msg, p.Seq, tt.want, seq)
			}
		})
	}
}
