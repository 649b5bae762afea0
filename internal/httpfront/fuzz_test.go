package httpfront

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/frame"
)

// mirrorChild records every line it reads and answers every request by
// its id token as sent; a request for method "fuzz" is first answered
// with next, the line under test, written as it is.
type mirrorChild struct {
	mu   sync.Mutex
	last []byte // the last line read, '\n' included
	next []byte // written, with '\n', before the answer to "fuzz"
}

func (mc *mirrorChild) run(c *Conn, done chan struct{}) {
	defer close(done)
	br := bufio.NewReaderSize(c.In, 1<<16)
	var cl frame.Classifier
	var f frame.Frame
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		mc.mu.Lock()
		mc.last = line
		next := mc.next
		mc.mu.Unlock()
		cl.Classify(line, &f)
		if f.Kind != frame.Single || len(f.Msgs) != 1 || f.Msgs[0].Type != frame.Request {
			continue
		}
		m := &f.Msgs[0]
		var out []byte
		if string(m.Method) == "fuzz" {
			out = append(append(out, next...), '\n')
		}
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		out = append(append(out, m.ID.Raw...), `,"result":{}}`+"\n"...)
		c.Out.Write(out)
	}
}

// FuzzHTTPBytes checks the byte-identity contract over HTTP (package
// documentation, "Bytes"), through a real Server on loopback:
//
//   - a POST body that Line takes and that is one JSON-RPC message reaches
//     the child as exactly Line's line and a '\n';
//   - a line the child writes reaches the client as one SSE event whose
//     data, read as an SSE reader reads it, is the line without its line
//     ending, each CR inside it read as the "\n" that starts another
//     data field; it is the first event after the priming one, on the
//     stream of the request in flight, and on no other.
func FuzzHTTPBytes(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"h\u00e9"}}}`), []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`))
	f.Add([]byte(" {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"a\"} \r\n"), []byte("{\"a\":1}\r"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), []byte("not json at all \xff\x00"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1.0,"result":{}}`), []byte("{ \r \"id\" : 1 }"))
	f.Add([]byte("{\"id\":1,\n\"method\":\"x\"}"), []byte(`{"jsonrpc":"2.0","id":99,"result":{}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"x"}]`), []byte(": a comment?"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"x","ID":3}`), []byte("data: x"))

	mc := &mirrorChild{}
	srv, err := New(Config{MaxFrame: 1 << 20, Start: func(c *Conn) (<-chan struct{}, error) {
		done := make(chan struct{})
		go mc.run(c, done)
		return done, nil
	}})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown()
	url := "http://" + ln.Addr().String() + Path
	post := func(t testing.TB, sid string, body []byte) *http.Response {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %q: %v", body, err)
		}
		return resp
	}
	init := post(f, "", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`))
	sid := init.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, init.Body)
	init.Body.Close()
	if sid == "" {
		f.Fatal("no session")
	}
	var n int
	f.Fuzz(func(t *testing.T, body, childLine []byte) {
		// Client to child.
		mc.mu.Lock()
		mc.last = nil
		mc.mu.Unlock()
		resp := post(t, sid, body)
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatalf("body %q: reading the answer: %v", body, err)
		}
		resp.Body.Close()
		line, lerr := Line(body)
		var cl frame.Classifier
		var fr frame.Frame
		one := false
		if lerr == nil {
			cl.Classify(line, &fr)
			one = fr.Kind == frame.Single && len(fr.Msgs) == 1 && fr.Msgs[0].Type != frame.Invalid &&
				(fr.Msgs[0].Type != frame.Request || fr.Msgs[0].ID.Key != nil) && len(line) <= 1<<20
		}
		// A notification's or response's 202 comes once the child's stdin
		// took the line, maybe before the child has read it whole.
		mc.mu.Lock()
		got := mc.last
		for deadline := time.Now().Add(5 * time.Second); one && resp.StatusCode == 202 && got == nil && time.Now().Before(deadline); got = mc.last {
			mc.mu.Unlock()
			time.Sleep(time.Millisecond)
			mc.mu.Lock()
		}
		mc.mu.Unlock()
		switch {
		case one && (resp.StatusCode == 200 || resp.StatusCode == 202):
			if want := append(append([]byte{}, line...), '\n'); !bytes.Equal(got, want) {
				t.Fatalf("body %q reached the child as %q; want %q", body, got, want)
			}
		case one:
			t.Fatalf("body %q, one message, answered %d", body, resp.StatusCode)
		case resp.StatusCode < 400 || got != nil:
			t.Fatalf("body %q (Line: %v) answered %d, child read %q; want refused, nothing read", body, lerr, resp.StatusCode, got)
		}

		// Child to client.
		if bytes.IndexByte(childLine, '\n') >= 0 || len(childLine) > 1<<19 {
			return
		}
		mc.mu.Lock()
		mc.next = childLine
		mc.mu.Unlock()
		n++
		id := strconv.Itoa(1_000_000 + n)
		resp = post(t, sid, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"fuzz"}`))
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("fuzz request: %d %v", resp.StatusCode, err)
		}
		evs := parseEvents(raw)
		payload := strings.ReplaceAll(strings.TrimSuffix(string(childLine), "\r"), "\r", "\n")
		if len(evs) < 2 || evs[0].data != "" || !evs[1].hasData || evs[1].data != payload {
			t.Fatalf("child line %q came back as %q (events %+v); want one event with data %q after the priming one", childLine, raw, evs, payload)
		}
		seen := map[string]bool{}
		for _, e := range evs {
			if seen[e.id] {
				t.Fatalf("event id %s twice in %q", e.id, raw)
			}
			seen[e.id] = true
		}
	})
}
