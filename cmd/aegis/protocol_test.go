package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// The protocol tests run aegis wrap around the protocol child (a server of
// MCP 2026-07-28, with rounds and the Tasks extension, and of 2025-11-25,
// with its tasks and server requests), speak to it as a client would, and
// read what the log says of each call.

const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

// protoCall is a tools/call of the protocol child's tool, with extra
// params members (each starting with a comma).
func protoCall(id, tool, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"who":"me"},` + meta2026 + extra + `}}`
}

// protoSession runs lines through wrap around the protocol child: each
// client line (prefix "c ") is written, each "r" reads one line from wrap
// (returned in order), and the session ends when the client closes its
// stdin. The log must verify.
func protoSession(t *testing.T, f *fixture, script ...string) []string {
	t.Helper()
	s := f.start(t, nil, []string{"AEGIS_TEST_AUDIT=" + f.audit}, child("protocol")...)
	var got []string
	for _, st := range script {
		if st == "r" {
			got = append(got, s.recv())
			continue
		}
		s.send(strings.TrimPrefix(st, "c "))
	}
	s.stdin.Close()
	if code := s.wait(20 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (stderr: %s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	return got
}

// byKind returns the records of kind k, in order.
func byKind[T record.Body](recs []*record.Record) ([]T, []uint64) {
	var out []T
	var seqs []uint64
	for _, r := range recs {
		if b, ok := r.Body.(T); ok {
			out = append(out, b)
			seqs = append(seqs, r.Seq)
		}
	}
	return out, seqs
}

func lineSum(line string) record.Digest { return sha256.Sum256([]byte(line)) }

// TestProtocolInputRequired: a tools/call answered input_required is
// recorded input_required with the keys and methods it asks and the
// digest of its state, not ok: the tool has not run.
func TestProtocolInputRequired(t *testing.T) {
	f := newFixture(t)
	got := protoSession(t, f, "c "+protoCall("1", "login", ""), "r")
	outs, _ := byKind[*record.Outcome](f.records(t))
	if len(outs) != 1 {
		t.Fatalf("%d outcomes; want 1", len(outs))
	}
	o := outs[0]
	if o.Status != record.StatusInputRequired || o.ResponseDigest != lineSum(got[0]) {
		t.Errorf("outcome status %s digest %s; want %s and the digest of %q", o.Status, o.ResponseDigest, record.StatusInputRequired, got[0])
	}
	if len(o.InputRequests) != 1 || string(o.InputRequests[0].Key.Text) != "login" || string(o.InputRequests[0].Method.Text) != "elicitation/create" {
		t.Errorf("outcome input_requests = %+v; want login: elicitation/create", o.InputRequests)
	}
	if !o.HasRequestState || o.RequestState != sha256.Sum256([]byte("st-1")) {
		t.Errorf("outcome request_state = %v %s; want the digest of st-1", o.HasRequestState, o.RequestState)
	}
}

// TestProtocolRetry: the retry of a call answered input_required is linked
// to that outcome by its state, and records what the client answered
// (keys and action, never the content); its own outcome is the call's
// final one.
func TestProtocolRetry(t *testing.T) {
	f := newFixture(t)
	retry := protoCall("2", "login", `,"requestState":"st-1","inputResponses":{"login":{"action":"accept","content":{"name":"octocat"}}}`)
	got := protoSession(t, f, "c "+protoCall("1", "login", ""), "r", "c "+retry, "r")
	if !strings.Contains(got[1], "login accept") {
		t.Fatalf("the retry's answer %q; want the tool's answer to the accepted login", got[1])
	}
	recs := f.records(t)
	ins, _ := byKind[*record.Intent](recs)
	outs, oseqs := byKind[*record.Outcome](recs)
	if len(ins) != 2 || len(outs) != 2 {
		t.Fatalf("%d intents, %d outcomes; want 2 and 2", len(ins), len(outs))
	}
	if ins[0].Round.By != "" {
		t.Errorf("first request's round = %+v; want none", ins[0].Round)
	}
	want := record.Round{Of: oseqs[0], HasOf: true, By: record.RoundByState, N: 2}
	if ins[1].Round != want {
		t.Errorf("retry's round = %+v; want %+v", ins[1].Round, want)
	}
	if len(ins[1].InputResponses) != 1 || string(ins[1].InputResponses[0].Key.Text) != "login" || ins[1].InputResponses[0].Action != record.ActionAccept {
		t.Errorf("retry's input_responses = %+v; want login: accept", ins[1].InputResponses)
	}
	if !ins[1].HasRevision || string(ins[1].Revision.Text) != "2026-07-28" {
		t.Errorf("retry's revision = %v %q; want 2026-07-28", ins[1].HasRevision, ins[1].Revision.Text)
	}
	if outs[1].Status != record.StatusOK || outs[1].ResponseDigest != lineSum(got[1]) {
		t.Errorf("retry's outcome %s %s; want ok, the digest of %q", outs[1].Status, outs[1].ResponseDigest, got[1])
	}
	for _, r := range recs {
		if strings.Contains(string(r.Body.AppendFields(nil)), "octocat") {
			t.Errorf("record %s copies the client's answer: %s", r.Kind, r.Body.AppendFields(nil))
		}
	}
}

// TestProtocolTask2026: a call answered resultType task is recorded task
// with its id; polls that change nothing add nothing; the task's
// input_required status, the client's tasks/update and the task's end
// (notifications/tasks, with its line's digest) are task records naming
// the call's intent; later polls of the ended task add nothing.
func TestProtocolTask2026(t *testing.T) {
	f := newFixture(t)
	get := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tasks/get","params":{"taskId":"task-26",` + meta2026 + `}}`
	}
	update := `{"jsonrpc":"2.0","id":5,"method":"tasks/update","params":{"taskId":"task-26","inputResponses":{"confirm":{"action":"accept","content":{}}},` + meta2026 + `}}`
	got := protoSession(t, f, "c "+protoCall("1", "slow", ""), "r",
		"c "+get("2"), "r", "c "+get("3"), "r", "c "+get("4"), "r",
		"c "+update, "r", "r", "c "+get("6"), "r")
	notice := got[5]
	if !strings.Contains(notice, "notifications/tasks") {
		t.Fatalf("line 6 from wrap %q; want the child's notifications/tasks", notice)
	}
	recs := f.records(t)
	outs, _ := byKind[*record.Outcome](recs)
	_, iseqs := byKind[*record.Intent](recs)
	tasks, _ := byKind[*record.Task](recs)
	if len(outs) != 1 || outs[0].Status != record.StatusTask || string(outs[0].TaskID.Text) != "task-26" {
		t.Fatalf("outcomes %+v; want one, task task-26", outs)
	}
	var events []string
	for _, k := range tasks {
		if string(k.TaskID.Text) != "task-26" || k.Intent != iseqs[0] {
			t.Errorf("task record %+v; want task-26 of intent %d", k, iseqs[0])
		}
		events = append(events, k.Event+" "+k.Via+" "+k.Status)
	}
	want := []string{"input_required tasks/get ", "update tasks/update ", "end notifications/tasks ok"}
	if strings.Join(events, "|") != strings.Join(want, "|") {
		t.Fatalf("task records %q; want %q", events, want)
	}
	if end := tasks[2]; end.Digest != lineSum(notice) || end.LatencyNS <= 0 {
		t.Errorf("end digest %s latency %d; want the digest of %q, a latency", end.Digest, end.LatencyNS, notice)
	}
}

// TestProtocolTask2025: a 2025-11-25 task (params.task, a
// CreateTaskResult) ends with the tasks/result answer, not with the
// tasks/get that says it completed.
func TestProtocolTask2025(t *testing.T) {
	f := newFixture(t)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"task":{"ttl":60000}}}`
	got := protoSession(t, f,
		`c {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "r",
		"c "+call, "r",
		`c {"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"task-25"}}`, "r",
		`c {"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"task-25"}}`, "r")
	recs := f.records(t)
	protos, _ := byKind[*record.Protocol](recs)
	if len(protos) != 1 || string(protos[0].Revision.Text) != "2025-11-25" {
		t.Errorf("protocol records %+v; want one, 2025-11-25", protos)
	}
	outs, _ := byKind[*record.Outcome](recs)
	if len(outs) != 1 || outs[0].Status != record.StatusTask || string(outs[0].TaskID.Text) != "task-25" {
		t.Fatalf("outcomes %+v; want one, task task-25", outs)
	}
	tasks, _ := byKind[*record.Task](recs)
	if len(tasks) != 1 || tasks[0].Event != record.TaskEnd || tasks[0].Via != "tasks/result" ||
		tasks[0].Status != record.StatusOK || tasks[0].Digest != lineSum(got[3]) {
		t.Fatalf("task records %+v; want one end via tasks/result, ok, the digest of %q", tasks, got[3])
	}
}

// TestProtocolServerRequest: on 2025-11-25 a server's elicitation while a
// call runs is recorded with the call in flight, and the client's answer
// with its action; on 2026-07-28 the same request is an anomaly too, and
// still relayed.
func TestProtocolServerRequest(t *testing.T) {
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			f := newFixture(t)
			got := protoSession(t, f,
				`c {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+rev+`","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`, "r",
				`c {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`, "r",
				`c {"jsonrpc":"2.0","id":"srv-1","result":{"action":"decline"}}`, "r")
			if !strings.Contains(got[1], "elicitation/create") {
				t.Fatalf("wrap relayed %q; want the server's elicitation", got[1])
			}
			recs := f.records(t)
			_, iseqs := byKind[*record.Intent](recs)
			reqs, rseqs := byKind[*record.ServerRequest](recs)
			if len(reqs) != 1 || string(reqs[0].Method.Text) != "elicitation/create" || len(reqs[0].Calls) != 1 ||
				reqs[0].Calls[0] != iseqs[0] || reqs[0].ResponseDigest != lineSum(got[1]) {
				t.Fatalf("server_request records %+v; want one elicitation/create naming intent %d", reqs, iseqs[0])
			}
			answers, _ := byKind[*record.ClientAnswer](recs)
			if len(answers) != 1 || answers[0].Request != rseqs[0] || answers[0].Status != record.StatusOK || answers[0].Action != record.ActionDecline {
				t.Errorf("client_answer records %+v; want one answering %d, ok, decline", answers, rseqs[0])
			}
			anomalies, _ := byKind[*record.Anomaly](recs)
			var reasons []string
			for _, a := range anomalies {
				reasons = append(reasons, a.Reason)
			}
			wantAnomaly := rev == "2026-07-28"
			if hit := len(reasons) == 1 && reasons[0] == relay.ReasonServerRequest; hit != wantAnomaly || len(reasons) > 1 {
				t.Errorf("anomalies %q; want the server request's: %v", reasons, wantAnomaly)
			}
		})
	}
}

// TestProtocolCancel: a client's notifications/cancelled ends the call it
// names, cancelled, before the child reads it; the child's late answer is
// relayed and recorded as an anomaly.
func TestProtocolCancel(t *testing.T) {
	f := newFixture(t)
	got := protoSession(t, f, "c "+protoCall("7", "hang", ""),
		`c {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user went away"}}`, "r")
	if !strings.Contains(got[0], "too late, cancel recorded") {
		t.Fatalf("wrap relayed %q; want the child's late answer, sent once the cancelled outcome was in the log", got[0])
	}
	recs := f.records(t)
	outs, _ := byKind[*record.Outcome](recs)
	if len(outs) != 1 || outs[0].Status != record.StatusCancelled || outs[0].HasResponse {
		t.Fatalf("outcomes %+v; want one, cancelled, no response", outs)
	}
	anomalies, _ := byKind[*record.Anomaly](recs)
	if len(anomalies) != 1 || anomalies[0].Reason != relay.ReasonAnswerAfterCancel || anomalies[0].Digest != lineSum(got[0]) || !anomalies[0].Forwarded {
		t.Errorf("anomalies %+v; want the late answer's, forwarded", anomalies)
	}
}

// TestProtocolLogJSON: aegis log --json shows a call and its retry as
// one call, whose status is the retry's, with its two rounds linked by
// state.
func TestProtocolLogJSON(t *testing.T) {
	f := newFixture(t)
	protoSession(t, f, "c "+protoCall("1", "login", ""), "r",
		"c "+protoCall("2", "login", `,"requestState":"st-1","inputResponses":{"login":{"action":"accept"}}`), "r")
	out, err := exec.Command(aegisBin, "log", "--json", f.audit).Output()
	if err != nil {
		t.Fatalf("aegis log --json: %v", err)
	}
	type round struct {
		N      int    `json:"n"`
		Status string `json:"status"`
		By     string `json:"by"`
	}
	var calls []struct {
		Status   string  `json:"status"`
		Revision string  `json:"revision"`
		Rounds   []round `json:"rounds"`
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var c struct {
			Status   string  `json:"status"`
			Revision string  `json:"revision"`
			Rounds   []round `json:"rounds"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("aegis log --json line %q: %v", l, err)
		}
		calls = append(calls, c)
	}
	want := []round{{1, record.StatusInputRequired, ""}, {2, record.StatusOK, record.RoundByState}}
	if len(calls) != 1 || calls[0].Status != record.StatusOK || calls[0].Revision != "2026-07-28" || fmt.Sprint(calls[0].Rounds) != fmt.Sprint(want) {
		t.Errorf("aegis log --json = %s; want one call, ok on 2026-07-28, rounds %v", out, want)
	}
}
