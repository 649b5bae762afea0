package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// httpTarget is a process serving MCP over HTTP (the floor, aegis wrap
// --listen, supergateway) with the harness as its client. Its methods
// are safe for concurrent use; each concurrent client uses an httpWorker
// of its own.
type httpTarget struct {
	name     string
	p        *proc // the serving process, for its CPU time and memory
	group    bool  // signal its process group, not the process alone
	url      string
	token    string // the bearer token, "" for none
	sessions bool   // whether a client starts a session (initialize) first
	client   *http.Client
	done     chan error // the process's exit
	ids      atomic.Int64
}

// startHTTPTarget starts argv, which serves HTTP on 127.0.0.1:port, and
// returns once the port takes connections. tokenFile, when not "", is
// where the process writes the bearer token the requests carry. With
// group, the process leads a process group of its own, and stop signals
// the group.
func startHTTPTarget(ctx context.Context, name string, argv []string, port int, tokenFile string, sessions, group bool) (*httpTarget, error) {
	p := &proc{name: name, stderr: new(lockedBuffer)}
	p.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	t := &httpTarget{
		name: name, p: p, group: group, url: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), sessions: sessions,
		done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{
			Proxy:               nil, // loopback only, whatever the environment says
			MaxIdleConnsPerHost: 1024,
			DisableCompression:  true,
		}},
	}
	go func() { t.done <- p.cmd.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			// aegis listens before it writes the token file: the token
			// is there once its line is whole.
			if tokenFile == "" {
				break
			}
			if b, err := os.ReadFile(tokenFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
				t.token = strings.TrimSpace(string(b))
				break
			}
		}
		select {
		case err := <-t.done:
			t.done <- err
			return nil, p.errorf("exited before serving: %v", err)
		case <-ctx.Done():
			t.stop()
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
	return t, nil
}

// stop ends the process as a user does, with SIGTERM, and waits for it;
// SIGKILL after 10 s. A non-zero exit after SIGTERM is an error only
// when strict (aegis's, whose exit says whether its log was closed).
func (t *httpTarget) stopChecked(strict bool) error {
	if t == nil || t.done == nil {
		return nil
	}
	t.client.CloseIdleConnections()
	pid := t.p.cmd.Process.Pid
	if t.group {
		pid = -pid
	}
	syscall.Kill(pid, syscall.SIGTERM)
	var err error
	select {
	case err = <-t.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(pid, syscall.SIGKILL)
		err = <-t.done
		err = t.p.errorf("still ran 10 s after SIGTERM (%v)", err)
		strict = true
	}
	t.done = nil
	if strict && err != nil {
		return t.p.errorf("exit: %w", err)
	}
	return nil
}

func (t *httpTarget) stop() error { return t.stopChecked(false) }

// modernRevision is the MCP revision whose requests are stateless: no
// initialize, no session id, the revision and the client's capabilities
// in every request's params._meta, the method (and a tools/call's name)
// mirrored in headers.
const modernRevision = "2026-07-28"

// modernMeta is params._meta of a 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// httpReq is a request an HTTP client sends: its line split where the id
// goes (as pingReq), and for 2026-07-28 what its Mcp-Method and Mcp-Name
// headers mirror.
type httpReq struct {
	line         [2]string
	method, name string
}

var (
	// httpPing and httpCall are revision 2025-11-25's unrecorded and
	// recorded requests.
	httpPing = httpReq{line: pingReq}
	httpCall = httpReq{line: callReq}
	// modernList is the unrecorded request of revision 2026-07-28, which
	// has no ping: resources/list, which the echo child answers as it
	// answers ping, with an empty result.
	modernList = httpReq{line: [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"resources/list","params":{` + modernMeta + `}}` + "\n"}, method: "resources/list"}
)

// unrecordedReq is the unrecorded request of a revision: 2026-07-28's
// when modern.
func unrecordedReq(modern bool) httpReq {
	if modern {
		return modernList
	}
	return httpPing
}

// httpWorker is one client of a target: a session (when the target has
// them and the client speaks 2025-11-25) and the buffers of its
// requests. Not safe for concurrent use.
type httpWorker struct {
	t      *httpTarget
	modern bool // speaks 2026-07-28: stateless
	sid    string
	body   []byte
	br     *bufio.Reader
}

// worker returns a client of t, with a session of its own started when
// t has sessions and the client speaks 2025-11-25 (initialize answered,
// notifications/initialized sent); a 2026-07-28 client (modern) starts
// none.
func (t *httpTarget) worker(modern bool) (*httpWorker, error) {
	w := t.join("", modern)
	if !t.sessions || modern {
		return w, nil
	}
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"aegis-bench","version":"1"}}}`)
	resp, err := w.post(init, httpReq{})
	if err != nil {
		return nil, err
	}
	if err := w.answer(resp, 0); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if w.sid = resp.Header.Get("Mcp-Session-Id"); w.sid == "" {
		return nil, t.p.errorf("initialize answered without Mcp-Session-Id")
	}
	resp, err = w.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), httpReq{})
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return nil, t.p.errorf("notifications/initialized answered %d; want 202", resp.StatusCode)
	}
	return w, nil
}

// join returns a client of t in the session sid (none: ""), speaking
// 2026-07-28 when modern.
func (t *httpTarget) join(sid string, modern bool) *httpWorker {
	return &httpWorker{t: t, modern: modern, sid: sid, br: bufio.NewReaderSize(nil, 16<<10)}
}

// post sends one message, req's, as a conforming client does: Accept
// takes JSON and SSE; at 2026-07-28 the revision, method and name in
// headers.
func (w *httpWorker) post(body []byte, req httpReq) (*http.Response, error) {
	r, err := http.NewRequest(http.MethodPost, w.t.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	switch {
	case w.modern:
		r.Header.Set("MCP-Protocol-Version", modernRevision)
		r.Header.Set("Mcp-Method", req.method)
		if req.name != "" {
			r.Header.Set("Mcp-Name", req.name)
		}
	case w.t.sessions:
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	if w.sid != "" {
		r.Header.Set("Mcp-Session-Id", w.sid)
	}
	if w.t.token != "" {
		r.Header.Set("Authorization", "Bearer "+w.t.token)
	}
	resp, err := w.t.client.Do(r)
	if err != nil {
		return nil, w.t.p.errorf("POST: %w", err)
	}
	return resp, nil
}

// answer reads a request's response, JSON or an SSE stream, to its end,
// and checks that it holds the answer to id.
func (w *httpWorker) answer(resp *http.Response, id int) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return w.t.p.errorf("answered %s: %q", resp.Status, b)
	}
	w.br.Reset(resp.Body)
	found := false
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		line, err := w.br.ReadSlice(0)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return w.t.p.errorf("read answer: %w", err)
		}
		found = answers(line, id)
		if _, err := io.Copy(io.Discard, w.br); err != nil {
			return w.t.p.errorf("read answer: %w", err)
		}
	} else {
		for {
			line, err := w.br.ReadSlice('\n')
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && answers(bytes.TrimSpace(data), id) {
				found = true
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return w.t.p.errorf("read SSE: %w", err)
			}
		}
	}
	if !found {
		return w.t.p.errorf("no answer to id %d in the response", id)
	}
	return nil
}

// answers reports whether a message is the echo child's answer to id.
func answers(msg []byte, id int) bool {
	got, ok := responseID(msg)
	return ok && got == id
}

// roundTrip sends one request with a fresh id and reads its answer: the
// time from before the POST to the end of the response.
func (w *httpWorker) roundTrip(req httpReq) (time.Duration, error) {
	id := int(w.t.ids.Add(1))
	w.body = append(strconv.AppendInt(append(w.body[:0], req.line[0]...), int64(id), 10), strings.TrimSuffix(req.line[1], "\n")...)
	t0 := time.Now()
	resp, err := w.post(w.body, req)
	if err != nil {
		return 0, err
	}
	err = w.answer(resp, id)
	return time.Since(t0), err
}

// pipeline sends n requests from window workers at once, each lock-step
// on a connection of its own, and returns the elapsed time.
func (t *httpTarget) pipeline(ws []*httpWorker, req httpReq, n int) (time.Duration, error) {
	var next atomic.Int64
	errs := make(chan error, len(ws))
	t0 := time.Now()
	for _, w := range ws {
		go func() {
			for next.Add(1) <= int64(n) {
				if _, err := w.roundTrip(req); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var err error
	for range ws {
		err = errors.Join(err, <-errs)
	}
	return time.Since(t0), err
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// rss is the resident set of pid (VmRSS), in bytes.
func rss(pid int) (int64, error) {
	return statusKB(pid, "VmRSS:")
}

func statusKB(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// treeRSS is the resident set of pid and every process below it, in
// bytes: a front's own memory and its sessions' children.
func treeRSS(pid int) (int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it ended
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(data, ')')
		f := strings.Fields(string(data[i+1:]))
		if i < 0 || len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	var sum int64
	for p := range parent {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				if n, err := rss(p); err == nil {
					sum += n
				}
				break
			}
		}
	}
	if sum == 0 {
		return 0, fmt.Errorf("no process %d", pid)
	}
	return sum, nil
}
