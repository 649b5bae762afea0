package httpfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeChild is a child in this process: it reads the session's lines and
// answers by method, as a stdio server would.
//
//	echo    answers with its params
//	notify  writes a notification first, then answers
//	ask     asks the client (roots/list, id "s1"), waits for the
//	        client's answer, then answers with it
//	hold    answers once release is closed, after a notification
//	quiet   answers once release is closed, writing nothing before
//	raw     writes params.line as a line of its own, then answers
//	progress writes a progress notification with the token params.of,
//	        then answers
//	emit    (a notification) writes a notification of its own
//	emitbig (a notification) writes one of 60 KiB
//	exit    ends the child without answering
type fakeChild struct {
	mu      sync.Mutex
	lines   [][]byte // every line read, '\n' included
	release chan struct{}
}

func (fc *fakeChild) run(c *Conn, done chan struct{}) {
	defer close(done)
	br := bufio.NewReader(c.In)
	var waiting json.RawMessage // the id of an ask waiting for the client
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			fc.mu.Lock()
			fc.lines = append(fc.lines, line)
			fc.mu.Unlock()
		}
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		answer := func(result string) {
			fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
		}
		switch m.Method {
		case "":
			if m.Result != nil && waiting != nil { // the client's answer to roots/list
				fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", waiting, m.Result)
				waiting = nil
			}
		case "echo":
			answer(string(m.Params))
		case "notify":
			fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"for":%s}}`+"\n", m.ID)
			answer(`{}`)
		case "ask":
			waiting = m.ID
			fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`+"\n")
		case "hold":
			fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":1}}`+"\n")
			go func(id json.RawMessage) {
				<-fc.release
				fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":2}}`+"\n")
				fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","id":%s,"result":{"held":true}}`+"\n", id)
			}(m.ID)
		case "quiet":
			go func(id json.RawMessage) {
				<-fc.release
				fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","id":%s,"result":{"quiet":true}}`+"\n", id)
			}(m.ID)
		case "raw":
			var p struct{ Line string }
			json.Unmarshal(m.Params, &p)
			io.WriteString(c.Out, p.Line+"\n")
			answer(`{}`)
		case "progress":
			var p struct{ Of string }
			json.Unmarshal(m.Params, &p)
			fmt.Fprintf(c.Out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%q,"progress":1}}`+"\n", p.Of)
			answer(`{}`)
		case "emitbig":
			io.WriteString(c.Out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+strings.Repeat("x", 60<<10)+`"}}`+"\n")
		case "emit":
			io.WriteString(c.Out, `{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}`+"\n")
		case "exit":
			return
		case "initialize":
			answer(`{"protocolVersion":"2025-11-25"}`)
		}
	}
}

// front is a Server on loopback with fake children.
type front struct {
	srv   *Server
	url   string
	child *fakeChild
}

func newFront(t *testing.T, cfg Config) *front {
	t.Helper()
	f := &front{child: &fakeChild{release: make(chan struct{})}}
	cfg.Start = func(c *Conn) (<-chan struct{}, error) {
		done := make(chan struct{})
		go f.child.run(c, done)
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
	f.srv, f.url = srv, "http://"+ln.Addr().String()+Path
	go srv.Serve(ln)
	t.Cleanup(srv.Shutdown)
	return f
}

func (f *front) do(t *testing.T, ctx context.Context, method, sid, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, f.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (f *front) initialize(t *testing.T) string {
	t.Helper()
	resp := f.do(t, context.Background(), "POST", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	readEvents(t, resp.Body)
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize = %d, session %q; want 200 and an id", resp.StatusCode, sid)
	}
	return sid
}

// sseEvent is one event as an SSE reader (the WHATWG algorithm, on bytes)
// dispatches it, or would store its id.
type sseEvent struct {
	id, data string
	hasData  bool
	retry    string
}

// readEvents reads SSE events from r until it ends: lines end at CR, LF
// or CRLF; data fields are joined with "\n"; one leading space of a
// value is dropped.
func readEvents(t testing.TB, r io.Reader) []sseEvent {
	t.Helper()
	body, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return parseEvents(body)
}

func parseEvents(body []byte) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	var data []string
	for {
		i := bytes.IndexAny(body, "\r\n")
		if i < 0 {
			return out // an unterminated last line is discarded
		}
		line := body[:i]
		if body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n' {
			i++
		}
		body = body[i+1:]
		if len(line) == 0 {
			if cur.hasData || cur.id != "" || cur.retry != "" {
				cur.data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
			continue
		}
		name, value, _ := strings.Cut(string(line), ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			cur.id = value
		case "data":
			data, cur.hasData = append(data, value), true
		case "retry":
			cur.retry = value
		}
	}
}

// datas are the data of the events that carry any: what a client
// dispatches as messages.
func datas(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		if e.data != "" {
			out = append(out, e.data)
		}
	}
	return out
}

// TestStreams: where each line the child writes goes, as a client sees it.
func TestStreams(t *testing.T) {
	f := newFront(t, Config{})
	sid := f.initialize(t)
	ctx := context.Background()

	// A notification written during a call goes on the call's stream,
	// before its answer, and nowhere else; the stream opens with a
	// priming event (an id, retry, no data) and ends after the answer.
	resp := f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":1,"method":"notify"}`)
	evs := readEvents(t, resp.Body)
	want := []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"for":1}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`}
	if got := datas(evs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notify's stream = %q; want %q", got, want)
	}
	if len(evs) == 0 || evs[0].id == "" || evs[0].hasData && evs[0].data != "" || evs[0].retry == "" {
		t.Errorf("first event %+v; want a priming event: an id, retry, empty data", evs)
	}
	ids := map[string]bool{}
	for _, e := range evs {
		if ids[e.id] {
			t.Errorf("event id %q twice on one stream", e.id)
		}
		ids[e.id] = true
	}

	// The server's request during a call: on the call's stream; the
	// client's answer (POST, 202) reaches the child, which then answers.
	resp = f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":2,"method":"ask"}`)
	br := bufio.NewReader(resp.Body)
	var asked string
	for asked == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("ask's stream ended before the server's request: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: "); ok {
			asked = d
		}
	}
	if asked != `{"jsonrpc":"2.0","id":"s1","method":"roots/list"}` {
		t.Fatalf("first message on ask's stream = %q; want the server's roots/list", asked)
	}
	r2 := f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}`)
	r2.Body.Close()
	if r2.StatusCode != http.StatusAccepted {
		t.Errorf("the client's answer = %d; want 202", r2.StatusCode)
	}
	if got := datas(readEvents(t, br)); len(got) != 1 || got[0] != `{"jsonrpc":"2.0","id":2,"result":{"roots":[]}}` {
		t.Errorf("ask's answer = %q; want the child's, with the client's roots", got)
	}
	resp.Body.Close()

	// With no call in flight, what the child writes goes to the
	// standalone stream, which one GET reads at a time.
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	get := f.do(t, gctx, "GET", sid, "", "Accept: text/event-stream")
	if get.StatusCode != 200 {
		t.Fatalf("GET = %d; want 200", get.StatusCode)
	}
	if again := f.do(t, ctx, "GET", sid, "", "Accept: text/event-stream"); again.StatusCode != http.StatusConflict {
		t.Errorf("a second GET = %d; want 409", again.StatusCode)
	}
	resp = f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":3,"method":"raw","params":{"line":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"}}`)
	if got := datas(readEvents(t, resp.Body)); len(got) != 2 {
		t.Errorf("raw's stream = %q; want the line and the answer (a call was in flight)", got)
	}
	// Now nothing is in flight: the next unsolicited line goes to GET.
	resp = f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","method":"emit"}`)
	resp.Body.Close()
	gr := bufio.NewReader(get.Body)
	for {
		line, err := gr.ReadString('\n')
		if err != nil {
			t.Fatalf("the GET stream ended before the child's notification: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: "); ok && d != "" {
			if d != `{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}` {
				t.Errorf("on the GET stream: %q; want the child's notification", d)
			}
			break
		}
	}
	cancel()
	get.Body.Close()
}

// TestResume: a client whose connection drops mid-call resumes the
// stream with GET and Last-Event-ID: it gets the events after that one,
// then the answer, each once; the disconnection cancelled nothing.
func TestResume(t *testing.T) {
	f := newFront(t, Config{})
	sid := f.initialize(t)
	ctx, cancel := context.WithCancel(context.Background())
	resp := f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":7,"method":"hold"}`)
	br := bufio.NewReader(resp.Body)
	var lastID string
	for got := 0; got < 2; { // the priming event and the first progress
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
			lastID = id
			got++
		}
	}
	cancel()
	resp.Body.Close()
	close(f.child.release)
	get := f.do(t, context.Background(), "GET", sid, "", "Accept: text/event-stream", "Last-Event-ID: "+lastID)
	if get.StatusCode != 200 {
		t.Fatalf("GET with Last-Event-ID %s = %d; want 200", lastID, get.StatusCode)
	}
	got := datas(readEvents(t, get.Body))
	want := []string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":2}}`, `{"jsonrpc":"2.0","id":7,"result":{"held":true}}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("resumed after %s: %q; want %q", lastID, got, want)
	}
	// Resuming again from the start of the stream replays what is kept.
	stream, _, _ := strings.Cut(lastID, "-")
	again := f.do(t, context.Background(), "GET", sid, "", "Accept: text/event-stream", "Last-Event-ID: "+stream+"-0")
	if got := datas(readEvents(t, again.Body)); len(got) != 3 {
		t.Errorf("resumed from %s-0: %q; want the three events of the stream", stream, got)
	}
	if bad := f.do(t, context.Background(), "GET", sid, "", "Accept: text/event-stream", "Last-Event-ID: 999-1"); bad.StatusCode != http.StatusNotFound {
		t.Errorf("GET with an unknown stream's Last-Event-ID = %d; want 404", bad.StatusCode)
	}
}

// TestSessionEnds: the cap on sessions, the idle timeout and a child that
// exits on its own each end or refuse a session with the transport's
// status.
func TestSessionEnds(t *testing.T) {
	f := newFront(t, Config{MaxSessions: 2, IdleTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	a := f.initialize(t)
	f.initialize(t)
	resp := f.do(t, ctx, "POST", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a third initialize with --max-sessions 2 = %d; want 503", resp.StatusCode)
	}
	// A child that exits: its session is gone.
	resp = f.do(t, ctx, "POST", a, `{"jsonrpc":"2.0","method":"exit"}`)
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for status := 0; status != http.StatusNotFound; {
		if time.Now().After(deadline) {
			t.Fatalf("session of an exited child still answers %d after 10s; want 404", status)
		}
		r := f.do(t, ctx, "POST", a, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
		readEvents(t, r.Body)
		status = r.StatusCode
	}
	// Idle sessions end: the other one goes within a few periods, and
	// new ones can start.
	for {
		f.srv.mu.Lock()
		n := len(f.srv.sessions)
		f.srv.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions left 10s after they went idle; want 0", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.initialize(t)
}

// TestJSONOnly: a client that takes only application/json gets the
// answer as the body, byte for byte the child's line.
func TestJSONOnly(t *testing.T) {
	f := newFront(t, Config{})
	sid := f.initialize(t)
	resp := f.do(t, context.Background(), "POST", sid, `{"jsonrpc":"2.0","id":"j","method":"echo","params":{"x": [1, 2.50]}}`, "Accept: application/json")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"jsonrpc":"2.0","id":"j","result":{"x": [1, 2.50]}}`; resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(body) != want {
		t.Errorf("JSON answer = %d %q %q; want 200 application/json %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
	}
}

// TestSlowClient: the standalone stream holds at most Config.Replay
// events that no GET has read; a client that opens it and reads nothing
// while the child writes loses the connection after Config.WriteTimeout,
// and the stream is free for the next GET (which would otherwise be 409).
func TestSlowClient(t *testing.T) {
	f := newFront(t, Config{Replay: 4, WriteTimeout: 200 * time.Millisecond})
	sid := f.initialize(t)
	ctx := context.Background()
	for range 10 {
		f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","method":"emit"}`).Body.Close()
	}
	// Each 202 comes once the child's stdin took the line: wait for the
	// child's ten lines to be routed.
	f.srv.mu.Lock()
	ss := f.srv.sessions[sid]
	f.srv.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		ss.mu.Lock()
		n := ss.get.next
		ss.mu.Unlock()
		if n == 11 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lines routed to the standalone stream after 10s; want 10", n-1)
		}
	}
	gctx, cancel := context.WithCancel(ctx)
	get := f.do(t, gctx, "GET", sid, "", "Accept: text/event-stream")
	br := bufio.NewReader(get.Body)
	var ids []string
	for len(ids) < 5 { // the priming event and the 4 events kept
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("GET stream: %v after %v", err, ids)
		}
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id: "); ok {
			ids = append(ids, id)
		}
	}
	if want := []string{"0-0", "0-7", "0-8", "0-9", "0-10"}; strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("the standalone stream gave %v; want %v: the priming event (nothing read yet), then the 4 kept", ids, want)
	}
	cancel()
	get.Body.Close()

	// Now a client that reads nothing while the child writes a lot.
	slow := f.do(t, ctx, "GET", sid, "", "Accept: text/event-stream")
	defer slow.Body.Close()
	for range 400 { // 24 MiB: more than loopback's socket buffers hold
		f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","method":"emitbig"}`).Body.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := f.do(t, ctx, "GET", sid, "", "Accept: text/event-stream")
		r.Body.Close()
		if r.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET still %d 10s after the slow client stopped reading; want its connection dropped and 200", r.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestProgressRouting: a progress notification goes to the stream of the
// request that asked for its token, even while a newer call is in
// flight (which gets the server's other messages).
func TestProgressRouting(t *testing.T) {
	f := newFront(t, Config{})
	sid := f.initialize(t)
	ctx := context.Background()
	a := f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":"a","method":"hold","params":{"_meta":{"progressToken":"tok-a"}}}`)
	ar := bufio.NewReader(a.Body)
	for { // hold's first notification: A's stream is open and in flight
		line, err := ar.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: {") {
			break
		}
	}
	b := f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":"b","method":"progress","params":{"of":"tok-a","_meta":{"progressToken":7}}}`)
	bData := datas(readEvents(t, b.Body))
	close(f.child.release)
	aData := datas(readEvents(t, ar))
	a.Body.Close()
	want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-a","progress":1}}`
	if len(bData) != 1 || strings.Contains(strings.Join(bData, "\n"), "tok-a") {
		t.Errorf("B's stream = %q; want only B's answer", bData)
	}
	if strings.Join(aData, "\n") != want+"\n"+`{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":2}}`+"\n"+`{"jsonrpc":"2.0","id":"a","result":{"held":true}}` {
		t.Errorf("A's stream after its first event = %q; want tok-a's progress, then its own", aData)
	}
}

// TestPrimingWhileWaiting: a call the child has not answered still gets
// its stream's priming event (the server's primer wakes its stream), each
// of several waiting at once, and then its answer once the child gives
// it; a call answered at once gets its priming event and answer together.
func TestPrimingWhileWaiting(t *testing.T) {
	f := newFront(t, Config{})
	sid := f.initialize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const waiting = 3
	var readers []*bufio.Reader
	for i := range waiting {
		resp := f.do(t, ctx, "POST", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"quiet"}`, 10+i))
		defer resp.Body.Close()
		readers = append(readers, bufio.NewReader(resp.Body))
	}
	// Nothing of the child's has come: each stream's first event is its
	// priming event, read while the child still holds every answer.
	for i, br := range readers {
		ev, err := br.ReadString('\n')
		for err == nil && !strings.HasSuffix(ev, "\n\n") {
			var more string
			more, err = br.ReadString('\n')
			ev += more
		}
		if err != nil || !strings.HasPrefix(ev, "id: ") || !strings.Contains(ev, "\nretry: ") || !strings.HasSuffix(ev, "\ndata: \n\n") {
			t.Fatalf("stream %d: first event %q, %v; want its priming event before the child answers", i, ev, err)
		}
	}
	close(f.child.release)
	for i, br := range readers {
		rest, err := io.ReadAll(br)
		want := fmt.Sprintf(`data: {"jsonrpc":"2.0","id":%d,"result":{"quiet":true}}`, 10+i)
		if err != nil || !strings.Contains(string(rest), want) {
			t.Errorf("stream %d after the release: %q, %v; want its answer", i, rest, err)
		}
	}
	resp := f.do(t, ctx, "POST", sid, `{"jsonrpc":"2.0","id":20,"method":"echo","params":{}}`)
	evs := readEvents(t, resp.Body)
	if len(evs) != 2 || evs[0].retry == "" || evs[1].data != `{"jsonrpc":"2.0","id":20,"result":{}}` {
		t.Errorf("an echo's stream = %+v; want its priming event and its answer", evs)
	}
}
