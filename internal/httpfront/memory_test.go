package httpfront

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// floodChild is a child in this process for the memory tests. By method:
//
//	initialize, ping  answer {}
//	flood             writes params.n notifications of params.size bytes
//	                  each, then (a request) answers; then says so on done
//	big               (a request) answers with a result of params.size
//	                  bytes, then writes params.n notifications of that
//	                  size in the same write
//	wait              never answers
//
// Every line is written to c.Out, the session's router, which holds the
// child back as the front's bounds say.
type floodChild struct {
	done chan string // the id of each flood written (null for a notification)
}

func (fc *floodChild) run(c *Conn, done chan struct{}) {
	defer close(done)
	br := bufio.NewReaderSize(c.In, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct{ N, Size int }
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		id := string(m.ID)
		if id == "" {
			id = "null"
		}
		switch m.Method {
		case "initialize", "ping":
			fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id)
		case "flood":
			note := notification(m.Params.Size)
			for range m.Params.N {
				if _, err := c.Out.Write(note); err != nil {
					return
				}
			}
			if m.ID != nil {
				fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id)
			}
			fc.done <- id
		case "big":
			head := `{"jsonrpc":"2.0","id":` + id + `,"result":{"pad":"`
			out := []byte(head + strings.Repeat("x", m.Params.Size-len(head)-3) + "\"}}\n")
			for range m.Params.N {
				out = append(out, notification(m.Params.Size)...)
			}
			c.Out.Write(out)
		}
	}
}

// notification is a child's line of size bytes and its '\n'.
func notification(size int) []byte {
	head, tail := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`, `"}}`
	return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail + "\n")
}

// newFloodFront is newFront with a floodChild in every session.
func newFloodFront(t *testing.T, cfg Config) (*front, *floodChild) {
	t.Helper()
	fc := &floodChild{done: make(chan string, 16)}
	cfg.Start = func(c *Conn) (<-chan struct{}, error) {
		done := make(chan struct{})
		go fc.run(c, done)
		return done, nil
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Shutdown)
	return &front{srv: srv, url: "http://" + ln.Addr().String() + Path}, fc
}

// slowReader is an HTTP client whose connections take little before
// their reader does: a receive buffer of 64 KiB (which also stops the
// kernel growing it), so that a client that reads nothing holds the
// server back after a few hundred KiB whatever the system's socket
// buffer settings.
func slowReader() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
		})
		return err
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// doWith is front.do on client c.
func (f *front) doWith(t *testing.T, c *http.Client, ctx context.Context, method, sid, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, f.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", sid)
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// watchBounds samples the session's and the server's out counts until
// stop is closed, and reports the first time either is over its bound.
func watchBounds(f *front, ss *session, stop <-chan struct{}) <-chan string {
	over := make(chan string, 1)
	m := f.srv.memory()
	go func() {
		defer close(over)
		for {
			ss.mu.Lock()
			held := ss.held
			ss.mu.Unlock()
			m.out.mu.Lock()
			used := m.out.used
			m.out.mu.Unlock()
			if held > m.session || used > m.out.max {
				over <- fmt.Sprintf("session holds %d bytes (bound %d), server %d (bound %d)", held, m.session, used, m.out.max)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return over
}

// heldNear waits until the session holds all but one frame of its bound:
// the router is then waiting for room, holding the child back.
func heldNear(t *testing.T, f *front, ss *session) {
	t.Helper()
	m := f.srv.memory()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		ss.mu.Lock()
		held := ss.held
		ss.mu.Unlock()
		if held > m.session-f.srv.cfg.MaxFrame {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session holds %d bytes after 10s; want over %d (a client that reads nothing)", held, m.session-f.srv.cfg.MaxFrame)
		}
	}
}

// TestOutBound: a child that writes far more than the front's bounds
// (400 lines of 60 KiB, 24 MiB, beyond what loopback's socket buffers
// take, against 128 KiB a session and 256 KiB in all) to a client that
// reads it, that stops reading, or that is gone: the bytes held never
// pass the bounds; a client that reads gets every line; one that stops
// reading holds the child back for Config.WriteTimeout, and then loses
// the stream and its connection, while another session is answered all
// along; one that is gone lets the child go on at once, however long
// WriteTimeout is. The session goes on after each, and every byte
// counted is given back.
func TestOutBound(t *testing.T) {
	const (
		frameMax = 64 << 10
		lines    = 400
		size     = 60 << 10
	)
	for _, tc := range []struct {
		name   string
		get    bool   // the flood goes to the standalone stream (GET) rather than a call's
		client string // reads, stalls (reads nothing, stays connected), gone (closes mid-flood)
		wt     time.Duration
	}{
		{"call, client reads", false, "reads", time.Minute},
		{"call, client stalls", false, "stalls", time.Second},
		{"call, client gone", false, "gone", time.Minute},
		{"standalone, client reads", true, "reads", time.Minute},
		{"standalone, client stalls", true, "stalls", time.Second},
		{"standalone, client gone", true, "gone", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fc := newFloodFront(t, Config{MaxFrame: frameMax, WriteTimeout: tc.wt})
			sid, other := f.initialize(t), f.initialize(t)
			f.srv.mu.Lock()
			ss := f.srv.sessions[sid]
			f.srv.mu.Unlock()
			stop := make(chan struct{})
			over := watchBounds(f, ss, stop)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			flood := fmt.Sprintf(`{"jsonrpc":"2.0","id":"f","method":"flood","params":{"n":%d,"size":%d}}`, lines, size)
			var resp *http.Response
			slow := slowReader()
			if tc.get {
				resp = f.doWith(t, slow, ctx, "GET", sid, "", "Accept: text/event-stream")
				f.do(t, ctx, "POST", sid, strings.Replace(flood, `"id":"f",`, "", 1)).Body.Close()
			} else {
				resp = f.doWith(t, slow, ctx, "POST", sid, flood)
			}
			start := time.Now()
			br := bufio.NewReader(resp.Body)
			if _, err := br.ReadString('\n'); err != nil { // the priming event's id
				t.Fatalf("the stream's first line: %v", err)
			}
			var got atomic.Int64 // events with data read
			read := make(chan error, 1)
			switch tc.client {
			case "reads":
				go func() {
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							read <- err
							return
						}
						if strings.HasPrefix(line, "data: {") {
							got.Add(1)
						}
					}
				}()
			case "stalls":
				heldNear(t, f, ss)
				// Another session is answered while this one waits.
				if d := datas(readEvents(t, f.do(t, ctx, "POST", other, `{"jsonrpc":"2.0","id":1,"method":"ping"}`).Body)); len(d) != 1 {
					t.Errorf("another session's ping during the stall = %q; want its answer", d)
				}
				select {
				case id := <-fc.done:
					t.Errorf("flood %s written while its client read nothing, before WriteTimeout; want the child held back", id)
				default:
				}
			case "gone":
				heldNear(t, f, ss)
				resp.Body.Close()
			}
			select {
			case <-fc.done:
			case <-time.After(tc.wt + 10*time.Second):
				t.Fatalf("the flood is not written %v after it began (WriteTimeout %v)", time.Since(start), tc.wt)
			}
			took := time.Since(start)
			switch tc.client {
			case "reads":
				want := int64(lines)
				if !tc.get {
					want++ // the answer, which ends the stream
					if err := <-read; err != io.EOF {
						t.Errorf("reading the call's stream: %v; want its end", err)
					}
				} else {
					for end := time.Now().Add(10 * time.Second); got.Load() < want && time.Now().Before(end); {
						time.Sleep(time.Millisecond)
					}
				}
				if got.Load() != want {
					t.Errorf("the client read %d events; want %d", got.Load(), want)
				}
			case "stalls":
				if took < tc.wt {
					t.Errorf("the child was held back %v; want WriteTimeout, %v", took, tc.wt)
				}
				// What the socket holds is read, then the connection ends.
				go func() { _, err := io.Copy(io.Discard, br); read <- err }()
				select {
				case <-read:
				case <-time.After(10 * time.Second):
					t.Errorf("the stalled client's connection still open 10s after its stream was dropped")
				}
			case "gone":
				if took > tc.wt/2 {
					t.Errorf("the child was held back %v by a client that is gone; want far less than WriteTimeout, %v", took, tc.wt)
				}
			}
			if !tc.get && tc.client != "reads" {
				// The dropped stream cannot be resumed.
				r := f.do(t, ctx, "GET", sid, "", "Accept: text/event-stream", "Last-Event-ID: 2-1")
				r.Body.Close()
				if r.StatusCode != http.StatusNotFound {
					t.Errorf("resuming the dropped stream = %d; want 404", r.StatusCode)
				}
			}
			// The session goes on.
			if d := datas(readEvents(t, f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).Body)); len(d) != 1 || d[0] != `{"jsonrpc":"2.0","id":2,"result":{}}` {
				t.Errorf("ping after the flood = %q; want its answer", d)
			}
			resp.Body.Close()
			close(stop)
			if msg, ok := <-over; ok {
				t.Error(msg)
			}
			f.srv.Shutdown()
			// A handler may still be letting its stream go as Shutdown
			// returns.
			m := f.srv.memory()
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				m.out.mu.Lock()
				used := m.out.used
				m.out.mu.Unlock()
				if used == 0 {
					break
				}
				if time.Now().After(end) {
					t.Errorf("%d bytes still counted out 5s after every session ended; want 0", used)
					break
				}
			}
			if !m.in.TryAcquire(int64(m.out.max)) {
				t.Errorf("bodies still counted in once every session ended; want none")
			}
		})
	}
}

// TestAnswerUnderPressure: a client waiting for its answer gets it even
// when the lines the child writes right after it pass the session's
// bound: an answer of 60 KiB, then notifications of 60 KiB that no
// stream reads (with no call in flight, the standalone stream's, which
// no GET reads), against 128 KiB a session. The front lets the
// notifications go, never the answer of a client still connected,
// whether it takes SSE or JSON, and before or after its handler began
// writing it.
func TestAnswerUnderPressure(t *testing.T) {
	const size = 60 << 10
	f, _ := newFloodFront(t, Config{MaxFrame: 64 << 10, WriteTimeout: 5 * time.Second, Logf: t.Logf})
	sid := f.initialize(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		accept string
		notes  int
	}{
		{"SSE, one note", "application/json, text/event-stream", 1},
		{"SSE, three notes", "application/json, text/event-stream", 3},
		{"JSON, one note", "application/json", 1},
		{"JSON, three notes", "application/json", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 20 {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big","params":{"n":%d,"size":%d}}`, round, tc.notes, size)
				resp := f.do(t, ctx, "POST", sid, body, "Accept: "+tc.accept)
				var got []string
				if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					got = datas(readEvents(t, resp.Body))
				} else {
					b, _ := io.ReadAll(resp.Body)
					got = []string{string(b)}
				}
				resp.Body.Close()
				// A notification the child wrote after the last round's
				// answer may reach this stream (the call in flight when
				// it is routed): the answer is the stream's last event.
				prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"pad":"xxx`, round)
				if n := len(got); resp.StatusCode != 200 || n == 0 || len(got[n-1]) != size || !strings.HasPrefix(got[n-1], prefix) {
					short := got
					for i := range short {
						short[i] = short[i][:min(len(short[i]), 80)]
					}
					t.Fatalf("round %d: POST %.60s… = %d %q; want 200 and its answer of %d bytes", round, body, resp.StatusCode, short, size)
				}
			}
		})
	}
}
