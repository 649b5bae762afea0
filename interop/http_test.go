package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpFront is an aegis wrap --listen serving server-everything on
// loopback, one child per session, recording to audit.
type httpFront struct {
	cmd          *exec.Cmd
	url, token   string
	aegis, audit string
	key          string
	stderr       syncBuffer
	exited       chan struct{}
}

// startHTTPFront builds aegis and starts wrap --listen 127.0.0.1:0 in
// front of argv, and waits for it to say where it serves.
func startHTTPFront(t *testing.T, argv []string) *httpFront {
	t.Helper()
	dir := t.TempDir()
	h := &httpFront{aegis: buildAegis(t, dir), audit: filepath.Join(dir, "audit.jsonl"), key: filepath.Join(dir, "key"), exited: make(chan struct{})}
	keygen(t, h.aegis, h.key)
	args := append([]string{"wrap", "--audit", h.audit, "--signing-key", h.key, "--listen", "127.0.0.1:0", "--"}, argv...)
	h.cmd = exec.Command(h.aegis, args...)
	pr, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(&h.stderr, sc.Text())
			if u, ok := strings.CutPrefix(sc.Text(), "aegis: serving MCP at "); ok {
				found <- strings.Fields(u)[0]
			}
		}
		close(found)
	}()
	go func() { h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() { h.stop(t) })
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("aegis wrap --listen exited before serving:\n%s", h.stderr.String())
		}
		h.url = u
	case <-time.After(30 * time.Second):
		t.Fatalf("aegis wrap --listen did not say where it serves in 30s:\n%s", h.stderr.String())
	}
	tok, err := os.ReadFile(filepath.Join(dir, "audit.token"))
	if err != nil {
		t.Fatal(err)
	}
	h.token = strings.TrimSpace(string(tok))
	return h
}

// stop sends SIGTERM and waits: every session ends, and the log closes.
func (h *httpFront) stop(t *testing.T) {
	select {
	case <-h.exited:
		return
	default:
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
		if code := h.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("aegis wrap --listen exit %d after SIGTERM; want 0\n%s", code, h.stderr.String())
		}
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		<-h.exited
		t.Errorf("aegis wrap --listen still running 30s after SIGTERM (killed):\n%s", h.stderr.String())
	}
}

// verify runs aegis verify --key on the log: it must be VALID, hold
// sessions served over HTTP (and the listener's), stateless ones
// included, and the number of intents given.
func (h *httpFront) verify(t *testing.T, sessions, intents int) {
	t.Helper()
	out, err := exec.Command(h.aegis, "verify", "--key", "@"+h.key+".pub", h.audit).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "VALID") {
		t.Fatalf("aegis verify = %v\n%s", err, out)
	}
	data, err := os.ReadFile(h.audit)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	http := 0
	for _, line := range bytes.Split(bytes.TrimRight(data, "\x00\n"), []byte("\n")) {
		var r struct {
			Kind      string `json:"kind"`
			Transport string `json:"transport"`
			Principal string `json:"principal"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		kinds[r.Kind]++
		if r.Kind == "session_start" && r.Transport == "http" && strings.HasPrefix(r.Principal, "token:") {
			http++
		}
	}
	if kinds["session_start"] != sessions+1 || http != sessions+1 || kinds["session_end"] != sessions+1 || kinds["intent"] != intents || kinds["outcome"] != intents {
		t.Errorf("audit log: %v, %d session_starts over http with a token; want %d sessions (and the listener's) over http, %d intents and outcomes", kinds, http, sessions, intents)
	}
}

// bearer adds the token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// goScript runs the script's calls with the Go SDK client over t and
// returns the transcript: every answer, normalized as the stdio tests do,
// and the progress the long call reported.
func goScript(t *testing.T, tr mcp.Transport) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	ev := newEvents()
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-http-interop", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			ev.update(func() {
				tok := fmt.Sprint(p.ProgressToken)
				ev.progress[tok] = append(ev.progress[tok], fmt.Sprintf("%g/%g", p.Progress, p.Total))
			})
		},
	})
	client.AddRoots(&mcp.Root{URI: interopRoot, Name: "aegis interop"})
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	var lines []string
	init := cs.InitializeResult()
	info, _ := json.Marshal(init.ServerInfo)
	caps, _ := json.Marshal(init.Capabilities)
	lines = append(lines, fmt.Sprintf("initialize %s %s %s", init.ProtocolVersion, info, caps))
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	b, _ := json.Marshal(tools)
	lines = append(lines, "tools/list "+string(b))
	for _, c := range everythingScript() {
		if c.tool == "get-env" {
			continue // the child's environment: aegis's, over HTTP, not the test's
		}
		line, _, err := callTool(ctx, cs, c)
		if err != nil {
			t.Fatalf("%v", err)
		}
		lines = append(lines, line)
		if c.progress > 0 {
			if err := ev.waitFor("progress", func() bool { return len(ev.progress[progressToken]) >= c.progress }); err != nil {
				t.Fatalf("%s: %v", c.tool, err)
			}
		}
	}
	// Calls in flight together, each on a stream of its own.
	burst := burstScript()
	results, _, errs := callAll(ctx, cs, burst)
	for i := range burst {
		if errs[i] != nil {
			t.Fatalf("burst: %v", errs[i])
		}
		lines = append(lines, "burst "+results[i])
	}
	ev.mu.Lock()
	lines = append(lines, "progress "+strings.Join(ev.progress[progressToken], " "))
	ev.mu.Unlock()
	if err := cs.Close(); err != nil {
		t.Errorf("closing the session: %v", err)
	}
	return lines
}

// goScriptCalls is how many tools/call goScript makes.
func goScriptCalls() int { return len(everythingScript()) - 1 + len(burstScript()) }

// TestEverythingOverHTTPGoSDK: the Go SDK client's StreamableClientTransport
// drives server-everything through aegis wrap --listen, with a bearer
// token: every answer is the one the same client gets over stdio (the
// server's requests, roots/list, and its progress notifications reach it
// during the calls), the calls in flight together each get their own, and
// the log holds the session's calls, and the stateless session of the
// client's server/discover probe, and verifies.
func TestEverythingOverHTTPGoSDK(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv := everythingArgv(t)
	cmd := exec.Command(argv[0], argv[1:]...)
	direct := goScript(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second})

	h := startHTTPFront(t, argv)
	over := goScript(t, &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: &http.Client{Transport: bearer{h.token, http.DefaultTransport}}})
	if d := diffLines(direct, over); d != "" {
		t.Errorf("the session over HTTP through aegis differs from the one over stdio:\n%s\naegis stderr:\n%s", d, h.stderr.String())
	}
	h.stop(t)
	// Two sessions: the Go SDK first sends server/discover (2026-07-28),
	// a stateless request the front serves in the principal's stateless
	// session (the server answers -32601), then initializes one session
	// of 2025-11-25.
	h.verify(t, 2, goScriptCalls())
}

// TestEverythingOverHTTPTypeScriptSDK: the official TypeScript SDK's
// StreamableHTTPClientTransport (http_client.mjs) gets over HTTP through
// aegis every answer it gets over stdio, progress included, and the
// session it ends (DELETE) is recorded whole.
func TestEverythingOverHTTPTypeScriptSDK(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv := everythingArgv(t)
	run := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command(argv[0], append([]string{"http_client.mjs"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node http_client.mjs %s: %v\n%s", args[0], err, stderr.String())
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	direct := run(append([]string{"stdio"}, argv...)...)
	h := startHTTPFront(t, argv)
	over := run("http", h.url, h.token)
	if d := diffLines(direct, over); d != "" {
		t.Errorf("the TypeScript SDK's session over HTTP through aegis differs from the one over stdio:\n%s\naegis stderr:\n%s", d, h.stderr.String())
	}
	if len(over) != 12 {
		t.Errorf("%d steps; want 12", len(over))
	}
	h.stop(t)
	h.verify(t, 1, 14)
}
