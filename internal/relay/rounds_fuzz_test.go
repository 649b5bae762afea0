package relay_test

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// FuzzRounds drives random interleavings of rounds, tasks (both
// revisions), polls, cancellations and crashes (the child's stream
// ending, the session ending) through a real Relay with both pumps, over
// pipes, into an in-memory journal, one line at a time, each line read by
// the other side before the next is written. A simple model of calls
// (each call in flight until its answer, its cancellation or the
// session's end; each task live until its first end) computes what the
// log must say; the fuzzer checks that:
//
//   - every line reaches the other side as written;
//   - every intent has exactly one outcome, whose status is the model's;
//   - every round links to the outcome the model says (by state, by
//     match, unknown or reused), and no outcome is claimed twice;
//   - every task has exactly one end, with the model's status and via,
//     and every task record names the intent of the call that made it.
func FuzzRounds(f *testing.F) {
	fj := openFuzzJournal(f, "FuzzRounds")
	// ops: see roundsScript.
	f.Add([]byte{0, 0, 1, 3, 0, 0x10, 1, 0, 0x20})
	f.Add([]byte{0, 0, 1, 4, 0, 0, 1, 0})
	f.Add([]byte{0, 0, 1, 5, 2, 0, 3, 0, 2, 1, 3, 0x21, 4, 0x02})
	f.Add([]byte{0, 0x40, 1, 6, 2, 0x10, 3, 0x02, 2, 0x20, 3, 0x00})
	f.Add([]byte{0, 0, 0, 1, 5, 0, 1, 0, 1, 1})
	f.Add([]byte{0, 0, 1, 5, 0, 0, 1, 5, 7})
	f.Add([]byte{0, 0, 1, 5, 6, 0, 3, 0x24, 4, 0x24, 4, 0x33})
	f.Add([]byte{0, 0, 1, 6, 6, 0, 3, 0x05, 7})
	f.Add([]byte{8, 0, 0, 0, 8, 0, 9, 1, 1, 5, 8, 0, 9, 4, 9, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			ops = ops[:256]
		}
		runRounds(t, fj, ops)
	})
}

// roundsCall is a tools/call of the model.
type roundsCall struct {
	id        string
	tool      string
	args      string
	state     string // the requestState it presents; "" none
	status    string // final status; "" in flight
	cancelled bool
	round     int    // its round number
	link      string // its round's by, "" none
	of        int    // with by state or match: the index of the call whose outcome it claims
}

// roundsTask is a task of the model.
type roundsTask struct {
	id      string
	call    int  // the call that made it
	v2025   bool // a CreateTaskResult's
	end     string
	via     string
	waiting bool
	seen    map[string]bool
}

// roundsAsk is a request of the child's to the client.
type roundsAsk struct {
	id       string
	recorded bool  // read while something was in flight: a server_request
	calls    []int // the calls in flight then, by index
	answered bool
	failed   bool
	action   string
}

// parsing reports whether the relay reads the child's lines now:
// something is in flight (a call, a followed poll, a cancelled call's
// answer to come) or a task is live.
func (m *roundsModel) parsing() bool {
	for _, c := range m.calls {
		if c.status == "" || c.cancelled {
			return true
		}
	}
	for _, p := range m.polls {
		if p.live {
			return true
		}
	}
	return len(m.live) > 0
}

// inFlight is the calls in flight, by index: awaiting their answer, or
// their task live.
func (m *roundsModel) inFlight() []int {
	var out []int
	for i, c := range m.calls {
		if c.status == "" {
			out = append(out, i)
			continue
		}
		for _, k := range m.live {
			if k.call == i {
				out = append(out, i)
			}
		}
	}
	return out
}

// roundsPoll is a task request of the model awaiting its answer.
type roundsPoll struct {
	id     string
	method string
	task   string
	live   bool // the relay follows it: its task was live when sent
}

// roundsModel is what the relay must record.
type roundsModel struct {
	calls []*roundsCall
	tasks []*roundsTask // every task made, in order
	live  map[string]*roundsTask
	polls []*roundsPoll
	asks  []*roundsAsk // the child's requests awaiting the client's answer
	// answered are the child's requests the client answered, in order.
	answered []*roundsAsk
	states   map[string]*roundsIssued // by requestState
	match    map[string]*roundsIssued // by tool and arguments
	nextID   int
}

type roundsIssued struct {
	call    int
	claimed bool
}

// runRounds runs ops through a relay and checks the log against the
// model. Each op is a pair of bytes (kind, argument):
//
//	0 a   the client calls: tool a&1, arguments a>>1&1; a>>2&3 picks a
//	      requestState (1: the last issued, 2: an earlier one, 3: bogus);
//	      a&0x40: it carries inputResponses
//	1 a   the child answers call a%n (in flight or cancelled): a>>3&7
//	      picks ok, tool_error, rpc_error, input_required with a state,
//	      input_required without, a 2026 task, a 2025 task, other
//	2 a   the client asks tasks/get (a&3: 0, 1; 2 tasks/result, 3
//	      tasks/cancel) of task a>>4&3
//	3 a   the child answers poll a%n: a>>2&7 picks working,
//	      input_required (keys a>>5), completed, completed isError, failed,
//	      cancelled, an error, an empty result
//	4 a   the child sends notifications/tasks (a&1: /status) for task
//	      a>>4&3 with status as op 3's a>>1&7
//	5 a   the client cancels call a%n
//	6 a   the child's stream ends (a crash), then the session
//	7 a   the session ends
//	8 a   the child asks the client something (elicitation/create)
//	9 a   the client answers request a%n of the child's (a&4: an
//	      error; else action a&3: accept, decline, cancel, none)
func runRounds(t *testing.T, fj *fuzzJournal, ops []byte) {
	fixed := fuzzEpoch.Add(2 * time.Hour)
	r := relay.New(relay.Config{Journal: fj.j, Client: io.Discard, Clock: func() time.Time { return fixed }})
	clientR, clientW := io.Pipe()
	childInR, childInW := io.Pipe()
	childOutR, childOutW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 2)
	go func() { done <- r.Upstream(clientR, childInW); childInW.Close() }()
	go func() { done <- r.Downstream(childOutR, outW); outW.Close() }()
	childR, clientIn := bufio.NewReader(childInR), bufio.NewReader(outR)
	send := func(w io.Writer, rd *bufio.Reader, line string) {
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			t.Fatalf("write %q: %v", line, err)
		}
		got, err := rd.ReadString('\n')
		if err != nil || got != line+"\n" {
			t.Fatalf("the other side read %q, %v; want %q", got, err, line)
		}
	}
	m := &roundsModel{live: map[string]*roundsTask{}, states: map[string]*roundsIssued{}, match: map[string]*roundsIssued{}}
	var issued []string // states issued, in order
	childUp := true
	for k := 0; k+1 < len(ops) && childUp; k += 2 {
		op, a := ops[k]%10, int(ops[k+1])
		switch op {
		case 0:
			c := &roundsCall{id: strconv.Itoa(m.nextID), tool: "ab"[a&1 : a&1+1], args: []string{`{}`, `{"x":1}`}[a>>1&1], round: 1}
			m.nextID++
			switch a >> 2 & 3 {
			case 1:
				if len(issued) > 0 {
					c.state = issued[len(issued)-1]
				}
			case 2:
				if len(issued) > 0 {
					c.state = issued[0]
				}
			case 3:
				c.state = "bogus"
			}
			extra := ""
			if c.state != "" {
				extra += `,"requestState":"` + c.state + `"`
			}
			if a&0x40 != 0 {
				extra += `,"inputResponses":{"k":{"action":"accept"}}`
			}
			m.link(c)
			m.calls = append(m.calls, c)
			send(clientW, childR, `{"jsonrpc":"2.0","id":`+c.id+`,"method":"tools/call","params":{"name":"`+c.tool+`","arguments":`+c.args+extra+`}}`)
		case 1:
			var open []*roundsCall
			for _, c := range m.calls {
				if c.status == "" || c.cancelled {
					open = append(open, c)
				}
			}
			if len(open) == 0 {
				continue
			}
			c := open[a%len(open)]
			if c.cancelled {
				c.cancelled = false // answered late: the answer is an anomaly
				c.status = record.StatusCancelled
			}
			kind := a >> 3 & 7
			task := "T" + strconv.Itoa(a&1)
			result := m.answer(c, kind, task, &issued)
			send(childOutW, clientIn, `{"jsonrpc":"2.0","id":`+c.id+`,`+result+`}`)
		case 2:
			method := []string{"tasks/get", "tasks/get", "tasks/result", "tasks/cancel"}[a&3]
			p := &roundsPoll{id: "p" + strconv.Itoa(m.nextID), method: method, task: "T" + strconv.Itoa(a>>4&3)}
			m.nextID++
			p.live = m.live[p.task] != nil
			m.polls = append(m.polls, p)
			send(clientW, childR, `{"jsonrpc":"2.0","id":"`+p.id+`","method":"`+method+`","params":{"taskId":"`+p.task+`"}}`)
		case 3:
			if len(m.polls) == 0 {
				continue
			}
			i := a % len(m.polls)
			p := m.polls[i]
			m.polls = append(m.polls[:i], m.polls[i+1:]...)
			result := m.pollAnswer(p, a>>2&7, a>>5)
			send(childOutW, clientIn, `{"jsonrpc":"2.0","id":"`+p.id+`",`+result+`}`)
		case 4:
			method := "notifications/tasks"
			if a&1 != 0 {
				method = "notifications/tasks/status"
			}
			id := "T" + strconv.Itoa(a>>4&3)
			status, fields, inputs := statusOf(a>>1&7, a>>5)
			if k := m.live[id]; k != nil && status != "" {
				m.taskStatus(k, status, fields, inputs, method)
			}
			params := `{"taskId":"` + id + `"` + fields + `}`
			send(childOutW, clientIn, `{"jsonrpc":"2.0","method":"`+method+`","params":`+params+`}`)
		case 5:
			if len(m.calls) == 0 {
				continue
			}
			c := m.calls[a%len(m.calls)]
			if c.status == "" {
				c.status, c.cancelled = record.StatusCancelled, true
			}
			send(clientW, childR, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+c.id+`}}`)
		case 6:
			childOutW.Close()
			childUp = false
		case 7:
			childUp = false
		case 8:
			q := &roundsAsk{id: "q" + strconv.Itoa(m.nextID)}
			m.nextID++
			if m.parsing() {
				q.recorded, q.calls = true, m.inFlight()
				m.asks = append(m.asks, q)
			}
			send(childOutW, clientIn, `{"jsonrpc":"2.0","id":"`+q.id+`","method":"elicitation/create","params":{}}`)
		case 9:
			if len(m.asks) == 0 {
				continue
			}
			i := a % len(m.asks)
			q := m.asks[i]
			m.asks = append(m.asks[:i], m.asks[i+1:]...)
			result := `"error":{"code":-1,"message":"no"}`
			if a&4 == 0 {
				q.action = []string{"accept", "decline", "cancel", ""}[a&3]
				result = `"result":{"action":"` + q.action + `"}`
				if q.action == "" {
					result = `"result":{}`
				}
			} else {
				q.failed = true
			}
			q.answered = true
			m.answered = append(m.answered, q)
			send(clientW, childR, `{"jsonrpc":"2.0","id":"`+q.id+`",`+result+`}`)
		}
	}
	if _, err := r.End(record.StatusUnanswered, "fuzz: session ended"); err != nil {
		t.Fatalf("End = %v", err)
	}
	clientW.Close()
	childOutW.Close()
	childInR.Close()
	outR.Close()
	for range 2 {
		<-done
	}
	recs, err := fj.records()
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, recs)
}

// link decides the round of c as the relay must.
func (m *roundsModel) link(c *roundsCall) {
	if c.state != "" {
		e := m.states[c.state]
		switch {
		case e == nil:
			c.link = record.RoundUnknownState
		case e.claimed:
			c.link = record.RoundReusedState
		default:
			e.claimed = true
			c.link, c.of, c.round = record.RoundByState, e.call, m.calls[e.call].round+1
		}
		return
	}
	if e := m.match[c.tool+c.args]; e != nil && !e.claimed {
		e.claimed = true
		c.link, c.of, c.round = record.RoundByMatch, e.call, m.calls[e.call].round+1
	}
}

// answer is the child's answer to c (its members after the id), and what
// it makes of c in the model.
func (m *roundsModel) answer(c *roundsCall, kind int, task string, issued *[]string) string {
	late := c.status != ""
	set := func(status string) {
		if !late {
			c.status = status
		}
	}
	index := 0
	for i, d := range m.calls {
		if d == c {
			index = i
		}
	}
	switch kind {
	case 0:
		set(record.StatusOK)
		return `"result":{"content":[]}`
	case 1:
		set(record.StatusToolError)
		return `"result":{"resultType":"complete","isError":true}`
	case 2:
		set(record.StatusRPCError)
		return `"error":{"code":-32603,"message":"x"}`
	case 3:
		state := "s" + strconv.Itoa(len(*issued))
		if !late {
			*issued = append(*issued, state)
			m.states[state] = &roundsIssued{call: index}
		}
		set(record.StatusInputRequired)
		return `"result":{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create"}},"requestState":"` + state + `"}`
	case 4:
		if !late {
			m.match[c.tool+c.args] = &roundsIssued{call: index}
		}
		set(record.StatusInputRequired)
		return `"result":{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create"}}}`
	case 5, 6:
		if !late && m.live[task] == nil {
			k := &roundsTask{id: task, call: index, v2025: kind == 6, seen: map[string]bool{}}
			m.tasks = append(m.tasks, k)
			m.live[task] = k
			set(record.StatusTask)
		}
		if kind == 6 {
			return `"result":{"task":{"taskId":"` + task + `","status":"working"}}`
		}
		return `"result":{"resultType":"task","taskId":"` + task + `","status":"working"}`
	}
	set(record.StatusOther)
	return `"result":{"resultType":"stream"}`
}

// statusOf is a task status and the members that carry it (after the
// taskId), by s; keys picks one of the inputRequests keys of
// input_required, whose keys it returns.
func statusOf(s, keys int) (string, string, []string) {
	switch s {
	case 0:
		return "working", `,"status":"working"`, nil
	case 1:
		k := "k" + strconv.Itoa(keys&3)
		return "input_required", `,"status":"input_required","inputRequests":{"` + k + `":{"method":"elicitation/create"},"j":{"method":"roots/list"}}`, []string{k, "j"}
	case 2:
		return "completed", `,"status":"completed","result":{"content":[]}`, nil
	case 3:
		return "completed", `,"status":"completed","result":{"content":[],"isError":true}`, nil
	case 4:
		return "failed", `,"status":"failed","error":{"code":-1,"message":"x"}`, nil
	case 5:
		return "cancelled", `,"status":"cancelled"`, nil
	}
	return "", "", nil
}

// pollAnswer is the child's answer to poll p (members after the id), and
// what it says of p's task in the model.
func (m *roundsModel) pollAnswer(p *roundsPoll, s, keys int) string {
	k := m.live[p.task]
	if !p.live {
		k = nil // the relay did not follow it
	}
	switch {
	case s == 6:
		if k != nil && p.method == "tasks/result" {
			m.end(k, p.method, record.StatusRPCError)
		}
		return `"error":{"code":-32602,"message":"no such task"}`
	case s == 7:
		// An empty result changes no status; to tasks/result it is the
		// task's result all the same (a call's answer of {} is ok).
		if k != nil && p.method == "tasks/result" {
			m.end(k, p.method, record.StatusOK)
		}
		return `"result":{}`
	}
	status, fields, inputs := statusOf(s, keys)
	switch p.method {
	case "tasks/result":
		st, result := record.StatusOK, `{"content":[]}`
		if s == 3 {
			st, result = record.StatusToolError, `{"content":[],"isError":true}`
		}
		if k != nil {
			m.end(k, p.method, st)
		}
		return `"result":` + result
	case "tasks/cancel":
		if k != nil && status == "cancelled" {
			m.end(k, p.method, record.StatusCancelled)
		}
	default:
		if k != nil {
			m.taskStatus(k, status, fields, inputs, p.method)
		}
	}
	return `"result":{"resultType":"complete","taskId":"` + p.task + `"` + fields + `}`
}

// taskStatus is what a status of live task k, carried by via, makes of
// it.
func (m *roundsModel) taskStatus(k *roundsTask, status, fields string, inputs []string, via string) {
	switch status {
	case "completed":
		if k.v2025 {
			k.waiting = false
			return
		}
		st := record.StatusOK
		if strings.Contains(fields, `"isError":true`) {
			st = record.StatusToolError
		}
		m.end(k, via, st)
	case "failed":
		m.end(k, via, record.StatusFailed)
	case "cancelled":
		m.end(k, via, record.StatusCancelled)
	case "input_required":
		fresh := false
		for _, key := range inputs {
			if !k.seen[key] {
				k.seen[key], fresh = true, true
			}
		}
		if !k.waiting || fresh {
			k.waiting = true
		}
	default:
		k.waiting = false
	}
}

func (m *roundsModel) end(k *roundsTask, via, status string) {
	k.end, k.via = status, via
	delete(m.live, k.id)
}

// check compares the records of a run with the model.
func (m *roundsModel) check(t *testing.T, recs []*record.Record) {
	t.Helper()
	for _, k := range m.live {
		k.end, k.via = record.StatusUnfinished, record.ViaSessionEnd
	}
	for _, c := range m.calls {
		if c.status == "" {
			c.status = record.StatusUnanswered
		}
	}
	var intents []uint64
	outcomes := map[uint64]*record.Outcome{} // by intent
	outcomeSeq := map[uint64]uint64{}        // intent → outcome seq
	claimed := map[uint64]uint64{}           // outcome seq → the intent that claims it
	taskOf := map[uint64]string{}            // task outcome's intent → task id
	ends := map[uint64][]*record.Task{}      // by intent
	for _, r := range recs {
		switch b := r.Body.(type) {
		case *record.Intent:
			intents = append(intents, r.Seq)
			if b.Round.HasOf {
				if other, ok := claimed[b.Round.Of]; ok {
					t.Fatalf("outcome %d claimed by intents %d and %d", b.Round.Of, other, r.Seq)
				}
				claimed[b.Round.Of] = r.Seq
			}
		case *record.Outcome:
			if outcomes[b.Intent] != nil {
				t.Fatalf("intent %d has two outcomes: %s and %s", b.Intent, outcomes[b.Intent].Status, b.Status)
			}
			outcomes[b.Intent], outcomeSeq[b.Intent] = b, r.Seq
			if b.HasTaskID {
				taskOf[b.Intent] = string(b.TaskID.Text)
			}
		case *record.Task:
			id, ok := taskOf[b.Intent]
			if !ok || id != string(b.TaskID.Text) {
				t.Fatalf("task record %s of intent %d names no task that intent made", b.TaskID, b.Intent)
			}
			if b.Event == record.TaskEnd {
				if len(ends[b.Intent]) > 0 {
					t.Fatalf("task %s of intent %d has two ends", b.TaskID, b.Intent)
				}
				ends[b.Intent] = append(ends[b.Intent], b)
			}
		}
	}
	if len(intents) != len(m.calls) {
		t.Fatalf("%d intents; want %d", len(intents), len(m.calls))
	}
	// The child's requests read while something was in flight, and the
	// client's answers to those.
	asked := map[uint64]string{} // server_request seq → its id
	var answers []string
	for _, r := range recs {
		switch b := r.Body.(type) {
		case *record.ServerRequest:
			asked[r.Seq] = string(b.Call.Text)
			var want []uint64
			for _, q := range m.asksByID(string(b.Call.Text)) {
				for _, i := range q.calls {
					want = append(want, intents[i])
				}
			}
			if fmt.Sprint(b.Calls) != fmt.Sprint(want) && !(len(b.Calls) == 0 && len(want) == 0) {
				t.Errorf("server_request %s names calls %v; want %v", b.Call.Text, b.Calls, want)
			}
		case *record.ClientAnswer:
			if asked[b.Request] != string(b.Call.Text) {
				t.Errorf("client_answer %s answers seq %d, the server_request of %q", b.Call.Text, b.Request, asked[b.Request])
			}
			answers = append(answers, fmt.Sprintf("%s %s %s", b.Call.Text, b.Status, b.Action))
		}
	}
	var wantAnswers []string
	for _, q := range m.answered {
		if !q.recorded {
			continue
		}
		st, action := record.StatusOK, q.action
		if q.failed {
			st, action = record.StatusRPCError, ""
		}
		wantAnswers = append(wantAnswers, fmt.Sprintf("%s %s %s", q.id, st, action))
	}
	if fmt.Sprint(answers) != fmt.Sprint(wantAnswers) {
		t.Errorf("client answers %q; want %q", answers, wantAnswers)
	}
	recorded := 0
	for _, q := range append(append([]*roundsAsk(nil), m.asks...), m.answered...) {
		if q.recorded {
			recorded++
		}
	}
	if len(asked) != recorded {
		t.Errorf("%d server_request records; want %d", len(asked), recorded)
	}
	for i, c := range m.calls {
		o := outcomes[intents[i]]
		if o == nil {
			t.Fatalf("call %s (intent %d) has no outcome", c.id, intents[i])
		}
		if o.Status != c.status {
			t.Errorf("call %s: outcome %s; want %s", c.id, o.Status, c.status)
		}
	}
	for i, c := range m.calls {
		var in *record.Intent
		for _, r := range recs {
			if r.Seq == intents[i] {
				in = r.Body.(*record.Intent)
			}
		}
		want := record.Round{By: c.link}
		if c.link == record.RoundByState || c.link == record.RoundByMatch {
			want.Of, want.HasOf, want.N = outcomeSeq[intents[c.of]], true, c.round
		}
		if in.Round != want {
			t.Errorf("call %s: round %+v; want %+v", c.id, in.Round, want)
		}
	}
	for _, k := range m.tasks {
		intent := intents[k.call]
		got := ends[intent]
		if len(got) != 1 {
			t.Errorf("task %s of call %s: %d ends; want 1", k.id, m.calls[k.call].id, len(got))
			continue
		}
		if got[0].Status != k.end || got[0].Via != k.via {
			t.Errorf("task %s of call %s: end %s via %s; want %s via %s", k.id, m.calls[k.call].id, got[0].Status, got[0].Via, k.end, k.via)
		}
	}
	if t.Failed() {
		var b strings.Builder
		for _, r := range recs {
			fmt.Fprintf(&b, "\n%d %s", r.Seq, render(r.Kind, r.Body))
		}
		t.Log("records:", b.String())
	}
}

// asksByID returns the recorded requests of the child with this id.
func (m *roundsModel) asksByID(id string) []*roundsAsk {
	var out []*roundsAsk
	for _, q := range append(append([]*roundsAsk(nil), m.asks...), m.answered...) {
		if q.id == id && q.recorded {
			out = append(out, q)
		}
	}
	return out
}
