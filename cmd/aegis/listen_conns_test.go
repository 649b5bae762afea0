package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// ulimitN runs a command under an open-file limit of n (soft and hard: the
// Go runtime cannot raise it).
func ulimitN(n int) []string {
	return []string{"sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, n), "sh"}
}

// dialFrom opens n TCP connections to addr from the loopback address
// from, each handed to first (which may write to it) as it opens. A
// connection reset while it opens (aegis refusing it at once) is left
// out.
func dialFrom(t *testing.T, from, addr string, n int, first func(net.Conn)) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := d.Dial("tcp", addr)
		if errors.Is(err, syscall.ECONNRESET) {
			continue
		}
		if err != nil {
			t.Fatalf("dial %s from %s: %v", addr, from, err)
		}
		if first != nil {
			first(c)
		}
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}

// ended reports whether the server ended c (EOF or a reset) within d,
// reading whatever it sent first.
func ended(c net.Conn, d time.Duration) error {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if err == nil || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return err
}

// awaitHead waits until the checkpoint beside headFile covers seq, and
// with head the head file names seq or later too, failing the test if
// wrap exits or 10s pass first: both go on being written.
func awaitHead(t *testing.T, l *listener, headFile string, seq uint64, head bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sh, err := record.ReadHead(headFile)
		cp, _ := os.ReadFile(headFile + ".checkpoint")
		var size uint64
		if lines := strings.Split(string(cp), "\n"); len(lines) > 1 {
			size, _ = strconv.ParseUint(lines[1], 10, 64)
		}
		if size > seq && (!head || err == nil && sh.Head.Seq >= seq) {
			return
		}
		select {
		case <-l.exited:
			t.Fatalf("wrap --listen exited %d while the head file was awaited:\n%s", l.cmd.ProcessState.ExitCode(), l.errText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the head file does not name seq %d after 10s:\n%s", seq, l.errText())
		}
	}
}

// TestListenConnectionFlood: connections that never authenticate, far
// more of them than the open-file limit allows, cost wrap --listen no
// descriptor the log needs: under ulimit -n 200, with a head file and
// checkpoints written all along, a session keeps answering its calls,
// its peer is not shut out by another's flood, the head file and the
// checkpoint follow the records, each flooding connection is ended (at
// once beyond the per-peer or total bound, after --header-timeout
// otherwise, at its response when refused 401), and the log verifies
// with a clean exit, never 74.
func TestListenConnectionFlood(t *testing.T) {
	f := newFixture(t)
	head := f.dir + "/audit.head"
	l := f.listenUnder(t, ulimitN(200), []string{"--head-file", head, "--checkpoint-interval", "10ms",
		"--header-timeout", "300ms", "--max-conns-per-peer", "40"}, child("echo")...)
	addr := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://"), "/mcp")
	// The session's client keeps its own connection alive, opened before
	// any flood.
	l.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	sid := l.initialize(t)
	unauth := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	tests := []struct {
		name  string
		peers []string // each opens n connections
		n     int
		first func(net.Conn)
	}{
		{"idle, one peer", []string{"127.0.0.2"}, 300, nil},
		{"half a header, one peer", []string{"127.0.0.2"}, 300, func(c net.Conn) { io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: ") }},
		{"401, one peer", []string{"127.0.0.2"}, 300, func(c net.Conn) { io.WriteString(c, unauth) }},
		{"idle, many peers past the total", []string{"127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8"}, 40, nil},
		{"wrong path, many peers", []string{"127.0.0.9", "127.0.0.10", "127.0.0.11", "127.0.0.12"}, 60, func(c net.Conn) {
			io.WriteString(c, "GET /x HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		}},
	}
	for i, tt := range tests {
		var conns []net.Conn
		for _, p := range tt.peers {
			conns = append(conns, dialFrom(t, p, addr, tt.n, tt.first)...)
		}
		// A call through the session's own connection while the flood
		// holds; its outcome is the last record.
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, 100+i)
		resp, err := l.do("POST", sid, body)
		if err != nil {
			t.Fatalf("%s: a call in the session: %v\n%s", tt.name, err, l.errText())
		}
		if p, err := readPayloads(resp); resp.StatusCode != 200 || err != nil || len(p) != 1 {
			t.Fatalf("%s: a call in the session = %d, %q, %v; want 200 and its answer\n%s", tt.name, resp.StatusCode, p, err, l.errText())
		}
		recs := f.records(t)
		awaitHead(t, l, head, uint64(len(recs)-1), i == len(tests)-1)
		// Another peer's new connection is not shut out by one peer's
		// flood.
		if len(tt.peers) == 1 {
			other := &listener{url: l.url, token: l.token, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, exited: l.exited}
			resp, err := other.do("POST", sid, `{"jsonrpc":"2.0","method":"notifications/ping"}`)
			if err != nil || resp.StatusCode != http.StatusAccepted {
				t.Fatalf("%s: a notification on a new connection from 127.0.0.1 = %v, %v; want 202", tt.name, resp, err)
			}
			resp.Body.Close()
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(conns))
		for _, c := range conns {
			wg.Go(func() {
				if err := ended(c, 5*time.Second); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err, n := <-errs, len(errs)+1; err != nil {
			t.Errorf("%s: %d flooding connections not ended by aegis within 5s: %v", tt.name, n, err)
		}
		for _, c := range conns {
			c.Close()
		}
	}
	if !strings.Contains(l.errText(), "connections: ") {
		t.Errorf("stderr says nothing of connections reset or refused:\n%s", l.errText())
	}
	if code := l.stop(t); code != 0 {
		t.Fatalf("wrap --listen exit %d; want 0\n%s", code, l.errText())
	}
	f.mustVerify(t, 0)
}

// TestListenRefusedCloses: a request refused before authentication (no
// token, a wrong one, a bad Host or Origin, another path) is answered
// with Connection: close and its connection ended, its body unread; an
// authenticated one keeps its connection.
func TestListenRefusedCloses(t *testing.T) {
	f := newFixture(t)
	l := f.listen(t, nil, aegisBin, "demo", "--serve")
	addr := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://"), "/mcp")
	tests := []struct {
		name   string
		req    string
		status string
		closed bool
	}{
		{"no token", "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 100000\r\n\r\n{", "401", true},
		{"wrong token", "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer x\r\n\r\n", "401", true},
		{"bad Host", "GET /mcp HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer " + l.token + "\r\n\r\n", "403", true},
		{"bad Origin", "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\nOrigin: http://evil.example\r\nAuthorization: Bearer " + l.token + "\r\n\r\n", "403", true},
		{"another path", "GET /other HTTP/1.1\r\nHost: " + addr + "\r\n\r\n", "404", true},
		{"authenticated", "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + l.token + "\r\nAccept: text/event-stream\r\n\r\n", "400", false},
	}
	for _, tt := range tests {
		c := dialFrom(t, "127.0.0.1", addr, 1, nil)[0]
		io.WriteString(c, tt.req)
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Status[:3]; got != tt.status || resp.Close != tt.closed {
			t.Errorf("%s: status %s, Connection: close %v; want %s, %v", tt.name, got, resp.Close, tt.status, tt.closed)
		}
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = br.ReadByte()
		if gone := err == io.EOF || errors.Is(err, syscall.ECONNRESET); gone != tt.closed {
			t.Errorf("%s: after the response, read = %v; want the connection ended %v", tt.name, err, tt.closed)
		}
	}
}

// TestListenBearerScheme: the Authorization scheme is read without case
// and may be followed by several spaces (RFC 9110); anything else, and
// two Authorization headers, is 401.
func TestListenBearerScheme(t *testing.T) {
	f := newFixture(t)
	l := f.listen(t, nil, aegisBin, "demo", "--serve")
	tests := []struct {
		name string
		auth []string
		want int
	}{
		{"Bearer", []string{"Bearer " + l.token}, 200},
		{"bearer", []string{"bearer " + l.token}, 200},
		{"BEARER", []string{"BEARER " + l.token}, 200},
		{"bEaReR, two spaces", []string{"bEaReR  " + l.token}, 200},
		{"no token", []string{"Bearer"}, 401},
		{"no space", []string{"Bearer" + l.token}, 401},
		{"Basic", []string{"Basic " + l.token}, 401},
		{"token only", []string{l.token}, 401},
		{"a token's prefix", []string{"Bearer " + l.token[:len(l.token)-1]}, 401},
		{"token and more", []string{"Bearer " + l.token + " x"}, 401},
		{"two headers", []string{"Bearer " + l.token, "Bearer " + l.token}, 401},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("POST", l.url, strings.NewReader(initializeLine))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		req.Header["Authorization"] = tt.auth
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("initialize with Authorization %q = %d; want %d", tt.auth, resp.StatusCode, tt.want)
		}
	}
}

// stubbornServer is a child that answers initialize, then outlives its
// stdin's EOF (sleeping), and with ignoreTerm SIGTERM too: only SIGKILL,
// after wrap's two grace periods, ends it.
func stubbornServer(ignoreTerm bool) []string {
	trap := ""
	if ignoreTerm {
		trap = "trap '' TERM; "
	}
	return []string{"sh", "-c", trap + `while IFS= read -r line; do case $line in *'"initialize"'*) ` +
		`echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"stubborn","version":"1"}}}';; esac; done; exec sleep 3600`}
}

// TestListenSessionSlotUntilChildExits: a session ended by DELETE or by
// idleness keeps its --max-sessions slot until its child has exited, so
// that --max-sessions bounds the children running: with both slots
// taken, an initialize right after the end is 503, and one succeeds only
// once that session's session_end (written when its child is gone) is in
// the log.
func TestListenSessionSlotUntilChildExits(t *testing.T) {
	tests := []struct {
		name       string
		ignoreTerm bool
		idle       bool // ended by --idle-timeout, not DELETE
	}{
		{"DELETE, child ignores EOF and SIGTERM", true, false},
		{"DELETE, child ignores EOF", false, false},
		{"idle, child ignores EOF and SIGTERM", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			idle := "30m"
			if tt.idle {
				idle = "300ms"
			}
			l := f.listen(t, []string{"--max-sessions", "2", "--grace", "400ms", "--idle-timeout", idle}, stubbornServer(tt.ignoreTerm)...)
			first := l.initialize(t)
			l.initialize(t)
			if tt.idle {
				// Both sessions are reaped (a request would use them: the
				// listener says so on stderr).
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if strings.Count(l.errText(), "idle for") == 2 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("session not reaped after 10s of --idle-timeout 300ms")
					}
				}
			} else if resp := l.request(t, "DELETE", first, ""); resp.StatusCode != 200 {
				t.Fatalf("DELETE = %d; want 200", resp.StatusCode)
			}
			resp := l.request(t, "POST", "", initializeLine)
			resp.Body.Close()
			if ends := f.kinds(t)[record.KindSessionEnd]; resp.StatusCode != http.StatusServiceUnavailable && ends == 0 {
				t.Fatalf("initialize right after the end, with the child alive = %d; want 503", resp.StatusCode)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				resp := l.request(t, "POST", "", initializeLine)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
				if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
					t.Fatalf("initialize = %d; want 503 until a child has exited, then 200\n%s", resp.StatusCode, l.errText())
				}
			}
			if ends := f.kinds(t)[record.KindSessionEnd]; ends == 0 {
				t.Errorf("a new session started with no session_end in the log: a slot was free while its child ran")
			}
			if _, err := os.Stat(f.audit); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// churn opens connections to addr from each of peers, dialers at a time
// per peer, each sending first (nothing, half a header, a request without
// the token), waiting until aegis ends it and opening the next at once,
// until stop is closed. It returns a wait for them all and the count of
// connections opened.
func churn(addr string, peers []string, dialers int, first []string, stop <-chan struct{}) (wait func(), opened *atomic.Int64) {
	opened = new(atomic.Int64)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-stop; cancel() }()
	var wg sync.WaitGroup
	for p, from := range peers {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		for i := range dialers {
			kind := first[(p*dialers+i)%len(first)]
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					// A dial the kernel's full queue holds back ends
					// with the flood.
					c, err := d.DialContext(ctx, "tcp", addr)
					if err != nil {
						continue
					}
					opened.Add(1)
					io.WriteString(c, kind)
					go func() { <-stop; c.Close() }()
					io.Copy(io.Discard, c)
					c.Close()
				}
			})
		}
	}
	return wg.Wait, opened
}

// TestListenFloodAdmitsToken: however many connections strangers open
// without the token, beyond the per-peer bound and beyond the total, and
// however fast they open them again, a client with the token gets in:
// each of its calls, each on a connection of its own, is answered within
// a generous time, none refused. Its first call comes from the address
// of a peer holding more idle connections than --max-conns-per-peer;
// then, while peers of their own open connection after connection past
// --max-conns, its calls alternate between that address and a quiet
// one. Under ulimit -n 200, the bounds lowered to fit, and at the
// defaults.
func TestListenFloodAdmitsToken(t *testing.T) {
	tests := []struct {
		name    string
		under   []string
		extra   []string
		local   int // idle connections held from 127.0.0.1, the client's own address
		peers   int // churning peers
		dialers int // per churning peer
		least   int64
	}{
		{"ulimit -n 200", ulimitN(200), []string{"--max-conns-per-peer", "40"}, 60, 6, 30, 150},
		{"defaults", nil, nil, 600, 8, 180, 1200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			l := f.listenUnder(t, tt.under, append([]string{"--head-file", f.dir + "/audit.head"}, tt.extra...), child("echo")...)
			addr := strings.TrimSuffix(strings.TrimPrefix(l.url, "http://"), "/mcp")
			sid := l.initialize(t)
			call := func(i int, from string) {
				t.Helper()
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
				client := &listener{url: l.url, token: l.token, exited: l.exited, client: &http.Client{
					Timeout:   20 * time.Second,
					Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext},
				}}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, 100+i)
				resp, err := client.do("POST", sid, body)
				if err != nil {
					t.Fatalf("call %d from %s on a new connection during the flood: %v; want its answer\n%s", i, from, err, l.errText())
				}
				if p, err := readPayloads(resp); resp.StatusCode != 200 || err != nil || len(p) != 1 {
					t.Fatalf("call %d from %s during the flood = %d, %q, %v; want 200 and its answer", i, from, resp.StatusCode, p, err)
				}
			}
			dialFrom(t, "127.0.0.1", addr, tt.local, nil)
			call(0, "127.0.0.1")

			var peers []string
			for p := range tt.peers {
				peers = append(peers, fmt.Sprintf("127.0.2.%d", p+1))
			}
			unauth := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n{"
			stop := make(chan struct{})
			wait, opened := churn(addr, peers, tt.dialers, []string{"", "POST /mcp HTTP/1.1\r\nHost: ", unauth, "GET /mcp HTTP/1.1\r\n"}, stop)
			stopped := false
			end := func() {
				if !stopped {
					stopped = true
					close(stop)
					wait()
				}
			}
			defer end()
			// The calls go on once the flood has filled the bounds.
			for deadline := time.Now().Add(20 * time.Second); opened.Load() < tt.least; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the flood opened %d connections in 20s; want %d", opened.Load(), tt.least)
				}
			}
			for i := 1; i <= 4; i++ {
				from := "127.0.0.1"
				if i%2 == 1 {
					from = "127.0.3.1"
				}
				call(i, from)
			}
			end()
			if !strings.Contains(l.errText(), "to make room") {
				t.Errorf("stderr says nothing of connections reset to make room:\n%s", l.errText())
			}
			if code := l.stop(t); code != 0 {
				t.Fatalf("wrap --listen exit %d; want 0\n%s", code, l.errText())
			}
			f.mustVerify(t, 0)
		})
	}
}
