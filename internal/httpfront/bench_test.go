package httpfront

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// echoChild answers each request line with a fixed-shape response
// carrying the request's id token, as the benchmarks' child: it costs the
// same behind the front and behind the floor.
func echoChild(in io.Reader, out io.Writer) {
	br := bufio.NewReaderSize(in, 64<<10)
	resp := make([]byte, 0, 256)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		i := bytes.Index(line, []byte(`"id":`))
		if i < 0 {
			continue
		}
		j := i + 5 + bytes.IndexAny(line[i+5:], ",}")
		resp = append(resp[:0], `{"jsonrpc":"2.0","id":`...)
		resp = append(resp, line[i+5:j]...)
		resp = append(resp, `,"result":{"content":[{"type":"text","text":"hello"}]}}`+"\n"...)
		out.Write(resp)
	}
}

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`

// benchCallModern is benchCall as a 2026-07-28 client sends it: the
// revision and its capabilities in params._meta, no session.
const benchCallModern = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// floorHandler is the least a net/http front to a stdio child does: the
// body to the child's stdin as a line, one line back as the JSON body.
type floorHandler struct {
	mu  sync.Mutex
	in  io.Writer
	out *bufio.Reader
}

func (h *floorHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.in.Write(append(body, '\n'))
	line, _ := h.out.ReadSlice('\n')
	w.Header().Set("Content-Type", "application/json")
	w.Write(line[:len(line)-1])
	h.mu.Unlock()
}

// BenchmarkRoundTrip is one lock-step tools/call over HTTP on loopback
// and its answer, against an in-process child, with the client's
// connection kept alive: through the front (an SSE stream, as every SDK
// client takes it, or JSON; in a 2025-11-25 session, and as a stateless
// 2026-07-28 request with its headers) and through the floor
// (floorHandler), in the same run. The relay and journal are not in it: this is the front's own
// cost (cmd/aegis's benchmarks and bench/ measure wrap --listen whole).
func BenchmarkRoundTrip(b *testing.B) {
	serve := func(b *testing.B, h http.Handler) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		hs := &http.Server{Handler: h}
		go hs.Serve(ln)
		b.Cleanup(func() { hs.Close() })
		return "http://" + ln.Addr().String() + Path
	}
	run := func(b *testing.B, url, sid, accept string, modern bool) {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		body := []byte(benchCall)
		if modern {
			body = []byte(benchCallModern)
		}
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Accept", accept)
			req.Header.Set("Content-Type", "application/json")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
			}
			if modern {
				req.Header.Set("MCP-Protocol-Version", Modern)
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "echo")
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Contains(got, []byte(`"text":"hello"`)) {
				b.Fatalf("answer %q", got)
			}
		}
	}
	b.Run("floor", func(b *testing.B) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go echoChild(inR, outW)
		defer inW.Close()
		run(b, serve(b, &floorHandler{in: inW, out: bufio.NewReader(outR)}), "", "application/json", false)
	})
	front := func(b *testing.B, accept string, modern bool) {
		srv, err := New(Config{Start: func(c *Conn) (<-chan struct{}, error) {
			done := make(chan struct{})
			go func() { echoChild(c.In, c.Out); close(done) }()
			return done, nil
		}})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Shutdown()
		url := serve(b, srv)
		if modern {
			run(b, url, "", accept, true)
			return
		}
		req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`)))
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		run(b, url, resp.Header.Get("Mcp-Session-Id"), accept, false)
	}
	b.Run("front-sse", func(b *testing.B) { front(b, "application/json, text/event-stream", false) })
	b.Run("front-json", func(b *testing.B) { front(b, "application/json", false) })
	b.Run("front-2026-sse", func(b *testing.B) { front(b, "application/json, text/event-stream", true) })
	b.Run("front-2026-json", func(b *testing.B) { front(b, "application/json", true) })
}
