package interop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where npm ci puts server-everything's stdio entry point. Its package.json
// names dist/index.js as the bin; the first argument picks the transport.
const everythingEntry = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// filesystemEntry is the pinned server-filesystem's entry point.
const filesystemEntry = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

const (
	// sessionTimeout bounds a whole session.
	sessionTimeout = 2 * time.Minute
	// waitTimeout bounds each wait for a notification the server owes us.
	waitTimeout = 10 * time.Second
	// interopRoot is the one root the client offers; get-roots-list echoes it.
	interopRoot = "file:///aegis-interop-root"
	// progressToken is sent with the long-running call.
	progressToken = "aegis-interop-progress"
)

// everythingArgv returns the argv that runs server-everything over stdio,
// failing the test (never skipping it) when the Node side is not installed.
func everythingArgv(t *testing.T) []string {
	t.Helper()
	entry, err := filepath.Abs(everythingEntry)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("server-everything is not installed (%v).\nRun `npm ci` in interop/ first: the interop tests need the pinned Node servers.", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): the interop tests need Node.js 20 or later", err)
	}
	return []string{node, entry, "stdio"}
}

// A toolCall is one tools/call of the script and what its result must hold.
type toolCall struct {
	tool    string
	args    map[string]any
	isError bool     // want result.isError
	want    []string // substrings of the normalized result
	// progress, when set, asks for progress notifications and waits for
	// this many of them after the result.
	progress int
}

// A session is what one run of the script saw.
type session struct {
	// transcript is normalized: two runs against the same server, direct or
	// through a transparent relay, produce the same lines.
	transcript []string
	// sent are the tools/call requests that went on the wire, in order of
	// sending; outcomes are how each call of the script ended, as the audit
	// log names it (ok, tool_error, rpc_error), keyed "tool status".
	sent     []string
	outcomes []string
	stderr   string
}

// events collects what the server sends on its own: notifications and
// server→client requests. The SDK hands them to handlers on its own
// goroutines, unordered with respect to results, so the script waits for
// the ones it is owed instead of assuming they came before a result.
type events struct {
	mu       sync.Mutex
	methods  map[string]int      // method → how many were received
	progress map[string][]string // token → "progress/total" in arrival order
	simLogs  int                 // notifications/message from toggle-simulated-logging
	changed  chan struct{}       // a token per change, never blocks senders
}

func newEvents() *events {
	return &events{methods: map[string]int{}, progress: map[string][]string{}, changed: make(chan struct{}, 1)}
}

func (e *events) update(f func()) {
	e.mu.Lock()
	f()
	e.mu.Unlock()
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond, called under the lock, holds.
func (e *events) waitFor(what string, cond func() bool) error {
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		e.mu.Lock()
		ok := cond()
		e.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-e.changed:
		case <-timer.C:
			return fmt.Errorf("no %s within %v", what, waitTimeout)
		}
	}
}

// runEverything runs the script against server-everything started by argv
// (directly, or behind a relay) and returns what it saw. Any deviation from
// the script's expectations fails t.
func runEverything(t *testing.T, argv []string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()

	ev := newEvents()
	s := &session{}
	var sentMu sync.Mutex
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-interop", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			ev.update(func() {
				tok := fmt.Sprint(p.ProgressToken)
				ev.progress[tok] = append(ev.progress[tok], fmt.Sprintf("%g/%g", p.Progress, p.Total))
			})
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			// The simulated messages have no logger and say "…-level
			// message" at a random level; the server's own have a logger.
			if d, ok := req.Params.Data.(string); ok && req.Params.Logger == "" && strings.Contains(d, "message") {
				ev.update(func() { ev.simLogs++ })
			}
		},
	})
	client.AddRoots(&mcp.Root{URI: interopRoot, Name: "aegis interop"})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ev.update(func() { ev.methods[method]++ })
			return next(ctx, method, req)
		}
	})
	client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParams); ok && method == "tools/call" {
				sentMu.Lock()
				s.sent = append(s.sent, p.Name)
				sentMu.Unlock()
			}
			return next(ctx, method, req)
		}
	})

	var stderr syncBuffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to %q: %v\nstderr:\n%s", argv, err, stderr.String())
	}
	defer func() { s.stderr = stderr.String() }()
	fail := func(format string, args ...any) {
		t.Helper()
		cs.Close()
		t.Fatalf("%s\nstderr of %q:\n%s", fmt.Sprintf(format, args...), argv, stderr.String())
	}
	add := func(format string, args ...any) { s.transcript = append(s.transcript, fmt.Sprintf(format, args...)) }

	// initialize: everything but the long instructions, which are hashed.
	init := cs.InitializeResult()
	caps, _ := json.Marshal(init.Capabilities)
	info, _ := json.Marshal(init.ServerInfo)
	add("initialize protocol %s server %s", init.ProtocolVersion, info)
	add("initialize capabilities %s", caps)
	add("initialize instructions sha256:%s", hash(init.Instructions))
	if init.ServerInfo == nil || init.ServerInfo.Name != "mcp-servers/everything" {
		fail("initialize: server %s; want mcp-servers/everything", info)
	}

	if err := cs.Ping(ctx, nil); err != nil {
		fail("ping: %v", err)
	}
	add("ping ok")

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		fail("tools/list: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		b, _ := json.Marshal(tl)
		add("tools/list %s", b)
		names = append(names, tl.Name)
	}
	script := everythingScript()
	called := map[string]bool{}
	for _, c := range script {
		called[c.tool] = true
	}
	for _, want := range knownEverythingTools {
		if !slices.Contains(names, want) {
			fail("tools/list lacks %s; got %v", want, names)
		}
	}
	for _, n := range names {
		if !called[n] {
			fail("tools/list offers %s, which the script does not call: add it to everythingScript", n)
		}
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		fail("prompts/list: %v", err)
	}
	add("prompts/list %d prompts", len(prompts.Prompts))

	for _, c := range script {
		res, status, err := callTool(ctx, cs, c)
		if err != nil {
			fail("%v", err)
		}
		add("%s", res)
		s.outcomes = append(s.outcomes, c.tool+" "+status)
		switch c.tool {
		case "trigger-long-running-operation":
			if err := ev.waitFor("progress", func() bool { return len(ev.progress[progressToken]) >= c.progress }); err != nil {
				fail("%s: %v", c.tool, err)
			}
		case "toggle-simulated-logging":
			if strings.Contains(res, "Started") {
				if err := ev.waitFor("simulated log message", func() bool { return ev.simLogs > 0 }); err != nil {
					fail("%s: %v", c.tool, err)
				}
			}
		}
	}

	// Calls in flight together, answered out of order: the long call is
	// still running when the quick ones sent after it are answered.
	burst := burstScript()
	results, statuses, errs := callAll(ctx, cs, burst)
	for i, c := range burst {
		if errs[i] != nil {
			fail("burst: %v", errs[i])
		}
		add("burst %s", results[i])
		s.outcomes = append(s.outcomes, c.tool+" "+statuses[i])
	}

	// What the server sent on its own. The counts of progress are exact;
	// of the rest only which kinds arrived is stable from run to run (the
	// server may ask for roots once or twice, racing its own timer).
	wantMethods := []string{"notifications/message", "notifications/progress", "notifications/resources/list_changed", "notifications/tools/list_changed", "roots/list"}
	if err := ev.waitFor("notifications "+strings.Join(wantMethods, ", "), func() bool {
		for _, m := range wantMethods {
			if ev.methods[m] == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		fail("%v (got %v)", err, ev.methods)
	}
	ev.mu.Lock()
	add("server sent %s", strings.Join(slices.Sorted(maps.Keys(ev.methods)), ", "))
	add("progress %s: %s", progressToken, strings.Join(ev.progress[progressToken], " "))
	ev.mu.Unlock()

	if err := cs.Close(); err != nil {
		t.Errorf("closing the session (stdin EOF, then wait for %q to exit) = %v; want a clean exit\nstderr:\n%s", argv, err, stderr.String())
	}
	if len(s.sent) != len(s.outcomes) {
		t.Errorf("the client sent %d tools/call requests for %d calls of the script", len(s.sent), len(s.outcomes))
	}
	return s
}

// callTool makes one call and returns its normalized transcript line and
// how it ended. A JSON-RPC error answer is a result here; only transport
// failures and unmet expectations are errors.
// callAll makes calls at once, each on a goroutine of its own, and
// returns what callTool returned for each, in the order of calls.
func callAll(ctx context.Context, cs *mcp.ClientSession, calls []toolCall) (lines, statuses []string, errs []error) {
	lines, statuses, errs = make([]string, len(calls)), make([]string, len(calls)), make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { lines[i], statuses[i], errs[i] = callTool(ctx, cs, c) })
	}
	wg.Wait()
	return lines, statuses, errs
}

func callTool(ctx context.Context, cs *mcp.ClientSession, c toolCall) (line, status string, err error) {
	params := &mcp.CallToolParams{Name: c.tool, Arguments: c.args}
	if c.progress > 0 {
		params.SetProgressToken(progressToken)
	}
	args, _ := json.Marshal(c.args)
	res, err := cs.CallTool(ctx, params)
	var out string
	switch werr := (*jsonrpc.Error)(nil); {
	case errors.As(err, &werr):
		status, out = "rpc_error", fmt.Sprintf("rpc error %d: %s", werr.Code, werr.Message)
	case err != nil:
		return "", "", fmt.Errorf("tools/call %s %s: %w", c.tool, args, err)
	default:
		b, err := json.Marshal(res)
		if err != nil {
			return "", "", fmt.Errorf("tools/call %s: marshal result: %w", c.tool, err)
		}
		out, status = normalize(c.tool, b), "ok"
		if res.IsError {
			status = "tool_error"
		}
	}
	line = fmt.Sprintf("tools/call %s %s → %s", c.tool, args, out)
	if c.isError != (status != "ok") {
		return "", "", fmt.Errorf("%s: want isError=%v", line, c.isError)
	}
	for _, w := range c.want {
		if !strings.Contains(out, w) {
			return "", "", fmt.Errorf("%s: want it to contain %q", line, w)
		}
	}
	return line, status, nil
}

// normalize removes what legitimately differs between two runs of the same
// server:
//   - get-env's text is the process environment: it is kept as sorted names
//     with a hash of each value, so a relay that changed the child's
//     environment is still caught, without printing secrets into test logs;
//   - dynamic resources say when they were made ("created at 9:13:23 AM"),
//     in text and in base64 blobs of text: the clock time becomes <time>.
func normalize(tool string, result []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return string(result)
	}
	if tool == "get-env" {
		if env, ok := envOf(v); ok {
			return env
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(scrub(v, "")) != nil {
		return string(result)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

var clockTime = regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}\s?[AP]M\b`)

// scrub replaces clock times in every string of v, and in every "blob" that
// is base64 of UTF-8 text.
func scrub(v any, key string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = scrub(e, k)
		}
	case []any:
		for i, e := range v {
			v[i] = scrub(e, "")
		}
	case string:
		if key == "blob" {
			if raw, err := base64.StdEncoding.DecodeString(v); err == nil && utf8.Valid(raw) && clockTime.Match(raw) {
				return "base64 of " + clockTime.ReplaceAllString(string(raw), "<time>")
			}
			return v
		}
		return clockTime.ReplaceAllString(v, "<time>")
	}
	return v
}

// envOf renders get-env's result as sorted names and value hashes.
func envOf(v any) (string, bool) {
	content, _ := v.(map[string]any)["content"].([]any)
	if len(content) != 1 {
		return "", false
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	var env map[string]string
	if json.Unmarshal([]byte(text), &env) != nil {
		return "", false
	}
	var kv []string
	for k, v := range env {
		kv = append(kv, fmt.Sprintf("%q:%s", k, hash(v)[:12]))
	}
	sort.Strings(kv)
	return "env {" + strings.Join(kv, ",") + "}", true
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// knownEverythingTools must all be offered by server-everything 2026.8.31
// to a client that advertises roots but neither sampling nor elicitation
// (those tools are registered only for clients that can serve them).
var knownEverythingTools = []string{
	"echo", "get-annotated-message", "get-env", "get-resource-links",
	"get-resource-reference", "get-roots-list", "get-structured-content",
	"get-sum", "get-tiny-image", "gzip-file-as-resource",
	"simulate-research-query", "toggle-simulated-logging",
	"toggle-subscriber-updates", "trigger-long-running-operation",
}

// gzipData is what gzip-file-as-resource compresses: a data: URI, so the
// server fetches nothing from the network.
const gzipData = "data:text/plain;base64,aGVsbG8gdGhyb3VnaCBhZWdpcwo="

// everythingScript calls every tool the server offers, in order, one at a
// time, including the ways it fails.
func everythingScript() []toolCall {
	return []toolCall{
		{tool: "echo", args: map[string]any{"message": "hello through aegis"}, want: []string{`"text":"Echo: hello through aegis"`}},
		{tool: "echo", args: map[string]any{"message": "ünïcödé \"quoted\" \\ \u2028 and a\nnewline"}, want: []string{`Echo: ünïcödé`}},
		{tool: "get-sum", args: map[string]any{"a": 2, "b": 3}, want: []string{"The sum of 2 and 3 is 5."}},
		{tool: "get-sum", args: map[string]any{"a": "two", "b": 3}, isError: true, want: []string{"Input validation error"}},
		{tool: "get-annotated-message", args: map[string]any{"messageType": "error", "includeImage": true}, want: []string{"Error: Operation failed", `"priority":1`, `"type":"image"`}},
		{tool: "get-annotated-message", args: map[string]any{"messageType": "debug"}, want: []string{"Debug: Cache hit ratio"}},
		{tool: "get-env", args: map[string]any{}, want: []string{`"PATH":`}},
		{tool: "get-resource-links", args: map[string]any{"count": 4}, want: []string{`"type":"resource_link"`, "demo://resource/"}},
		{tool: "get-resource-reference", args: map[string]any{"resourceType": "Text", "resourceId": 2}, want: []string{`"type":"resource"`, `"text":`}},
		{tool: "get-resource-reference", args: map[string]any{"resourceType": "Blob", "resourceId": 1}, want: []string{`"type":"resource"`, `"blob":`}},
		{tool: "get-resource-reference", args: map[string]any{"resourceType": "Video"}, isError: true, want: []string{"resourceType"}},
		{tool: "get-structured-content", args: map[string]any{"location": "Chicago"}, want: []string{`"structuredContent":{`, `"conditions":"Light rain / drizzle"`}},
		{tool: "get-tiny-image", args: map[string]any{}, want: []string{`"type":"image"`, `"mimeType":"image/png"`}},
		{tool: "gzip-file-as-resource", args: map[string]any{"name": "hello.txt.gz", "data": gzipData, "outputType": "resourceLink"}, want: []string{`"type":"resource_link"`, "demo://resource/session/hello.txt.gz"}},
		{tool: "gzip-file-as-resource", args: map[string]any{"name": "hello2.txt.gz", "data": gzipData, "outputType": "resource"}, want: []string{`"mimeType":"application/gzip"`, `"blob":`}},
		{tool: "get-roots-list", args: map[string]any{}, want: []string{interopRoot}},
		{tool: "trigger-long-running-operation", args: map[string]any{"duration": 0.3, "steps": 3}, progress: 3, want: []string{"Long running operation completed"}},
		{tool: "toggle-simulated-logging", args: map[string]any{}, want: []string{"Started simulated"}},
		{tool: "toggle-simulated-logging", args: map[string]any{}, want: []string{"Stopped simulated"}},
		{tool: "toggle-subscriber-updates", args: map[string]any{}, want: []string{"Started simulated resource"}},
		{tool: "toggle-subscriber-updates", args: map[string]any{}, want: []string{"Stopped simulated resource"}},
		// Needs task augmentation, which the Go SDK client does not send:
		// the server's way of refusing is a tool error.
		{tool: "simulate-research-query", args: map[string]any{"topic": "aegis"}, isError: true, want: []string{"requires task augmentation"}},
		// Unknown tools are tool errors too in this server's SDK (TS 1.32),
		// not JSON-RPC errors.
		{tool: "no-such-tool", args: map[string]any{}, isError: true, want: []string{"not found"}},
	}
}

// burstScript is sent all at once: one long call and quick ones behind it.
func burstScript() []toolCall {
	calls := []toolCall{
		{tool: "trigger-long-running-operation", args: map[string]any{"duration": 0.5, "steps": 1}, want: []string{"Duration: 0.5 seconds"}},
	}
	for i := range 6 {
		calls = append(calls,
			toolCall{tool: "echo", args: map[string]any{"message": fmt.Sprintf("burst %d", i)}, want: []string{fmt.Sprintf("Echo: burst %d", i)}},
			toolCall{tool: "get-sum", args: map[string]any{"a": i, "b": 0.5}, want: []string{fmt.Sprintf("is %g.", float64(i)+0.5)}},
		)
	}
	return calls
}

// syncBuffer is a bytes.Buffer that the process's stderr copier and the
// test may use at the same time.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// diffLines describes how got differs from want, line by line.
func diffLines(want, got []string) string {
	var b strings.Builder
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  direct: %s\n  wrapped: %s\n", i, clip(w), clip(g))
		}
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
