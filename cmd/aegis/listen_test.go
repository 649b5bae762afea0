package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// listener is an aegis wrap --listen run by a test: its URL, its token,
// and its stderr so far.
type listener struct {
	cmd    *exec.Cmd
	url    string
	token  string
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	client *http.Client // nil: http.DefaultClient
}

// listen starts aegis wrap --listen 127.0.0.1:0 (extra flags before the
// child's argv) and waits for it to say where it serves. It is stopped
// (SIGTERM) when the test ends, if the test has not stopped it.
func (f *fixture) listen(t *testing.T, extra []string, argv ...string) *listener {
	t.Helper()
	return f.listenUnder(t, nil, extra, argv...)
}

// listenUnder is listen with aegis run by the command in under (such as
// a shell that sets a limit first), which must exec it.
func (f *fixture) listenUnder(t testing.TB, under []string, extra []string, argv ...string) *listener {
	t.Helper()
	args := append([]string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--grace", "5s", "--listen", "127.0.0.1:0"}, extra...)
	args = append(append(append(append([]string(nil), under...), aegisBin), args...), "--")
	args = append(args, argv...)
	l := &listener{cmd: exec.Command(args[0], args[1:]...), exited: make(chan struct{})}
	pr, err := l.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			l.mu.Lock()
			l.stderr.WriteString(line + "\n")
			l.mu.Unlock()
			if u, ok := strings.CutPrefix(line, "aegis: serving MCP at "); ok {
				found <- strings.Fields(u)[0]
			}
		}
		close(found)
	}()
	go func() { l.cmd.Wait(); close(l.exited) }()
	t.Cleanup(func() { l.stop(t) })
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("aegis wrap --listen exited before serving:\n%s", l.errText())
		}
		l.url = u
	case <-time.After(10 * time.Second):
		t.Fatalf("aegis wrap --listen said nothing of serving in 10s:\n%s", l.errText())
	}
	if tok, err := os.ReadFile(strings.TrimSuffix(f.audit, ".jsonl") + ".token"); err == nil {
		l.token = strings.TrimSpace(string(tok))
	}
	return l
}

func (l *listener) errText() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stderr.String()
}

// stop sends SIGTERM and returns the exit status.
func (l *listener) stop(t testing.TB) int {
	t.Helper()
	select {
	case <-l.exited:
	default:
		l.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-l.exited:
		case <-time.After(20 * time.Second):
			l.cmd.Process.Kill()
			<-l.exited
			t.Errorf("aegis wrap --listen still running 20s after SIGTERM (killed):\n%s", l.errText())
		}
	}
	return l.cmd.ProcessState.ExitCode()
}

// request sends one HTTP request to the endpoint with the token (unless
// hdr sets Authorization) and the headers in hdr ("Name: value").
func (l *listener) request(t *testing.T, method, sid, body string, hdr ...string) *http.Response {
	t.Helper()
	resp, err := l.do(method, sid, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// do is request for a goroutine other than the test's.
func (l *listener) do(method, sid, body string, hdr ...string) (*http.Response, error) {
	req, err := http.NewRequest(method, l.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := l.client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, l.url, err)
	}
	return resp, nil
}

// payloads reads a response to the end: the data of each SSE event that
// has any, or the JSON body as one payload.
func payloads(t *testing.T, resp *http.Response) []string {
	t.Helper()
	p, err := readPayloads(resp)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readPayloads(resp *http.Response) ([]string, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return []string{string(body)}, nil
	}
	var out []string
	for _, ev := range strings.Split(string(body), "\n\n") {
		var data []string
		has := false
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data, has = append(data, d), true
			}
		}
		if has && strings.Join(data, "\n") != "" {
			out = append(out, strings.Join(data, "\n"))
		}
	}
	return out, nil
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"listen-test","version":"1"}}}`

// initialize opens a session and returns its id.
func (l *listener) initialize(t *testing.T) string {
	t.Helper()
	sid, err := l.open()
	if err != nil {
		t.Fatal(err)
	}
	return sid
}

// open is initialize for a goroutine other than the test's.
func (l *listener) open() (string, error) {
	resp, err := l.do("POST", "", initializeLine)
	if err != nil {
		return "", err
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if p, err := readPayloads(resp); err != nil || resp.StatusCode != 200 || sid == "" || len(p) != 1 {
		return "", fmt.Errorf("initialize = %d, session %q, %q, %v; want 200, a session id, one answer\n%s", resp.StatusCode, sid, p, err, l.errText())
	}
	resp, err = l.do("POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("notifications/initialized = %d; want 202", resp.StatusCode)
	}
	return sid, nil
}

// TestListenBytesIdentical: the lines a client POSTs reach the child as
// they are, and each line the child writes comes back as it is: the
// answers through aegis wrap --listen are byte for byte the ones the
// same server gives over stdio, and the log verifies.
func TestListenBytesIdentical(t *testing.T) {
	lines := []string{
		initializeLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"echo","arguments":{"text":"h\u00e9llo \"q\" \\ \ud83d\ude00 <&>"}}}`,
		` { "jsonrpc" : "2.0", "id" : 4.0, "method" : "tools/call", "params" : { "name" : "add", "arguments" : { "a" : 2, "b" : 3 } } } `,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fail","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
	}
	direct := exec.Command(aegisBin, "demo", "--serve")
	direct.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := direct.Output()
	if err != nil {
		t.Fatalf("aegis demo --serve over stdio: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")

	f := newFixture(t)
	l := f.listen(t, nil, aegisBin, "demo", "--serve")
	var got []string
	sid := ""
	for _, line := range lines {
		resp := l.request(t, "POST", sid, line)
		if sid == "" {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
		if resp.StatusCode == http.StatusAccepted {
			resp.Body.Close()
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s = %d; want 200", line, resp.StatusCode)
		}
		got = append(got, payloads(t, resp)...)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("answers through --listen:\n%s\nwant (stdio):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if resp := l.request(t, "DELETE", sid, ""); resp.StatusCode != 200 {
		t.Errorf("DELETE = %d; want 200", resp.StatusCode)
	}
	if code := l.stop(t); code != 0 {
		t.Fatalf("aegis wrap --listen exit %d after SIGTERM; want 0\n%s", code, l.errText())
	}
	f.mustVerify(t, 0)
	k := f.kinds(t)
	if k[record.KindSessionStart] != 2 || k[record.KindSessionEnd] != 2 || k[record.KindIntent] != 3 || k[record.KindOutcome] != 3 {
		t.Errorf("records %v; want 2 session_start and session_end (the listener, the session), 3 intents and outcomes", k)
	}
	// Who called: both session_starts say http and the token's id (never
	// the token); the listener's names the address it served, the
	// session's the client's; the session's intents name it by sid.
	sum := sha256.Sum256([]byte(l.token))
	principal := "token:" + hex.EncodeToString(sum[:8])
	served := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://"), "/mcp")
	var starts []*record.SessionStart
	sessionOf := map[[16]byte]*record.SessionStart{}
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.SessionStart:
			starts = append(starts, b)
			sessionOf[r.SID] = b
		case *record.Intent:
			if s := sessionOf[r.SID]; s == nil || s.Peer == served {
				t.Errorf("intent seq %d: session %v; want the client's session", r.Seq, s)
			}
		}
	}
	if len(starts) != 2 {
		t.Fatalf("%d session_starts; want 2", len(starts))
	}
	for i, s := range starts {
		if s.Transport != record.TransportHTTP || s.Principal != principal {
			t.Errorf("session_start %d: transport %q, principal %q; want http, %q", i, s.Transport, s.Principal, principal)
		}
	}
	if starts[0].Peer != served || !strings.HasPrefix(starts[1].Peer, "127.0.0.1:") || starts[1].Peer == served {
		t.Errorf("peers %q, %q; want %s (served) and the client's 127.0.0.1:PORT", starts[0].Peer, starts[1].Peer, served)
	}
	if data := readAudit(f.audit); bytes.Contains(data, []byte(l.token)) {
		t.Error("the audit log holds the token")
	}
	// aegis log reads the interleaved sessions as such: each ended, each
	// saying who called.
	logOut, err := exec.Command(aegisBin, "log", f.audit).CombinedOutput()
	if err != nil || bytes.Contains(logOut, []byte("no session_end")) || bytes.Count(logOut, []byte("over http, peer ")) != 2 || bytes.Count(logOut, []byte(" ended ")) != 2 {
		t.Errorf("aegis log = %v\n%s\nwant two sessions over http, both ended", err, logOut)
	}
}

// TestListenSessionsApart: 64 sessions at once, every one using id 1,
// each gets its own answer from its own child, and each is recorded as a
// session of its own (its own sid, session_start and session_end).
func TestListenSessionsApart(t *testing.T) {
	t.Parallel()
	const n = 64
	f := newFixture(t)
	l := f.listen(t, []string{"--durability", "reply"}, aegisBin, "demo", "--serve")
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid, err := l.open()
			if err != nil {
				errs <- fmt.Sprintf("session %d: %v", i, err)
				return
			}
			text := fmt.Sprintf("session %d", i)
			resp, err := l.do("POST", sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+text+`"}}}`)
			if err != nil {
				errs <- fmt.Sprintf("session %d: %v", i, err)
				return
			}
			want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
			if p, err := readPayloads(resp); err != nil || len(p) != 1 || p[0] != want {
				errs <- fmt.Sprintf("session %d: answers %q, %v; want [%s]", i, p, err, want)
			}
			resp, err = l.do("DELETE", sid, "")
			if err != nil || resp.StatusCode != 200 {
				errs <- fmt.Sprintf("session %d: DELETE = %v, %v; want 200", i, resp, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if code := l.stop(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM; want 0\n%s", code, l.errText())
	}
	f.mustVerify(t, 0)
	starts, ends, calls := map[[16]byte]bool{}, map[[16]byte]bool{}, map[[16]byte]int{}
	for _, r := range f.records(t) {
		switch r.Kind {
		case record.KindSessionStart:
			starts[r.SID] = true
		case record.KindSessionEnd:
			ends[r.SID] = true
		case record.KindIntent:
			calls[r.SID]++
		}
	}
	if len(starts) != n+1 || len(ends) != n+1 || len(calls) != n {
		t.Fatalf("%d session_starts, %d session_ends, %d sessions with calls; want %d, %d, %d", len(starts), len(ends), len(calls), n+1, n+1, n)
	}
	for sid, c := range calls {
		if c != 1 || !starts[sid] {
			t.Errorf("session %x: %d intents, session_start %v; want 1 and true", sid, c, starts[sid])
		}
	}
}

// TestListenRefusals: each request the transport or aegis refuses gets
// its status, and nothing of it reaches a child.
func TestListenRefusals(t *testing.T) {
	f := newFixture(t)
	l := f.listen(t, []string{"--max-frame", "4KiB"}, aegisBin, "demo", "--serve")
	sid := l.initialize(t)
	gone := l.initialize(t)
	if resp := l.request(t, "DELETE", gone, ""); resp.StatusCode != 200 {
		t.Fatalf("DELETE = %d; want 200", resp.StatusCode)
	}
	call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	tests := []struct {
		name, method, sid, body string
		hdr                     []string
		want                    int
	}{
		{"no session id", "POST", "", call, nil, 400},
		{"unknown session", "POST", "0123456789abcdef0123456789abcdef", call, nil, 404},
		{"after DELETE", "POST", gone, call, nil, 404},
		{"GET after DELETE", "GET", gone, "", nil, 404},
		{"no token", "POST", sid, call, []string{"Authorization: "}, 401},
		{"wrong token", "POST", sid, call, []string{"Authorization: Bearer " + strings.Repeat("A", 43)}, 401},
		{"foreign Origin", "POST", sid, call, []string{"Origin: https://evil.example"}, 403},
		{"rebound Host", "POST", sid, call, []string{"Host: evil.example:80"}, 403},
		{"LF inside", "POST", sid, strings.Replace(call, `,"method"`, "\n,\"method\"", 1), nil, 400},
		{"CR inside", "POST", sid, strings.Replace(call, `,"method"`, "\r,\"method\"", 1), nil, 400},
		{"two messages", "POST", sid, call + "\n" + call, nil, 400},
		{"batch", "POST", sid, "[" + call + "]", nil, 400},
		{"not JSON", "POST", sid, "{", nil, 400},
		{"too long", "POST", sid, strings.Replace(call, `"x"`, `"`+strings.Repeat("x", 5000)+`"`, 1), nil, 413},
		{"unknown protocol version", "POST", sid, call, []string{"Mcp-Protocol-Version: 1999-01-01"}, 400},
		{"Mcp-Method disagrees", "POST", sid, call, []string{"Mcp-Method: tools/list"}, 400},
		{"Mcp-Name disagrees", "POST", sid, call, []string{"Mcp-Name: add"}, 400},
		{"Accept neither", "POST", sid, call, []string{"Accept: text/html"}, 406},
		{"GET without SSE", "GET", sid, "", []string{"Accept: application/json"}, 406},
		{"PUT", "PUT", sid, call, nil, 405},
	}
	rpcCodes := map[string]int{"not JSON": -32700, "batch": -32600}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := l.request(t, tc.method, tc.sid, tc.body, tc.hdr...)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s = %d; want %d", tc.name, resp.StatusCode, tc.want)
			}
			// JSON-RPC's own codes for a body that is not JSON (parse
			// error) and for JSON that is no single message.
			if code, ok := rpcCodes[tc.name]; ok && !strings.Contains(string(body), fmt.Sprintf(`"code":%d`, code)) {
				t.Errorf("%s: body %s; want JSON-RPC error code %d", tc.name, body, code)
			}
			if tc.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q; want Bearer …", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// What was allowed still works, with the headers agreeing.
	resp := l.request(t, "POST", sid, call, "Mcp-Method: tools/call", "Mcp-Name: echo", "Origin: http://localhost:3000")
	if p := payloads(t, resp); resp.StatusCode != 200 || len(p) != 1 || !strings.Contains(p[0], `"text":"x"`) {
		t.Errorf("an allowed call = %d %q; want 200 and its answer", resp.StatusCode, p)
	}
	l.stop(t)
	f.mustVerify(t, 0)
	if k := f.kinds(t); k[record.KindIntent] != 1 {
		t.Errorf("%d intents; want 1: no refused request reached a child", k[record.KindIntent])
	}
}

// TestListenAuthNoneBeyondLoopback: --auth none on an address others can
// reach is a setup mistake (exit 2) and nothing is opened.
func TestListenAuthNoneBeyondLoopback(t *testing.T) {
	f := newFixture(t)
	cmd := exec.Command(aegisBin, "wrap", "--audit", f.audit, "--signing-key", f.key, "--listen", "0.0.0.0:0", "--auth", "none", "--", aegisBin, "demo", "--serve")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "--auth none") {
		t.Errorf("--auth none on 0.0.0.0 = exit %d, %q; want 2 and why", code, out)
	}
	if _, err := os.Stat(f.audit); err == nil {
		t.Errorf("%s was created; want nothing opened", f.audit)
	}
}

// TestListenTokenFile: the token file is 0600 and holds the token the
// server takes; a unix socket is 0600 too, and --auth none is allowed
// there.
func TestListenTokenFile(t *testing.T) {
	f := newFixture(t)
	l := f.listen(t, nil, aegisBin, "demo", "--serve")
	fi, err := os.Stat(strings.TrimSuffix(f.audit, ".jsonl") + ".token")
	if err != nil || fi.Mode().Perm() != 0o600 || l.token == "" {
		t.Fatalf("token file: %v, mode %v, token %q; want mode 0600 and a token", err, fi.Mode(), l.token)
	}
	l.initialize(t)
	l.stop(t)

	sock := filepath.Join(f.dir, "mcp.sock")
	g := &fixture{dir: f.dir, key: f.key, audit: filepath.Join(f.dir, "unix.jsonl")}
	cmd := exec.Command(aegisBin, "wrap", "--audit", g.audit, "--signing-key", g.key, "--listen", "unix:"+sock, "--auth", "none", "--", aegisBin, "demo", "--serve")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The socket appears once bound; stderr is read only after Wait (the
	// command's copier writes it meanwhile).
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(sock); err != nil; _, err = os.Stat(sock) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("not serving on %s after 10s:\n%s", sock, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("unix socket: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	// A client on the socket: no token, no Host check; the session
	// records the socket as its peer and none as its principal.
	u := &listener{url: "http://localhost/mcp", client: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}}
	u.initialize(t)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wrap --listen unix: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(sock); err == nil {
		t.Errorf("%s left behind after the end", sock)
	}
	var starts []*record.SessionStart
	for _, r := range g.records(t) {
		if b, ok := r.Body.(*record.SessionStart); ok {
			starts = append(starts, b)
		}
	}
	if len(starts) != 2 || starts[1].Peer != sock || starts[1].Principal != "none" || starts[0].Principal != "none" {
		t.Errorf("session_starts %+v; want the listener's and the session's, peer %s, principal none", starts, sock)
	}
}

// TestListenPolicy: --policy works over HTTP as over stdio: a refused
// call is answered with the relay's refusal frame, byte for byte, and
// never reaches the child; an allowed one runs; each is recorded in its
// session with its verdict. A policy reload (SIGHUP) applies to every
// session and is recorded in the listener's.
func TestListenPolicy(t *testing.T) {
	f := newFixture(t)
	path, set := f.writePolicy(t, "policy.yaml", "version: 1\ndefault: allow\nrules:\n  - tool: \"delete_*\"\n    action: deny\n")
	l := f.listen(t, []string{"--policy", path}, aegisBin, "demo", "--serve")
	sid := l.initialize(t)
	resp := l.request(t, "POST", sid, `{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"delete_all","arguments":{}}}`)
	if p := payloads(t, resp); len(p) != 1 || p[0] != refusal(`"d"`, "POLICY_DENIED", "rules[0] delete_*") {
		t.Errorf("denied call answered %q; want the refusal frame %s", p, refusal(`"d"`, "POLICY_DENIED", "rules[0] delete_*"))
	}
	resp = l.request(t, "POST", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"allowed"}}}`)
	if p := payloads(t, resp); len(p) != 1 || !strings.Contains(p[0], `"text":"allowed"`) {
		t.Errorf("allowed call answered %q; want the child's answer", p)
	}
	replacePolicy(t, path, "version: 1\ndefault: deny\n")
	l.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(l.errText(), "reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload 10s after SIGHUP:\n%s", l.errText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp = l.request(t, "POST", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"now denied"}}}`)
	if p := payloads(t, resp); len(p) != 1 || !strings.Contains(p[0], `"POLICY_DENIED"`) {
		t.Errorf("after the reload, echo answered %q; want a refusal", p)
	}
	if code := l.stop(t); code != 0 {
		t.Fatalf("exit %d; want 0\n%s", code, l.errText())
	}
	f.mustVerify(t, 0)
	recs := f.records(t)
	listener := recs[0].SID
	var verdicts []string
	reloads := 0
	for _, r := range recs {
		switch b := r.Body.(type) {
		case *record.Intent:
			verdicts = append(verdicts, b.Verdict)
			if r.SID == listener {
				t.Errorf("intent seq %d in the listener's session", r.Seq)
			}
		case *record.PolicyReload:
			reloads++
			if r.SID != listener {
				t.Errorf("policy_reload seq %d in a client's session; want the listener's", r.Seq)
			}
		case *record.SessionStart:
			if b.PolicySet != set {
				t.Errorf("session_start policy_set %q; want %q", b.PolicySet, set)
			}
		}
	}
	if strings.Join(verdicts, ",") != "denied,allowed,denied" || reloads != 1 {
		t.Errorf("verdicts %v, %d reloads; want denied, allowed, denied and 1", verdicts, reloads)
	}
}

// TestListenTokenFileReplaced: a token file an earlier run left is
// replaced by a new token (the old one no longer admits); a --token-file
// naming a file that is not a token file is refused with exit 2 and left
// byte for byte as it was.
func TestListenTokenFileReplaced(t *testing.T) {
	f := newFixture(t)
	first := f.listen(t, nil, aegisBin, "demo", "--serve")
	first.stop(t)
	second := f.listen(t, nil, aegisBin, "demo", "--serve")
	if second.token == "" || second.token == first.token {
		t.Fatalf("tokens %q then %q; want a new one each run", first.token, second.token)
	}
	second.initialize(t)
	second.stop(t)

	notToken := filepath.Join(f.dir, "notes.txt")
	const text = "short notes\n"
	if err := os.WriteFile(notToken, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(aegisBin, "wrap", "--audit", filepath.Join(f.dir, "other.jsonl"), "--signing-key", f.key,
		"--listen", "127.0.0.1:0", "--token-file", notToken, "--", aegisBin, "demo", "--serve")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "no token file") {
		t.Errorf("--token-file naming a notes file = exit %d, %q; want 2 and why", code, out)
	}
	if got, err := os.ReadFile(notToken); err != nil || string(got) != text {
		t.Errorf("%s = %q, %v after the refusal; want it unchanged", notToken, got, err)
	}
}

// TestListenEndsBySignal: SIGTERM ends wrap --listen as it ends a stdio
// wrap: each session still running gets the signal, and its session_end
// says signal (not client_eof, which would claim its client ended it); a
// session its client ended with DELETE says client_eof; the listener's
// own session says signal; the log verifies.
func TestListenEndsBySignal(t *testing.T) {
	f := newFixture(t)
	l := f.listen(t, nil, aegisBin, "demo", "--serve")
	running := l.initialize(t)
	deleted := l.initialize(t)
	if resp := l.request(t, "DELETE", deleted, ""); resp.StatusCode != 200 {
		t.Fatalf("DELETE = %d; want 200", resp.StatusCode)
	}
	_ = running
	// The deleted session ends on its own (its child sees EOF and exits)
	// before the signal, which would otherwise reach it too.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f.kinds(t)[record.KindSessionEnd] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted session has no session_end after 10s:\n%s", l.errText())
		}
	}
	l.stop(t)
	f.mustVerify(t, 0)
	var sids [][16]byte
	started := map[[16]byte]string{}
	ended := map[[16]byte]string{}
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.SessionStart:
			sids = append(sids, r.SID)
			started[r.SID] = b.Peer
		case *record.SessionEnd:
			ended[r.SID] = b.Reason
		}
	}
	if len(sids) != 3 {
		t.Fatalf("%d sessions; want the listener's and two", len(sids))
	}
	// In order of their session_start: the listener, the session left
	// running, the session deleted.
	want := []string{record.EndSignal, record.EndSignal, record.EndClientEOF}
	for i, sid := range sids {
		if ended[sid] != want[i] {
			t.Errorf("session %d (peer %s) ended %q; want %q", i, started[sid], ended[sid], want[i])
		}
	}
}

// TestListenIdleDefault: a session no request uses ends after five
// minutes unless --idle-timeout says otherwise, so that clients that
// never send DELETE (the MCP Inspector) do not keep a child each for
// long; wrap's help says the default.
func TestListenIdleDefault(t *testing.T) {
	out, err := exec.Command(aegisBin, "wrap", "--help").Output()
	if err != nil {
		t.Fatalf("aegis wrap --help: %v", err)
	}
	i := bytes.Index(out, []byte("--idle-timeout D"))
	if i < 0 {
		t.Fatalf("aegis wrap --help lists no --idle-timeout D:\n%s", out)
	}
	entry, _, _ := strings.Cut(string(out[i:]), "\n  --")
	if !strings.Contains(entry, "(default 5m0s)") {
		t.Errorf("aegis wrap --help says of --idle-timeout:\n%s\nwant (default 5m0s)", entry)
	}
}
