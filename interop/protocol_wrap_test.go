package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scriptChild is a stdio server that plays a script (argv[1], a JSON
// list of steps): for a client step it reads one line and exits 3 unless
// it is the step's line, byte for byte; for a server step it writes the
// step's line. A client step that aegis refuses (the next step is "a")
// never reaches it. Its script played, it reads to EOF.
const scriptChild = `import json, sys
steps = json.load(open(sys.argv[1]))
for i, st in enumerate(steps):
    refused = i + 1 < len(steps) and steps[i + 1]["from"] == "a"
    if st["from"] == "c" and not refused:
        got = sys.stdin.buffer.readline()
        if got != st["line"].encode() + b"\n":
            sys.stderr.write("script child: read %r; want %r\n" % (got, st["line"]))
            sys.exit(3)
    elif st["from"] == "s":
        sys.stdout.buffer.write(st["line"].encode() + b"\n")
        sys.stdout.buffer.flush()
while sys.stdin.buffer.readline():
    pass
`

// wrapStep is one line of a scripted session: from the client ("c"), the
// child ("s"), or aegis refusing the client's line before it ("a": Line
// is what the refusal must contain).
type wrapStep struct {
	From string `json:"from"`
	Line string `json:"line"`
}

func wc(line string) wrapStep { return wrapStep{"c", line} }
func ws(line string) wrapStep { return wrapStep{"s", line} }
func wa(has string) wrapStep  { return wrapStep{"a", has} }

// Lines of the scripted sessions.
const (
	wrapMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	// asks: input_required with a state; asksNoState: without one.
	asks        = `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{}},"roots":{"method":"roots/list"}},"requestState":"s1"}`
	asksNoState = `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{}}}}`
	answers     = `,"inputResponses":{"login":{"action":"accept","content":{"name":"x"}},"roots":{"roots":[]}}`
	complete    = `{"resultType":"complete","content":[]}`
)

func wcall(id, tool, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"a":1},` + wrapMeta + extra + `}}`
}

func wresult(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

func wget(id, method, task string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{"taskId":"` + task + `"}}`
}

// initialize25 settles 2025-11-25 for the sessions of that revision.
var initialize25 = []wrapStep{
	wc(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{},"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`),
	ws(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`),
}

// TestProtocolThroughWrap plays scripted sessions of both revisions
// through the real aegis wrap around a scripted stdio child, each line
// read by the other side before the next is written, and holds the log
// to what happened: the readings the relay's own tests hold a Relay to
// (other resultTypes; a resultType, or a retry's state or answers, that
// readers disagree on; each round judged by the policy as the call it is,
// by a rule on mcp.round; retries linked by match; forged and reused
// state; tasks/cancel, failed and cancelled ends; a taskId claimed twice;
// a task open at the session's end; the bound on live tasks; sampling and
// roots requests on 2025-11-25), now from the binary a user runs. Every
// line reaches the other side as it was written, and the log verifies.
func TestProtocolThroughWrap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub := keygen(t, aegis, key)
	child := filepath.Join(dir, "child.py")
	if err := os.WriteFile(child, []byte(scriptChild), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "rounds.yaml")
	if err := os.WriteFile(policy, []byte("version: 1\ndefault: allow\nrules:\n  - tool: login\n    action: deny\n    when: mcp.round > 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		flags []string
		steps []wrapStep
		want  []string
	}{
		{"another resultType is recorded by its name, never ok", nil, []wrapStep{
			wc(wcall("1", "x", "")),
			ws(wresult("1", `{"resultType":"stream"}`)),
			wc(wcall("2", "x", "")),
			ws(wresult("2", `{"resultType":"complete","isError":true,"content":[]}`)),
		}, []string{
			"intent 1 rev=2026-07-28",
			"outcome 1 other rt=stream",
			"intent 2 rev=2026-07-28",
			"outcome 2 tool_error rt=complete",
		}},
		{"a resultType readers disagree on is an anomaly", nil, []wrapStep{
			wc(wcall("1", "x", "")),
			ws(wresult("1", `{"resultType":"task","resultType":"complete"}`)),
		}, []string{
			"intent 1 rev=2026-07-28",
			`anomaly "result.resultType: duplicate key"`,
			"outcome 1 unanswered noresp",
		}},
		{"a retry without state is linked by the same tool and arguments", nil, []wrapStep{
			wc(wcall("1", "login", "")),
			ws(wresult("1", asksNoState)),
			wc(wcall("2", "login", answers)),
			ws(wresult("2", complete)),
			wc(wcall("3", "login", answers)),
			ws(wresult("3", complete)),
		}, []string{
			"intent 1 rev=2026-07-28",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create",
			"intent 2 rev=2026-07-28 round=#1/match/2 responses=login:accept,roots:",
			"outcome 2 ok rt=complete",
			"intent 3 rev=2026-07-28 responses=login:accept,roots:",
			"outcome 3 ok rt=complete",
		}},
		{"each round is judged as the call it is", []string{"--policy", policy}, []wrapStep{
			wc(wcall("1", "login", "")),
			ws(wresult("1", asks)),
			wc(wcall("2", "login", `,"requestState":"s1"`+answers)),
			wa(`"id":2,"error":{"code":-32042`),
			wc(wcall("3", "other", "")),
			ws(wresult("3", complete)),
		}, []string{
			"intent 1 rev=2026-07-28 allowed",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
			"intent 2 rev=2026-07-28 round=#1/state/2 state responses=login:accept,roots: denied",
			"outcome 2 host_denied noresp",
			"intent 3 rev=2026-07-28 allowed",
			"outcome 3 ok rt=complete",
		}},
		{"a retry's members readers disagree on link nothing and say why", nil, []wrapStep{
			wc(wcall("1", "login", "")),
			ws(wresult("1", asks)),
			wc(wcall("2", "login", `,"requestState":"s1","requestState":"zz"`+answers)),
			ws(wresult("2", complete)),
			wc(wcall("3", "login", `,"requeststate":"s1"`+answers)),
			ws(wresult("3", complete)),
			wc(wcall("4", "login", `,"requestState":"s\u0031","inputResponses":{"login":{"action":"accept","action":"decline"}}`)),
			ws(wresult("4", complete)),
		}, []string{
			"intent 1 rev=2026-07-28",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
			"intent 2 malformed=params.requestState: duplicate key rev=2026-07-28 responses=login:accept,roots:",
			"outcome 2 ok rt=complete",
			"intent 3 malformed=params.requestState: case-variant key rev=2026-07-28 responses=login:accept,roots:",
			"outcome 3 ok rt=complete",
			"intent 4 malformed=params.inputResponses action: duplicate key rev=2026-07-28",
			"outcome 4 ok rt=complete",
		}},
		{"forged and reused state say so", nil, []wrapStep{
			wc(wcall("1", "login", `,"requestState":"forged"`)),
			ws(wresult("1", asks)),
			wc(wcall("2", "login", `,"requestState":"s1"`+answers)),
			ws(wresult("2", complete)),
			wc(wcall("3", "login", `,"requestState":"s1"`)),
			ws(wresult("3", complete)),
		}, []string{
			"intent 1 rev=2026-07-28 round=null/unknown_state/0 state",
			"outcome 1 input_required rt=input_required inputs=login:elicitation/create,roots:roots/list state",
			"intent 2 rev=2026-07-28 round=#1/state/2 state responses=login:accept,roots:",
			"outcome 2 ok rt=complete",
			"intent 3 rev=2026-07-28 round=null/reused_state/0 state",
			"outcome 3 ok rt=complete",
		}},
		{"2026-07-28 tasks: cancel recorded, the first end counts", nil, []wrapStep{
			wc(wcall("1", "slow", "")),
			ws(wresult("1", `{"resultType":"task","taskId":"t1","status":"working"}`)),
			wc(wcall("2", "slow", "")),
			ws(wresult("2", `{"resultType":"task","taskId":"t2","status":"working"}`)),
			wc(wget("3", "tasks/get", "t1")),
			ws(wresult("3", `{"resultType":"complete","taskId":"t1","status":"working"}`)),
			wc(wget("4", "tasks/cancel", "t2")),
			ws(wresult("4", `{"resultType":"complete","taskId":"t2","status":"cancelled"}`)),
			ws(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t1","status":"failed","error":{"code":-1,"message":"x"}}}`),
			wc(wget("5", "tasks/get", "t1")),
			ws(wresult("5", `{"resultType":"complete","taskId":"t1","status":"completed","result":{"content":[]}}`)),
		}, []string{
			"intent 1 rev=2026-07-28",
			"outcome 1 task rt=task task=t1",
			"intent 2 rev=2026-07-28",
			"outcome 2 task rt=task task=t2",
			"task t2 intent=#2 cancel via=tasks/cancel",
			"task t2 intent=#2 end via=tasks/cancel cancelled",
			"task t1 intent=#0 end via=notifications/tasks failed",
		}},
		{"2025-11-25 task: tasks/result ends it, isError is tool_error", nil, append(initialize25[:2:2],
			wc(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"task":{"ttl":60000}}}`),
			ws(wresult("1", `{"task":{"taskId":"t1","status":"working"}}`)),
			wc(wget("2", "tasks/get", "t1")),
			ws(wresult("2", `{"taskId":"t1","status":"completed"}`)),
			wc(wget("3", "tasks/result", "t1")),
			ws(wresult("3", `{"content":[],"isError":true}`)),
		), []string{
			"protocol 2025-11-25",
			"intent 1",
			"outcome 1 task task=t1",
			"task t1 intent=#1 end via=tasks/result tool_error",
		}},
		{"a taskId claimed twice is an anomaly; an open task ends unfinished", nil, []wrapStep{
			wc(wcall("1", "slow", "")),
			ws(wresult("1", `{"resultType":"task","taskId":"t1","status":"working"}`)),
			wc(wcall("2", "slow", "")),
			ws(wresult("2", `{"resultType":"task","taskId":"t1","status":"working"}`)),
		}, []string{
			"intent 1 rev=2026-07-28",
			"outcome 1 task rt=task task=t1",
			"intent 2 rev=2026-07-28",
			`anomaly "response: its task id names a live task (a task claimed twice)"`,
			"outcome 2 unanswered noresp",
			"task t1 intent=#0 end via=session_end unfinished nodigest",
		}},
		{"live tasks are bounded: the oldest ends unfinished", []string{"--max-pending", "1"}, []wrapStep{
			wc(wcall("1", "slow", "")),
			ws(wresult("1", `{"resultType":"task","taskId":"a","status":"working"}`)),
			wc(wcall("2", "slow", "")),
			ws(wresult("2", `{"resultType":"task","taskId":"b","status":"working"}`)),
			wc(wget("3", "tasks/get", "a")),
			ws(wresult("3", `{"resultType":"complete","taskId":"a","status":"completed","result":{}}`)),
			ws(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"b","status":"completed","result":{}}}`),
		}, []string{
			"intent 1 rev=2026-07-28",
			"outcome 1 task rt=task task=a",
			"intent 2 rev=2026-07-28",
			"outcome 2 task rt=task task=b",
			"task a intent=#0 end via=evicted unfinished nodigest",
			"task b intent=#2 end via=notifications/tasks ok",
		}},
		{"2025-11-25 server requests against the call in flight", nil, append(initialize25[:2:2],
			wc(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`),
			ws(`{"jsonrpc":"2.0","id":"m1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":9}}`),
			wc(wresult(`"m1"`, `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`)),
			ws(`{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`),
			wc(`{"jsonrpc":"2.0","id":"r1","error":{"code":-1,"message":"no"}}`),
			ws(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}`),
			wc(wresult(`"e1"`, `{"action":"cancel"}`)),
			ws(wresult("1", `{"content":[]}`)),
		), []string{
			"protocol 2025-11-25",
			"intent 1",
			"server_request m1 sampling/createMessage calls=#1",
			"client_answer m1 request=#2 ok action=",
			"server_request r1 roots/list calls=#1",
			"client_answer r1 request=#4 rpc_error action=",
			"server_request e1 elicitation/create calls=#1",
			"client_answer e1 request=#6 ok action=cancel",
			"outcome 1 ok",
		}},
		{"a 2026-07-28 server that sends a request: an anomaly, relayed", nil, []wrapStep{
			wc(wcall("1", "ask", "")),
			ws(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"name?"}}`),
			wc(wresult(`"e1"`, `{"action":"decline"}`)),
			ws(wresult("1", complete)),
		}, []string{
			"intent 1 rev=2026-07-28",
			"server_request e1 elicitation/create calls=#0",
			`anomaly "request from the server: the session's revision has servers send no requests"`,
			"client_answer e1 request=#1 ok action=decline",
			"outcome 1 ok rt=complete",
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sub := filepath.Join(dir, fmt.Sprint(i))
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			script, _ := json.Marshal(tt.steps)
			scriptPath := filepath.Join(sub, "script.json")
			if err := os.WriteFile(scriptPath, script, 0o600); err != nil {
				t.Fatal(err)
			}
			audit := filepath.Join(sub, "audit.jsonl")
			args := append([]string{"wrap", "--audit", audit, "--signing-key", key}, tt.flags...)
			args = append(args, "--", "/usr/bin/python3", child, scriptPath)
			playScript(t, exec.Command(aegis, args...), tt.steps)
			if v, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(v), "VALID") {
				t.Errorf("aegis verify --key: %v\n%s", err, v)
			}
			got := summarize(t, audit)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("records:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

// playScript runs wrap and plays the client's side of steps: a client
// line is written, a child's line read from wrap and held to be the
// child's bytes; then the client closes stdin and wrap must exit 0.
func playScript(t *testing.T, cmd *exec.Cmd, steps []wrapStep) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Reads happen on their own goroutine so that a line wrap never
	// relays fails the test at the deadline rather than hanging it;
	// stderr is read only once wrap has exited.
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(stdout)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	deadline := time.After(60 * time.Second)
	for _, st := range steps {
		if st.From == "c" {
			if _, err := io.WriteString(stdin, st.Line+"\n"); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("writing %s: %v (stderr: %s)", st.Line, err, stderr.String())
			}
			continue
		}
		select {
		case l, ok := <-lines:
			if st.From == "a" && !strings.Contains(l, st.Line) {
				t.Errorf("wrap answered %q; want aegis's refusal, %s", l, st.Line)
			} else if st.From == "s" && (!ok || l != st.Line+"\n") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("wrap relayed %q (open %v); want the child's %s\n(stderr: %s)", l, ok, st.Line, stderr.String())
			}
		case <-deadline:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no line from wrap for %s (stderr: %s)", st.Line, stderr.String())
		}
	}
	stdin.Close()
	exited := make(chan error, 1)
	go func() {
		for range lines {
		}
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("wrap: %v (stderr: %s)", err, stderr.String())
		}
	case <-deadline:
		cmd.Process.Kill()
		<-exited
		t.Fatalf("wrap did not exit after the client's EOF (stderr: %s)", stderr.String())
	}
}

// summarize reads the log's records of one session as the relay's
// protocol tests compare them: the kind and the fields that say what
// happened, seqs written relative to the first record after
// session_start (#0); session_start and session_end are left out.
func summarize(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	base := int64(-1)
	for line := range bytes.Lines(data) {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %.200q: %v", line, err)
		}
		kind, _ := r["kind"].(string)
		seq := int64(r["seq"].(float64))
		if kind == "session_start" {
			base = seq + 1
			continue
		}
		if kind == "session_end" {
			continue
		}
		rel := func(v any) string {
			if f, ok := v.(float64); ok {
				return fmt.Sprintf("#%d", int64(f)-base)
			}
			return "null"
		}
		var b strings.Builder
		b.WriteString(kind)
		switch kind {
		case "intent":
			fmt.Fprintf(&b, " %s", text(r["call"]))
			if m, ok := r["malformed"].(string); ok {
				fmt.Fprintf(&b, " malformed=%s", m)
			}
			if v, ok := r["revision"]; ok {
				fmt.Fprintf(&b, " rev=%s", text(v))
			}
			if rd, ok := r["round"].(map[string]any); ok {
				fmt.Fprintf(&b, " round=%s/%s/%v", rel(rd["of"]), rd["by"], rd["n"])
			}
			if _, ok := r["request_state"]; ok {
				b.WriteString(" state")
			}
			if l, ok := r["input_responses"].([]any); ok {
				b.WriteString(" responses=" + entries(l, "action"))
			}
			if p, _ := r["policy"].(map[string]any); p != nil && p["verdict"] != "pass-through" {
				fmt.Fprintf(&b, " %s", p["verdict"])
			}
		case "outcome":
			ex, _ := r["execution"].(map[string]any)
			fmt.Fprintf(&b, " %s %s", text(r["call"]), ex["status"])
			if _, ok := r["response_digest"]; !ok || r["response_digest"] == nil {
				b.WriteString(" noresp")
			}
			if v, ok := r["result_type"]; ok {
				fmt.Fprintf(&b, " rt=%s", text(v))
			}
			if v, ok := r["task_id"]; ok {
				fmt.Fprintf(&b, " task=%s", text(v))
			}
			if l, ok := r["input_requests"].([]any); ok {
				b.WriteString(" inputs=" + entries(l, "method"))
			}
			if _, ok := r["request_state"]; ok {
				b.WriteString(" state")
			}
		case "task":
			fmt.Fprintf(&b, " %s intent=%s %s via=%s", text(r["task_id"]), rel(r["intent"]), r["event"], r["via"])
			if r["event"] == "end" {
				ex, _ := r["execution"].(map[string]any)
				fmt.Fprintf(&b, " %s", ex["status"])
			}
			if r["digest"] == nil {
				b.WriteString(" nodigest")
			}
		case "anomaly":
			fmt.Fprintf(&b, " %q", r["reason"])
			if f, _ := r["forwarded"].(bool); !f {
				b.WriteString(" dropped")
			}
		case "protocol":
			fmt.Fprintf(&b, " %s", text(r["revision"]))
		case "server_request":
			var calls []string
			for _, c := range r["calls"].([]any) {
				calls = append(calls, rel(c))
			}
			fmt.Fprintf(&b, " %s %s calls=%s", text(r["call"]), text(r["method"]), strings.Join(calls, ","))
		case "client_answer":
			action := ""
			if a, ok := r["action"].(string); ok {
				action = a
			}
			ex, _ := r["execution"].(map[string]any)
			fmt.Fprintf(&b, " %s request=%s %s action=%s", text(r["call"]), rel(r["request"]), ex["status"], action)
		default:
			continue
		}
		out = append(out, b.String())
	}
	return out
}

// text is a call id, or a bounded value written whole, as text.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	case map[string]any:
		return fmt.Sprint(x["prefix"]) + "…"
	}
	return fmt.Sprint(v)
}

// entries writes a list of {key, field} as key:field,…, a null field as
// nothing.
func entries(l []any, field string) string {
	var parts []string
	for _, e := range l {
		m, _ := e.(map[string]any)
		v := ""
		if s, ok := m[field].(string); ok {
			v = s
		}
		parts = append(parts, text(m["key"])+":"+v)
	}
	return strings.Join(parts, ",")
}
