package frame

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// Lines of the 2026-07-28 revision, multi round-trip requests and tasks.
const (
	call2026      = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	inputRequired = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Deploy?","requestedSchema":{"type":"object"}}}},"requestState":"eyJzdGVwIjoxfQ=="}}`
	retry2026     = `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"deploy","arguments":{"env":"prod"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"eyJzdGVwIjoxfQ=="}}`
)

// showRounds renders what a test checks of a message's Rounds.
func showRounds(m *Message) string {
	r := gotRounds(m)
	var b strings.Builder
	fmt.Fprintf(&b, "op=%s", r.Op)
	for _, f := range []struct{ name, v string }{
		{"revision", r.Revision}, {"taskId", r.TaskID}, {"status", r.Status}, {"requestState", r.RequestState},
		{"inputResponses", r.InputResponses}, {"cancel", r.CancelID}, {"resultType", r.ResultType},
		{"result.taskId", r.ResultTaskID}, {"result.status", r.ResultStatus}, {"result.requestState", r.ResultState},
		{"inputRequests", r.InputRequests}, {"protocolVersion", r.ProtocolVersion}, {"action", r.ResultAction},
	} {
		if f.v != "-" {
			fmt.Fprintf(&b, " %s=%s", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    bool
	}{{"nested", r.ResultTaskNested}, {"taskAugmented", r.TaskAugmented}, {"taskIsError", r.TaskResultIsError}, {"taskError", r.TaskHasError}} {
		if f.v {
			fmt.Fprintf(&b, " %s", f.name)
		}
	}
	if m.Malformed != "" {
		fmt.Fprintf(&b, " malformed=%q", m.Malformed)
	}
	return b.String()
}

func TestRounds(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"2026 call", call2026, `op=tools/call revision="2026-07-28"`},
		{"input_required", inputRequired, `op=other resultType="input_required" result.requestState="eyJzdGVwIjoxfQ==" inputRequests=1:"confirm"="elicitation/create",`},
		{"retry", retry2026, `op=tools/call revision="2026-07-28" requestState="eyJzdGVwIjoxfQ==" inputResponses=1:"confirm"="accept",`},
		{"escaped state is decoded", `{"id":1,"result":{"resultType":"input_required","requestState":"a\/b\u0041"}}`, `op=other resultType="input_required" result.requestState="a/bA"`},
		{"input values without method or action", `{"id":1,"method":"tools/call","params":{"name":"a","inputResponses":{"a":5,"b":{"action":1},"c":{}}}}`, `op=tools/call inputResponses=3:"a"=nil,"b"=nil,"c"=nil,`},
		{"2026 task created", `{"id":1,"result":{"resultType":"task","taskId":"t-1","status":"working","ttlMs":60000}}`, `op=other resultType="task" result.taskId="t-1" result.status="working"`},
		{"2025 task created", `{"id":1,"result":{"task":{"taskId":"t-1","status":"working","ttl":60000}}}`, `op=other result.taskId="t-1" result.status="working" nested`},
		{"2025 task-augmented call", `{"id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":60000}}}`, `op=tools/call taskAugmented`},
		{"tasks/get", `{"id":2,"method":"tasks/get","params":{"taskId":"t-1"}}`, `op=tasks/get taskId="t-1"`},
		{"tasks/get completed with isError", `{"id":2,"result":{"resultType":"complete","taskId":"t-1","status":"completed","result":{"content":[],"isError":true}}}`, `op=other resultType="complete" result.taskId="t-1" result.status="completed" taskIsError`},
		{"tasks/get failed", `{"id":2,"result":{"taskId":"t-1","status":"failed","error":{"code":-32603,"message":"boom"}}}`, `op=other result.taskId="t-1" result.status="failed" taskError`},
		{"tasks/update", `{"id":3,"method":"tasks/update","params":{"taskId":"t-1","inputResponses":{"k":{"action":"decline"}}}}`, `op=tasks/update taskId="t-1" inputResponses=1:"k"="decline",`},
		{"tasks/cancel", `{"id":4,"method":"tasks/cancel","params":{"taskId":"t-1"}}`, `op=tasks/cancel taskId="t-1"`},
		{"tasks/result", `{"id":4,"method":"tasks/result","params":{"taskId":"t-1"}}`, `op=tasks/result taskId="t-1"`},
		{"notifications/tasks", `{"method":"notifications/tasks","params":{"taskId":"t-1","status":"completed","result":{"isError":true}}}`, `op=notifications/tasks taskId="t-1" status="completed" taskIsError`},
		{"notifications/tasks input_required", `{"method":"notifications/tasks","params":{"taskId":"t-1","status":"input_required","inputRequests":{"a":{"method":"sampling/createMessage"}}}}`, `op=notifications/tasks taskId="t-1" status="input_required" inputRequests=1:"a"="sampling/createMessage",`},
		{"notifications/tasks/status", `{"method":"notifications/tasks/status","params":{"taskId":"t-1","status":"cancelled"}}`, `op=notifications/tasks/status taskId="t-1" status="cancelled"`},
		{"notifications/cancelled", `{"method":"notifications/cancelled","params":{"requestId":1.0,"reason":"user"}}`, `op=notifications/cancelled cancel=n1e0`},
		{"initialize answer", `{"id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`, `op=other protocolVersion="2025-11-25"`},
		{"initialize", `{"id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, `op=initialize`},
		{"elicitation", `{"id":"s1","method":"elicitation/create","params":{}}`, `op=elicitation/create`},
		{"elicitation answer", `{"id":"s1","result":{"action":"accept","content":{"ok":true}}}`, `op=other action="accept"`},
		{"elicitation answer, variant action", `{"id":"s1","result":{"action":"decline","Action":"accept"}}`, `op=other malformed="result.action: case-variant key"`},

		// Readers disagree: Malformed, and the value is not given.
		{"duplicate resultType", `{"id":1,"result":{"resultType":"complete","resultType":"input_required"}}`, `op=other malformed="result.resultType: duplicate key"`},
		{"escaped duplicate resultType", `{"id":1,"result":{"resultType":"task","result\u0054ype":"complete"}}`, `op=other malformed="result.resultType: duplicate key"`},
		{"case-variant resultType", `{"id":1,"result":{"resultType":"complete","ResultType":"input_required"}}`, `op=other malformed="result.resultType: case-variant key"`},
		{"resultType not a string", `{"id":1,"result":{"resultType":1}}`, `op=other malformed="result.resultType: not a string"`},
		{"resultType with U+0000", `{"id":1,"result":{"resultType":"task\u0000x"}}`, `op=other malformed="result.resultType: contains U+0000 or U+FFFD"`},
		{"duplicate task id", `{"id":1,"result":{"resultType":"task","taskId":"a","taskId":"b"}}`, `op=other resultType="task" malformed="result.taskId: duplicate key"`},
		{"variant task id in task", `{"id":1,"result":{"task":{"taskId":"a","task_id":"b"}}}`, `op=other malformed="result.task.taskId: case-variant key"`},
		{"two tasks", `{"id":1,"result":{"task":{"taskId":"a"},"task":{"taskId":"b"}}}`, `op=other malformed="result.task: duplicate key"`},
		{"taskId and task", `{"id":1,"result":{"taskId":"a","task":{"taskId":"b"}}}`, `op=other malformed="result: both taskId and task"`},
		{"status and task", `{"id":1,"result":{"status":"working","task":{"taskId":"b"}}}`, `op=other malformed="result: both status and task"`},
		{"task id with invalid UTF-8", "{\"id\":1,\"result\":{\"taskId\":\"a\xff\"}}", `op=other malformed="result.taskId: contains U+0000 or U+FFFD"`},
		{"duplicate requestState", `{"id":1,"result":{"resultType":"input_required","requestState":"a","requestState":"b"}}`, `op=other resultType="input_required" malformed="result.requestState: duplicate key"`},
		{"duplicate inputRequests key", `{"id":1,"result":{"inputRequests":{"a":{"method":"x"},"a":{"method":"y"}}}}`, `op=other malformed="inputRequests: duplicate key"`},
		{"variant method in an input request", `{"id":1,"result":{"inputRequests":{"a":{"method":"x","METHOD":"y"}}}}`, `op=other malformed="inputRequests method: case-variant key"`},
		{"variant protocolVersion", `{"id":0,"result":{"protocolVersion":"2025-11-25","protocolversion":"2026-07-28"}}`, `op=other malformed="result.protocolVersion: case-variant key"`},
		{"variant isError of a task", `{"id":2,"result":{"taskId":"t","status":"completed","result":{"isError":false,"IsError":true}}}`, `op=other result.taskId="t" result.status="completed" malformed="result.isError of the task: case-variant key"`},
		{"duplicate taskId of tasks/get", `{"id":2,"method":"tasks/get","params":{"taskId":"a","taskId":"b"}}`, `op=tasks/get malformed="params.taskId: duplicate key"`},
		{"variant taskId of tasks/cancel", `{"id":2,"method":"tasks/cancel","params":{"TaskId":"a"}}`, `op=tasks/cancel malformed="params.taskId: case-variant key"`},
		{"tasks/get method duplicated", `{"id":2,"method":"tasks/get","method":"ping","params":{"taskId":"a"}}`, `op=other taskId="a" malformed="method: duplicate key"`},
		{"tasks/get cut at U+0000", `{"id":2,"method":"tasks/get\u0000x","params":{"taskId":"a"}}`, `op=other taskId="a" malformed="method: contains U+0000 or U+FFFD"`},
		{"duplicate revision", `{"id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, `op=tools/call malformed="params._meta protocolVersion: duplicate key"`},
		{"variant _meta", `{"id":1,"method":"tools/call","params":{"name":"a","_meta":{},"_Meta":{}}}`, `op=tools/call malformed="params._meta: case-variant key"`},
		{"duplicate action", `{"id":1,"method":"tools/call","params":{"name":"a","inputResponses":{"k":{"action":"decline","action":"accept"}}}}`, `op=tools/call malformed="params.inputResponses action: duplicate key"`},
		{"duplicate inputResponses key", `{"id":1,"method":"tools/call","params":{"name":"a","inputResponses":{"k":{"action":"decline"},"\u006b":{"action":"accept"}}}}`, `op=tools/call malformed="params.inputResponses: duplicate key"`},
		{"variant requestState", `{"id":1,"method":"tools/call","params":{"name":"a","requestState":"a","RequestState":"b"}}`, `op=tools/call malformed="params.requestState: case-variant key"`},
		{"variant requestId", `{"method":"notifications/cancelled","params":{"requestId":1,"requestID":2}}`, `op=notifications/cancelled malformed="params.requestId: case-variant key"`},
		{"requestId an object", `{"method":"notifications/cancelled","params":{"requestId":{}}}`, `op=notifications/cancelled malformed="params.requestId: not a string, number or null"`},
		{"variant status of a notification", `{"method":"notifications/tasks/status","params":{"taskId":"t","status":"working","STATUS":"completed"}}`, `op=notifications/tasks/status taskId="t" malformed="params.status: case-variant key"`},
		// Not recorded: not Malformed, the unclear value still not given.
		{"ping with duplicate taskId", `{"id":1,"method":"ping","params":{"taskId":"a","taskId":"b"}}`, `op=other`},
	}
	var c Classifier
	var f Frame
	for _, tt := range tests {
		c.Classify([]byte(tt.line), &f)
		if len(f.Msgs) != 1 {
			t.Errorf("%s: Classify(%s) = %s; want one message", tt.name, tt.line, describe(&f))
			continue
		}
		if got := showRounds(&f.Msgs[0]); got != tt.want {
			t.Errorf("%s: Classify(%s) rounds = %s; want %s", tt.name, tt.line, got, tt.want)
		}
	}
}

// TestRoundsInputsBounded: lists keep MaxInputs members and count them
// all; a line keeps at most maxFrameInputs, whatever its batch holds.
func TestRoundsInputsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id":1,"result":{"inputRequests":{`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":{"method":"m%d"}`, i, i)
	}
	b.WriteString(`}}}`)
	one := b.String()
	var c Classifier
	var f Frame
	c.Classify([]byte(one), &f)
	m := &f.Msgs[0]
	if len(m.InputRequests) != MaxInputs || m.InputRequestsN != 100 || m.Malformed != "" {
		t.Fatalf("Classify(100 inputRequests) = %d kept, %d counted, malformed %q; want %d, 100, none", len(m.InputRequests), m.InputRequestsN, m.Malformed, MaxInputs)
	}
	if got := string(m.InputRequests[MaxInputs-1].Key) + "=" + string(m.InputRequests[MaxInputs-1].Value); got != "k31=m31" {
		t.Errorf("Classify(100 inputRequests).InputRequests[31] = %s; want k31=m31", got)
	}

	batch := []byte("[" + strings.Repeat(one+",", MaxBatch-1) + one + "]")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c.Classify(batch, &f)
	runtime.ReadMemStats(&after)
	kept := 0
	for i := range f.Msgs {
		m := &f.Msgs[i]
		if m.InputRequestsN != 100 || m.Malformed != "" {
			t.Fatalf("batch msg %d: %d counted, malformed %q; want 100, none", i, m.InputRequestsN, m.Malformed)
		}
		kept += len(m.InputRequests)
	}
	if kept != maxFrameInputs {
		t.Errorf("batch of %d: %d inputs kept; want %d", MaxBatch, kept, maxFrameInputs)
	}
	// What Classify holds is MaxBatch Messages and Rounds and
	// maxFrameInputs Inputs, whatever the line: allocated while growing
	// by doubling, at most twice that; twice that again covers what the
	// race detector adds.
	held := MaxBatch*(unsafe.Sizeof(Message{})+unsafe.Sizeof(Rounds{})) + maxFrameInputs*unsafe.Sizeof(Input{})
	if got, limit := after.TotalAlloc-before.TotalAlloc, 4*uint64(held); got > limit {
		t.Errorf("Classify(batch of %d) allocated %d bytes; want at most %d", MaxBatch, got, limit)
	}
}

func TestRoundsAllocs(t *testing.T) {
	lines := [][]byte{
		[]byte(call2026), []byte(inputRequired), []byte(retry2026),
		[]byte(`[` + call2026 + `,` + inputRequired + `,{"method":"notifications/cancelled","params":{"requestId":"7"}}]`),
		[]byte(`{"id":1,"result":{"task":{"taskId":"t\u0031","status":"working"}}}`),
	}
	var c Classifier
	var f Frame
	for _, l := range lines {
		c.Classify(l, &f)
	}
	for _, l := range lines {
		if n := testing.AllocsPerRun(100, func() { c.Classify(l, &f) }); n != 0 {
			t.Errorf("Classify(%.40q) allocs = %v; want 0", l, n)
		}
	}
}

// BenchmarkClassifyRounds measures the lines of the 2026-07-28 revision.
func BenchmarkClassifyRounds(b *testing.B) {
	for _, fr := range []struct{ name, line string }{
		{"call2026", call2026}, {"inputRequired", inputRequired}, {"retry", retry2026},
	} {
		b.Run(fr.name, func(b *testing.B) {
			var c Classifier
			var f Frame
			line := []byte(fr.line)
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				c.Classify(line, &f)
			}
		})
	}
}
