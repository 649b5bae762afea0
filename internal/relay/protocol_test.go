package relay_test

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// summary is a record as the protocol tests compare it: its kind and the
// fields that say what happened, seqs written relative to the first
// record after session_start (#0).
func summary(r *record.Record, base uint64) string {
	rel := func(seq uint64) string { return fmt.Sprintf("#%d", seq-base) }
	var b strings.Builder
	b.WriteString(r.Kind.String())
	switch x := r.Body.(type) {
	case *record.Intent:
		fmt.Fprintf(&b, " %s", x.Call.Text)
		if x.HasRevision {
			fmt.Fprintf(&b, " rev=%s", x.Revision)
		}
		if x.Round.By != "" {
			of := "null"
			if x.Round.HasOf {
				of = rel(x.Round.Of)
			}
			fmt.Fprintf(&b, " round=%s/%s/%d", of, x.Round.By, x.Round.N)
		}
		if x.HasRequestState {
			b.WriteString(" state")
		}
		if x.InputResponses != nil {
			b.WriteString(" responses=")
			for i, e := range x.InputResponses {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%s:%s", e.Key, e.Action)
			}
		}
		if x.Refused {
			b.WriteString(" refused")
		}
	case *record.Outcome:
		fmt.Fprintf(&b, " %s %s", x.Call.Text, x.Status)
		if !x.HasResponse {
			b.WriteString(" noresp")
		}
		if x.HasResultType {
			fmt.Fprintf(&b, " rt=%s", x.ResultType)
		}
		if x.HasTaskID {
			fmt.Fprintf(&b, " task=%s", x.TaskID)
		}
		if x.InputRequests != nil {
			b.WriteString(" inputs=")
			for i, e := range x.InputRequests {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%s:%s", e.Key, e.Method)
			}
		}
		if x.HasRequestState {
			b.WriteString(" state")
		}
	case *record.Task:
		fmt.Fprintf(&b, " %s intent=%s %s via=%s", x.TaskID, rel(x.Intent), x.Event, x.Via)
		if x.Event == record.TaskEnd {
			fmt.Fprintf(&b, " %s", x.Status)
		}
		if !x.HasDigest {
			b.WriteString(" nodigest")
		}
		for _, e := range x.InputRequests {
			fmt.Fprintf(&b, " %s:%s", e.Key, e.Method)
		}
		for _, e := range x.InputResponses {
			fmt.Fprintf(&b, " %s:%s", e.Key, e.Action)
		}
	case *record.Anomaly:
		fmt.Fprintf(&b, " %q", x.Reason)
		if !x.Forwarded {
			b.WriteString(" dropped")
		}
	case *record.Protocol:
		fmt.Fprintf(&b, " %s", x.Revision)
	case *record.ServerRequest:
		fmt.Fprintf(&b, " %s %s calls=", x.Call.Text, x.Method)
		for i, c := range x.Calls {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(rel(c))
		}
	case *record.ClientAnswer:
		fmt.Fprintf(&b, " %s request=%s %s action=%s", x.Call.Text, rel(x.Request), x.Status, x.Action)
	}
	return b.String()
}

// Lines of the protocol tests. meta26 declares 2026-07-28 in a request's
// _meta.
const meta26 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

func callLine(id, tool, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"a":1}` + extra + `}}`
}

func resultLine(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

const (
	inputRequired = `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{}},"roots":{"method":"roots/list"}},"requestState":"s1"}`
	inputNoState  = `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{}}}}`
	responses     = `,"inputResponses":{"login":{"action":"accept","content":{"name":"x"}},"roots":{"roots":[]}}`
	done          = `{"resultType":"complete","content":[]}`
)

// step is one line of a protocol test: from the client (c) or the child
// (s). A line that does not reach the other side (dropped) says so.
type step struct {
	from    byte
	line    string
	dropped bool
}

func c(line string) step { return step{from: 'c', line: line} }
func s(line string) step { return step{from: 's', line: line} }

// runSteps runs the steps through a Relay with both pumps, in order, each
// line read by the other side before the next is written, then ends the
// session and returns the records as summaries.
func runSteps(t *testing.T, maxPending int, steps []step) []string {
	t.Helper()
	ss := startSession(t, func(cfg *relay.Config) { cfg.MaxPending = maxPending })
	return driveSteps(t, ss, steps)
}

func driveSteps(t *testing.T, ss *toSession, steps []step) []string {
	t.Helper()
	for _, st := range steps {
		switch st.from {
		case 'c':
			ss.send(st.line)
			if !st.dropped {
				if got := ss.childLine(); got != st.line {
					t.Fatalf("the child read %q; want %q", got, st.line)
				}
			}
		case 's':
			ss.answer(st.line)
			if !st.dropped {
				if got := ss.clientLine(); got.line != st.line {
					t.Fatalf("the client read %q; want %q", got.line, st.line)
				}
			}
		}
	}
	if _, err := ss.r.End(record.StatusUnanswered, "test: session ended"); err != nil {
		t.Fatalf("End = %v", err)
	}
	seq, err := ss.j.Append(&record.PolicyReload{Set: "sha256:flush", Status: "applied"})
	if err == nil {
		err = ss.j.Wait(seq, journal.BeforeResponse)
	}
	if err != nil {
		t.Fatal(err)
	}
	recs := ss.records()
	recs = recs[:len(recs)-1]
	var out []string
	for _, r := range recs {
		out = append(out, summary(r, recs[0].Seq))
	}
	return out
}

func checkSummaries(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records =\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestProtocolRecords: what each answer was, rounds, tasks of both
// revisions, server requests and the client's answers, cancellation and
// the revision, each recorded as the package documentation says.
func TestProtocolRecords(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		want  []string
	}{
		{"input_required is not ok", []step{
			c(callLine("1", "login", "")),
			s(resultLine("1", inputRequired)),
		}, []string{
			"intent 1",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
		}},
		{"retry by state", []step{
			c(callLine("1", "login", "")),
			s(resultLine("1", inputRequired)),
			c(callLine("2", "login", `,"requestState":"s1"`+responses)),
			s(resultLine("2", done)),
		}, []string{
			"intent 1",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
			"intent 2 round=#1/state/2 state responses=login:accept,roots:",
			"outcome 2 ok rt=complete",
		}},
		{"retry by state, re-escaped", []step{
			c(callLine("1", "login", "")),
			s(resultLine("1", inputRequired)),
			c(callLine("2", "login", `,"requestState":"\u0073\u0031"`)),
			s(resultLine("2", inputRequired)),
			c(callLine("3", "login", `,"requestState":"s1"`)),
		}, []string{
			"intent 1",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
			"intent 2 round=#1/state/2 state",
			"outcome 2 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
			"intent 3 round=#3/state/3 state",
			"outcome 3 unanswered noresp",
		}},
		{"retry by match", []step{
			c(callLine("1", "login", "")),
			s(resultLine("1", inputNoState)),
			c(callLine("2", "login", responses)),
			s(resultLine("2", `{"content":[]}`)),
			c(callLine("3", "login", responses)),
			s(resultLine("3", `{"content":[]}`)),
		}, []string{
			"intent 1",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create",
			"intent 2 round=#1/match/2 responses=login:accept,roots:",
			"outcome 2 ok",
			"intent 3 responses=login:accept,roots:",
			"outcome 3 ok",
		}},
		{"other arguments do not match", []step{
			c(callLine("1", "login", "")),
			s(resultLine("1", inputNoState)),
			c(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"login","arguments":{"a":2}}}`),
		}, []string{
			"intent 1",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create",
			"intent 2",
			"outcome 2 unanswered noresp",
		}},
		{"unknown and reused state", []step{
			c(callLine("1", "login", `,"requestState":"forged"`)),
			s(resultLine("1", inputRequired)),
			c(callLine("2", "login", `,"requestState":"s1"`)),
			s(resultLine("2", done)),
			c(callLine("3", "login", `,"requestState":"s1"`)),
			s(resultLine("3", done)),
		}, []string{
			"intent 1 round=null/unknown_state/0 state",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
			"intent 2 round=#1/state/2 state",
			"outcome 2 ok rt=complete",
			"intent 3 round=null/reused_state/0 state",
			"outcome 3 ok rt=complete",
		}},
		{"other resultType", []step{
			c(callLine("1", "x", "")),
			s(resultLine("1", `{"resultType":"stream"}`)),
			c(callLine("2", "x", "")),
			s(resultLine("2", `{"resultType":"complete","isError":true}`)),
		}, []string{
			"intent 1",
			"outcome 1 other rt=stream",
			"intent 2",
			"outcome 2 tool_error rt=complete",
		}},
		{"resultType read differently", []step{
			c(callLine("1", "x", "")),
			s(resultLine("1", `{"resultType":"task","resultType":"complete"}`)),
		}, []string{
			"intent 1",
			`anomaly "result.resultType: duplicate key"`,
			"outcome 1 unanswered noresp",
		}},
		{"task 2026", []step{
			c(callLine("1", "slow", "")),
			s(resultLine("1", `{"resultType":"task","taskId":"t1","status":"working"}`)),
			c(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(resultLine("2", `{"resultType":"complete","taskId":"t1","status":"working"}`)),
			c(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(resultLine("3", `{"resultType":"complete","taskId":"t1","status":"input_required","inputRequests":{"k1":{"method":"elicitation/create"}}}`)),
			c(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(resultLine("4", `{"resultType":"complete","taskId":"t1","status":"input_required","inputRequests":{"k1":{"method":"elicitation/create"}}}`)),
			c(`{"jsonrpc":"2.0","id":5,"method":"tasks/update","params":{"taskId":"t1","inputResponses":{"k1":{"action":"decline"}}}}`),
			s(resultLine("5", `{"resultType":"complete"}`)),
			s(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t1","status":"completed","result":{"content":[],"isError":true}}}`),
			c(`{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(resultLine("6", `{"resultType":"complete","taskId":"t1","status":"completed","result":{"content":[]}}`)),
		}, []string{
			"intent 1",
			"outcome 1 task rt=task task=t1",
			"task t1 intent=#0 input_required via=tasks/get k1:elicitation/create",
			"task t1 intent=#0 update via=tasks/update k1:decline",
			"task t1 intent=#0 end via=notifications/tasks tool_error",
		}},
		{"task 2025", []step{
			c(callLine("1", "slow", `,"task":{"ttl":60000}`)),
			s(resultLine("1", `{"task":{"taskId":"t1","status":"working"}}`)),
			c(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(resultLine("2", `{"taskId":"t1","status":"completed"}`)),
			c(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"t1"}}`),
			s(resultLine("3", `{"content":[{"type":"text","text":"done"}]}`)),
		}, []string{
			"intent 1",
			"outcome 1 task task=t1",
			"task t1 intent=#0 end via=tasks/result ok",
		}},
		{"task 2025 cancelled", []step{
			c(callLine("1", "slow", `,"task":{}`)),
			s(resultLine("1", `{"task":{"taskId":"t1","status":"working"}}`)),
			c(`{"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"taskId":"t1"}}`),
			s(resultLine("2", `{"taskId":"t1","status":"cancelled"}`)),
			s(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1","status":"cancelled"}}`),
		}, []string{
			"intent 1",
			"outcome 1 task task=t1",
			"task t1 intent=#0 cancel via=tasks/cancel",
			"task t1 intent=#0 end via=tasks/cancel cancelled",
		}},
		{"polls that say nothing new", []step{
			c(`{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(resultLine("9", `{"resultType":"complete","taskId":"t1","status":"completed","result":{}}`)),
			c(callLine("1", "slow", "")),
			s(resultLine("1", `{"resultType":"task","taskId":"t1","status":"working"}`)),
			c(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"busy"}}`),
			c(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t2"}}`),
			s(resultLine("3", `{"resultType":"complete","taskId":"t2","status":"completed","result":{}}`)),
			c(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"t1","taskId":"t2"}}`),
			s(resultLine("4", `{"resultType":"complete","taskId":"t1","status":"completed","result":{}}`)),
			c(`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"t1"}}`),
			s(resultLine("5", `{"resultType":"complete","taskId":"t1","status":"failed","error":{"code":-1,"message":"x"}}`)),
			s(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t1","status":"completed","result":{}}}`),
		}, []string{
			"intent 1",
			"outcome 1 task rt=task task=t1",
			"task t1 intent=#0 end via=tasks/get failed",
		}},
		{"task claimed twice", []step{
			c(callLine("1", "slow", "")),
			s(resultLine("1", `{"resultType":"task","taskId":"t1","status":"working"}`)),
			c(callLine("2", "slow", "")),
			s(resultLine("2", `{"resultType":"task","taskId":"t1","status":"working"}`)),
		}, []string{
			"intent 1",
			"outcome 1 task rt=task task=t1",
			"intent 2",
			`anomaly "` + relay.ReasonTaskClaimed + `"`,
			"outcome 2 unanswered noresp",
			"task t1 intent=#0 end via=session_end unfinished nodigest",
		}},
		{"server requests on 2025-11-25", []step{
			c(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`),
			s(resultLine("0", `{"protocolVersion":"2025-11-25","capabilities":{}}`)),
			c(callLine("1", "ask", "")),
			s(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"name?"}}`),
			c(resultLine(`"e1"`, `{"action":"decline"}`)),
			s(`{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`),
			c(`{"jsonrpc":"2.0","id":"r1","error":{"code":-1,"message":"no"}}`),
			s(resultLine("1", `{"content":[]}`)),
		}, []string{
			"protocol 2025-11-25",
			"intent 1",
			"server_request e1 elicitation/create calls=#1",
			"client_answer e1 request=#2 ok action=decline",
			"server_request r1 roots/list calls=#1",
			"client_answer r1 request=#4 rpc_error action=",
			"outcome 1 ok",
		}},
		{"server request on 2026-07-28", []step{
			c(callLine("1", "ask", `,`+meta26)),
			s(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"name?"}}`),
			s(resultLine("1", `{"resultType":"complete","content":[]}`)),
		}, []string{
			"intent 1 rev=2026-07-28",
			"server_request e1 elicitation/create calls=#0",
			`anomaly "` + relay.ReasonServerRequest + `"`,
			"outcome 1 ok rt=complete",
		}},
		{"cancelled", []step{
			c(callLine("1", "slow", "")),
			c(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`),
			s(resultLine("1", `{"content":[]}`)),
			c(callLine("1", "slow", "")),
			s(resultLine("1", `{"content":[]}`)),
		}, []string{
			"intent 1",
			"outcome 1 cancelled noresp",
			`anomaly "` + relay.ReasonAnswerAfterCancel + `"`,
			"intent 1",
			"outcome 1 ok",
		}},
		{"cancelled, never answered, id reused", []step{
			c(callLine("1", "slow", "")),
			c(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`),
			c(callLine("1", "slow", "")),
			s(resultLine("1", `{"content":[]}`)),
		}, []string{
			"intent 1",
			"outcome 1 cancelled noresp",
			"intent 1",
			"outcome 1 ok",
		}},
		{"cancel of nothing in flight", []step{
			c(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`),
			c(callLine("7", "x", "")),
			s(resultLine("7", `{"content":[]}`)),
		}, []string{
			"intent 7",
			"outcome 7 ok",
		}},
		{"initialize settles 2026-07-28", []step{
			c(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`),
			s(resultLine("0", `{"protocolVersion":"2026-07-28"}`)),
			c(callLine("1", "ask", "")),
			s(`{"jsonrpc":"2.0","id":9,"method":"ping"}`),
			s(resultLine("1", `{"content":[]}`)),
		}, []string{
			"protocol 2026-07-28",
			"intent 1",
			"server_request 9 ping calls=#1",
			`anomaly "` + relay.ReasonServerRequest + `"`,
			"outcome 1 ok",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSummaries(t, runSteps(t, 0, tt.steps), tt.want)
		})
	}
}

// TestTaskEvicted: a task beyond Config.MaxPending live tasks evicts the
// oldest, which gets an unfinished end at once; its later end is not
// recorded, and a poll of it is not followed.
func TestTaskEvicted(t *testing.T) {
	got := runSteps(t, 1, []step{
		c(callLine("1", "slow", "")),
		s(resultLine("1", `{"resultType":"task","taskId":"a","status":"working"}`)),
		c(callLine("2", "slow", "")),
		s(resultLine("2", `{"resultType":"task","taskId":"b","status":"working"}`)),
		c(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"a"}}`),
		s(resultLine("3", `{"resultType":"complete","taskId":"a","status":"completed","result":{}}`)),
		s(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"b","status":"failed","error":{}}}`),
	})
	checkSummaries(t, got, []string{
		"intent 1",
		"outcome 1 task rt=task task=a",
		"intent 2",
		"outcome 2 task rt=task task=b",
		"task a intent=#0 end via=evicted unfinished nodigest",
		"task b intent=#2 end via=notifications/tasks failed",
	})
}

// TestTablesBoundedInBytes: 300 calls in flight meet 300 server requests
// with 100 kB ids, then half become tasks with 100 kB task ids and half
// are answered input_required with 100 kB states and input keys: the live
// tasks, the rounds issued and the server requests awaiting an answer
// hold a few hundred bytes each, not what the child sent: 90 MB of values
// must cost the relay no more than 2 MiB.
func TestTablesBoundedInBytes(t *testing.T) {
	const (
		calls = 300
		size  = 100_000
		bound = 2 << 20
	)
	j, path := testJournal(t)
	r := relay.New(relay.Config{Journal: j})
	// Each line is made in one allocation, of the values' tails made
	// once: copies of megabytes are most of what the test costs under the
	// race detector.
	xs := strings.Repeat("x", size)
	before := liveHeap()
	src := newStepReader()
	done := make(chan error)
	go func() { done <- r.Upstream(src, io.Discard) }()
	for k := range calls {
		<-src.waiting
		src.data <- []byte(callLine(strconv.Itoa(k), "slow", "") + "\n")
	}
	<-src.waiting
	close(src.data)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	down := newStepReader()
	go func() { done <- r.Downstream(down, io.Discard) }()
	for k := range calls {
		<-down.waiting
		down.data <- joinLine(`{"jsonrpc":"2.0","id":"`, []string{strconv.Itoa(k), xs}, `","method":"elicitation/create","params":{}}`+"\n")
	}
	for k := range calls {
		ks := strconv.Itoa(k)
		result := []string{`{"resultType":"task","taskId":"`, ks, xs, `","status":"working"}`}
		if k%2 == 1 {
			result = []string{`{"resultType":"input_required","inputRequests":{"`, ks, xs, `":{"method":"elicitation/create"}},"requestState":"`, ks, xs, `"}`}
		}
		<-down.waiting
		down.data <- joinLine(`{"jsonrpc":"2.0","id":`+ks+`,"result":`, result, "}\n")
	}
	<-down.waiting
	grew := int64(liveHeap()) - int64(before)
	t.Logf("%d tasks, %d rounds and %d server requests of %d-byte values: the heap grew by %d KiB", calls/2, calls/2, calls, size, grew>>10)
	if grew > bound {
		t.Errorf("the relay holds %d KiB; want at most %d KiB", grew>>10, bound>>10)
	}
	close(down.data)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := r.End(record.StatusUnanswered, "test"); err != nil {
		t.Fatal(err)
	}
	ends := 0
	for _, rec := range records(t, j, path) {
		if k, ok := rec.Body.(*record.Task); ok && k.Event == record.TaskEnd && k.Status == record.StatusUnfinished && k.TaskID.Abbreviated() {
			ends++
		}
	}
	if ends != calls/2 {
		t.Errorf("%d unfinished ends with abbreviated task ids; want %d", ends, calls/2)
	}
}

// TestGateSeesRound: the decider sees each call's round, as its intent
// records it.
func TestGateSeesRound(t *testing.T) {
	g := &seenGate{}
	ss := startSession(t, func(cfg *relay.Config) { cfg.Gate = g })
	got := driveSteps(t, ss, []step{
		c(callLine("1", "login", "")),
		s(resultLine("1", inputRequired)),
		c(callLine("2", "login", `,"requestState":"s1"`)),
		s(resultLine("2", inputRequired)),
		c(callLine("3", "login", `,"requestState":"s1"`)),
		s(resultLine("3", done)),
		c(callLine("4", "login", `,"requestState":"s1"`)),
	})
	var rounds []int
	for _, call := range g.seen {
		rounds = append(rounds, call.Round)
	}
	if fmt.Sprint(rounds) != "[1 2 3 0]" {
		t.Errorf("the decider saw rounds %v; want [1 2 3 0]", rounds)
	}
	checkSummaries(t, got, []string{
		"intent 1",
		"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
		"intent 2 round=#1/state/2 state",
		"outcome 2 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
		"intent 3 round=#3/state/3 state",
		"outcome 3 ok rt=complete",
		"intent 4 round=null/reused_state/0 state",
		"outcome 4 unanswered noresp",
	})
}
