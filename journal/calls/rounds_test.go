package calls

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// rstep is a record of a test log of rounds and tasks, its seq its place
// (ts: 1s after the log's start per seq): kind is "start", "intent" (id;
// with by, a round of the outcome at seq of, number n), "outcome" (of the
// intent at seq of, with status; task: its task_id; latency 1ms × seq), "task"
// (of: its intent, task: task_id, event, status), "sreq", "answer" (of:
// the server_request), "protocol" (task: the revision), or "end".
type rstep struct {
	kind, id      string
	of            uint64
	by            string
	n             int
	status        string
	task          string
	event         string
	intents, outs uint64
}

var t0 = time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)

// runRounds feeds steps to a Book and traces what it reports: "call
// D STATUS LATENCY [done] [rounds SEQ/STATUS,…] [task ID EVENT,…]" for a
// call Count returns (D the seq of its first intent, its Data) and for
// each call still pending as its session closes, "anomaly KIND@SEQ".
func runRounds(steps []rstep) string {
	b := New[string, int](Options{})
	var trace []string
	show := func(c *Call[int]) {
		s := fmt.Sprintf("call %d %s", c.Data, c.Status)
		if c.HasLatency {
			s += " " + time.Duration(c.LatencyNS).String()
		}
		if c.Done {
			s += " done"
		}
		if rs := c.Rounds(); rs != nil {
			var r []string
			for _, x := range rs {
				r = append(r, fmt.Sprintf("%d/%s", x.Intent, x.Status))
			}
			s += " rounds " + strings.Join(r, ",")
		}
		if k := c.Task(); k != nil {
			var e []string
			for _, x := range k.Events {
				e = append(e, x.Event)
			}
			s += " task " + k.ID + " " + strings.Join(e, ",")
		}
		trace = append(trace, s)
	}
	b.OnClose = func(s *Session[string, int], how How) {
		s.EachPending(show)
	}
	b.OnAnomaly = func(a Anomaly) {
		trace = append(trace, fmt.Sprintf("anomaly %s@%d", kindName[a.Kind], a.Seq))
	}
	for i, st := range steps {
		seq := uint64(i)
		r := &record.Record{Seq: seq, TS: t0.Add(time.Duration(seq) * time.Second)}
		id := record.Call{Type: record.IDNumber, Text: []byte(st.id)}
		switch st.kind {
		case "start":
			r.Kind, r.Body = record.KindSessionStart, &record.SessionStart{}
		case "intent":
			in := &record.Intent{Call: id}
			if st.by != "" {
				in.Round = record.Round{Of: st.of, HasOf: st.of > 0, By: st.by, N: st.n}
			}
			r.Kind, r.Body = record.KindIntent, in
		case "outcome":
			o := &record.Outcome{Call: id, Intent: st.of, Status: st.status, HasResponse: true, LatencyNS: int64(seq) * int64(time.Millisecond)}
			if st.task != "" {
				o.TaskID, o.HasTaskID = record.BoundedOf([]byte(st.task)), true
			}
			r.Kind, r.Body = record.KindOutcome, o
		case "task":
			r.Kind, r.Body = record.KindTask, &record.Task{TaskID: record.BoundedOf([]byte(st.task)), Intent: st.of, Event: st.event, Status: st.status,
				LatencyNS: int64(seq) * int64(time.Millisecond)}
		case "sreq":
			q := &record.ServerRequest{Method: record.BoundedOf([]byte("roots/list"))}
			if st.of > 0 {
				q.Calls = []uint64{st.of}
			}
			r.Kind, r.Body = record.KindServerRequest, q
		case "answer":
			r.Kind, r.Body = record.KindClientAnswer, &record.ClientAnswer{Request: st.of, Status: record.StatusOK}
		case "protocol":
			r.Kind, r.Body = record.KindProtocol, &record.Protocol{Revision: record.BoundedOf([]byte(st.task))}
		case "end":
			r.Kind, r.Body = record.KindSessionEnd, &record.SessionEnd{Counts: record.Counts{Intents: st.intents, Outcomes: st.outs}}
		}
		_, c := b.Add(r, int(seq))
		if c != nil {
			show(c)
		}
	}
	b.Close()
	return strings.Join(trace, "; ")
}

const (
	ok  = record.StatusOK
	ir  = record.StatusInputRequired
	tsk = record.StatusTask
)

func TestRounds(t *testing.T) {
	start, end := rstep{kind: "start"}, func(i, o uint64) rstep { return rstep{kind: "end", intents: i, outs: o} }
	tests := []struct {
		name  string
		steps []rstep
		want  string
	}{
		{"one round", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ok}, end(1, 1)},
			"call 1 ok 2ms done"},
		{"two rounds by state", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ir},
			{kind: "intent", id: "2", of: 2, by: record.RoundByState, n: 2}, {kind: "outcome", id: "2", of: 3, status: ok}, end(2, 2)},
			"call 1 input_required 2ms; call 1 input_required 2ms rounds 1/input_required,3/; call 1 ok 3s done rounds 1/input_required,3/ok"},
		{"three rounds, the last still input_required at the end", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ir},
			{kind: "intent", id: "2", of: 2, by: record.RoundByMatch, n: 2}, {kind: "outcome", id: "2", of: 3, status: ir},
			{kind: "intent", id: "3", of: 4, by: record.RoundByState, n: 3}, {kind: "outcome", id: "3", of: 5, status: ir}, end(3, 3)},
			"call 1 input_required 2ms; call 1 input_required 2ms rounds 1/input_required,3/; call 1 input_required 3s rounds 1/input_required,3/input_required; " +
				"call 1 input_required 3s rounds 1/input_required,3/input_required,5/; call 1 input_required 5s rounds 1/input_required,3/input_required,5/input_required; " +
				"call 1 input_required 5s done rounds 1/input_required,3/input_required,5/input_required"},
		{"a round of nothing", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ok},
			{kind: "intent", id: "2", of: 2, by: record.RoundByState, n: 2}, {kind: "outcome", id: "2", of: 3, status: ok}, end(2, 2)},
			"call 1 ok 2ms done; anomaly round_unlinked@3; call 3 ok 4ms done"},
		{"a round of an intent", []rstep{start, {kind: "intent", id: "1"}, {kind: "intent", id: "2", of: 1, by: record.RoundByMatch, n: 2},
			{kind: "outcome", id: "1", of: 1, status: ok}, {kind: "outcome", id: "2", of: 2, status: ok}, end(2, 2)},
			"anomaly round_unlinked@2; call 1 ok 3ms done; call 2 ok 4ms done"},
		{"a round claimed twice", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ir},
			{kind: "intent", id: "2", of: 2, by: record.RoundByState, n: 2}, {kind: "intent", id: "3", of: 2, by: record.RoundByState, n: 2},
			{kind: "outcome", id: "2", of: 3, status: ok}, {kind: "outcome", id: "3", of: 4, status: ok}, end(3, 3)},
			"call 1 input_required 2ms; call 1 input_required 2ms rounds 1/input_required,3/; anomaly claimed_twice@4; " +
				"call 1 ok 4s done rounds 1/input_required,3/ok; call 4 ok 6ms done"},
		{"a round of unknown state is a call of its own", []rstep{start, {kind: "intent", id: "1", by: record.RoundUnknownState},
			{kind: "outcome", id: "1", of: 1, status: ok}, end(1, 1)},
			"call 1 ok 2ms done"},
		{"a round of unknown state naming an outcome", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ir},
			{kind: "intent", id: "2", of: 2, by: record.RoundUnknownState}, {kind: "outcome", id: "2", of: 3, status: ok}, end(2, 2)},
			"call 1 input_required 2ms; anomaly round_unlinked@3; call 3 ok 4ms done; call 1 input_required 2ms done"},
		{"a round by something else", []rstep{start, {kind: "intent", id: "1", by: "guess"}, {kind: "outcome", id: "1", of: 1, status: ok}, end(1, 1)},
			"anomaly round_unlinked@1; call 1 ok 2ms done"},
		{"a round by state of null", []rstep{start, {kind: "intent", id: "1", by: record.RoundByState, n: 2}, {kind: "outcome", id: "1", of: 1, status: ok}, end(1, 1)},
			"anomaly round_unlinked@1; call 1 ok 2ms done"},
		{"a task to its end", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"},
			{kind: "task", of: 1, task: "T", event: record.TaskInputRequired}, {kind: "task", of: 1, task: "T", event: record.TaskUpdate},
			{kind: "task", of: 1, task: "T", event: record.TaskEnd, status: record.StatusToolError}, end(1, 1)},
			"call 1 task 2ms task T ; call 1 task 2ms task T input_required; call 1 task 2ms task T input_required,update; call 1 tool_error 5ms done task T input_required,update,end"},
		{"a task after a round", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ir},
			{kind: "intent", id: "2", of: 2, by: record.RoundByState, n: 2}, {kind: "outcome", id: "2", of: 3, status: tsk, task: "T"},
			{kind: "task", of: 3, task: "T", event: record.TaskEnd, status: ok}, end(2, 2)},
			"call 1 input_required 2ms; call 1 input_required 2ms rounds 1/input_required,3/; call 1 task 3s rounds 1/input_required,3/task task T ; call 1 ok 4s done rounds 1/input_required,3/task task T end"},
		{"a task record of the wrong task", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"},
			{kind: "task", of: 1, task: "U", event: record.TaskEnd, status: ok}, {kind: "task", of: 1, task: "T", event: record.TaskEnd, status: ok}, end(1, 1)},
			"call 1 task 2ms task T ; anomaly task_without_call@3; call 1 ok 4ms done task T end"},
		{"a task record of a call that is no task", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ok},
			{kind: "task", of: 1, task: "T", event: record.TaskCancel}, end(1, 1)},
			"call 1 ok 2ms done; anomaly task_without_call@3"},
		{"two ends", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"},
			{kind: "task", of: 1, task: "T", event: record.TaskEnd, status: ok}, {kind: "task", of: 1, task: "T", event: record.TaskEnd, status: record.StatusFailed}, end(1, 1)},
			"call 1 task 2ms task T ; call 1 ok 3ms done task T end; anomaly ended_twice@4"},
		{"a task without end at the session's end", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"}, end(1, 1)},
			"call 1 task 2ms task T ; anomaly task_without_end@3; call 1 task 2ms done task T "},
		{"a task without end in a cut session", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"}},
			"call 1 task 2ms task T ; call 1 task 2ms done task T ; anomaly no_end@2"},
		{"an answer to a server request", []rstep{start, {kind: "sreq"}, {kind: "answer", of: 1}, end(0, 0)}, ""},
		{"an answer to no server request", []rstep{start, {kind: "intent", id: "1"}, {kind: "answer", of: 1}, {kind: "outcome", id: "1", of: 1, status: ok}, end(1, 1)},
			"anomaly answer_without_request@2; call 1 ok 3ms done"},
		{"a server request during a call and a task", []rstep{start, {kind: "intent", id: "1"}, {kind: "sreq", of: 1}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"},
			{kind: "sreq", of: 1}, {kind: "task", of: 1, task: "T", event: record.TaskEnd, status: ok}, end(1, 1)},
			"call 1 task 3ms task T ; call 1 ok 5ms done task T end"},
		{"a server request naming no call in flight", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: ok}, {kind: "sreq", of: 1}, end(1, 1)},
			"call 1 ok 2ms done; anomaly request_of_no_call@3"},
		{"a task id held by a live task", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"},
			{kind: "intent", id: "2"}, {kind: "outcome", id: "2", of: 3, status: tsk, task: "T"},
			{kind: "task", of: 1, task: "T", event: record.TaskEnd, status: ok}, end(2, 2)},
			"call 1 task 2ms task T ; anomaly task_id_reused@4; call 3 task 4ms done task T ; call 1 ok 5ms done task T end"},
		{"a task id of an ended task", []rstep{start, {kind: "intent", id: "1"}, {kind: "outcome", id: "1", of: 1, status: tsk, task: "T"},
			{kind: "task", of: 1, task: "T", event: record.TaskEnd, status: ok},
			{kind: "intent", id: "2"}, {kind: "outcome", id: "2", of: 4, status: tsk, task: "T"},
			{kind: "task", of: 4, task: "T", event: record.TaskEnd, status: ok}, end(2, 2)},
			"call 1 task 2ms task T ; call 1 ok 3ms done task T end; call 4 task 5ms task T ; call 4 ok 6ms done task T end"},
		{"protocol, tasks and answers are not counted", []rstep{start, {kind: "protocol", task: "2026-07-28"}, {kind: "sreq"}, {kind: "answer", of: 2}, end(0, 0)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runRounds(tt.steps); got != tt.want {
				t.Errorf("Book(%s) =\n%q; want\n%q", tt.name, got, tt.want)
			}
		})
	}
}

// TestRevision: a session's revision is its protocol record's, or its
// first declaring intent's until one is read.
func TestRevision(t *testing.T) {
	b := New[struct{}, struct{}](Options{})
	s, _ := b.Add(&record.Record{Kind: record.KindSessionStart, Body: &record.SessionStart{}}, struct{}{})
	b.Add(&record.Record{Seq: 1, Kind: record.KindIntent, Body: &record.Intent{Revision: record.BoundedOf([]byte("2026-07-28")), HasRevision: true}}, struct{}{})
	if s.Revision != "2026-07-28" {
		t.Errorf("Revision after a declaring intent = %q; want 2026-07-28", s.Revision)
	}
	b.Add(&record.Record{Seq: 2, Kind: record.KindProtocol, Body: &record.Protocol{Revision: record.BoundedOf([]byte("2025-11-25"))}}, struct{}{})
	if s.Revision != "2025-11-25" {
		t.Errorf("Revision after a protocol record = %q; want 2025-11-25", s.Revision)
	}
}

// TestRoundsPartial: in a log read without its first records, a round,
// a task record or an answer whose link may be in the records missing is
// no anomaly; in a whole log, each is.
func TestRoundsPartial(t *testing.T) {
	recs := []*record.Record{
		{Seq: 10, Kind: record.KindIntent, Body: &record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("2")},
			Round: record.Round{Of: 5, HasOf: true, By: record.RoundByState, N: 2}}},
		{Seq: 11, Kind: record.KindTask, Body: &record.Task{TaskID: record.BoundedOf([]byte("T")), Intent: 3, Event: record.TaskEnd, Status: record.StatusOK}},
		{Seq: 12, Kind: record.KindClientAnswer, Body: &record.ClientAnswer{Request: 4, Status: record.StatusOK}},
	}
	tests := []struct {
		name    string
		partial bool
		want    string
	}{
		{"partial", true, ""},
		{"whole", false, "round_unlinked@10; task_without_call@11; answer_without_request@12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New[struct{}, struct{}](Options{Partial: tt.partial})
			var got []string
			b.OnAnomaly = func(a Anomaly) {
				if !a.Cut {
					got = append(got, fmt.Sprintf("%s@%d", kindName[a.Kind], a.Seq))
				}
			}
			if !tt.partial {
				b.Add(&record.Record{Seq: 9, Kind: record.KindSessionStart, Body: &record.SessionStart{}}, struct{}{})
			}
			for _, r := range recs {
				b.Add(r, struct{}{})
			}
			b.Close()
			if g := strings.Join(got, "; "); g != tt.want {
				t.Errorf("anomalies = %q; want %q", g, tt.want)
			}
		})
	}
}
