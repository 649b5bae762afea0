package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// pinHTTP is a client of aegis wrap --listen for the pinning tests: a
// 2025-11-25 session (initialize, then Mcp-Session-Id), or 2026-07-28
// stateless requests (each with its _meta and Mcp-Method, Mcp-Name).
type pinHTTP struct {
	l   *listener
	rev string
	sid string
	id  int
}

func (c *pinHTTP) open(t *testing.T) {
	t.Helper()
	if c.rev == "2025-11-25" {
		c.sid = c.l.initialize(t)
	}
}

// request posts method with params and returns its answer.
func (c *pinHTTP) request(t *testing.T, method string, params map[string]any) pinAnswer {
	t.Helper()
	c.id++
	if params == nil {
		params = map[string]any{}
	}
	var hdr []string
	if c.rev != "2025-11-25" {
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": c.rev, "io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "pin-listen", "version": "1"}}
		name, _ := params["name"].(string)
		hdr = modern(method, name)
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	resp := c.l.request(t, "POST", c.sid, string(b), hdr...)
	status := resp.StatusCode
	for _, p := range payloads(t, resp) {
		var m struct {
			ID *int `json:"id"`
			pinAnswer
		}
		if json.Unmarshal([]byte(p), &m) == nil && m.ID != nil && *m.ID == c.id {
			return m.pinAnswer
		}
	}
	t.Fatalf("%s: HTTP %d, no answer to id %d\n%s", method, status, c.id, c.l.errText())
	return pinAnswer{}
}

func (c *pinHTTP) call(t *testing.T, tool string) pinAnswer {
	t.Helper()
	return c.request(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "hi"}})
}

// waitErr waits until the wrap's stderr holds want, or fails the test
// after 20 seconds.
func (l *listener) waitErr(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(l.errText(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("wrap's stderr does not say %q:\n%s", want, l.errText())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPinListen: tool pinning through aegis wrap --listen, on a
// 2025-11-25 session and on 2026-07-28 stateless requests. A first
// listing pins echo and its call passes; the server then changes echo's
// description; under on_tool_change: block the next listing finds it
// changed and its call is refused TOOL_CHANGED (an HTTP 200 answer, the
// refusal frame), nothing reaching the child; aegis pin accept releases
// it while the wrap serves, and the log (the listener's session) says
// who accepted.
func TestPinListen(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			e := newPinEnv(t, "block")
			e.setTools(t, toolsV1)
			under := append([]string{"env"}, e.vars()...)
			l := e.f.listenUnder(t, under, []string{"--name", "toolsrv", "--policy", e.policy}, toolServer(t)...)

			c := &pinHTTP{l: l, rev: rev}
			c.open(t)
			c.request(t, "tools/list", nil)
			if a := c.call(t, "echo"); a.Error != nil {
				t.Fatalf("pinned echo: refused %q", refusedCode(a))
			}

			e.setTools(t, toolsV2)
			if rev == "2025-11-25" {
				c = &pinHTTP{l: l, rev: rev} // a session of its own, a child of its own
				c.open(t)
			}
			c.request(t, "tools/list", nil)
			a := c.call(t, "echo")
			if got := refusedCode(a); got != "TOOL_CHANGED" {
				t.Fatalf("changed echo: refusal %q (%+v); want TOOL_CHANGED", got, a)
			}
			if code, out := e.pinAegis(t, "pin", "accept", "toolsrv", "echo"); code != 0 {
				t.Fatalf("aegis pin accept = exit %d\n%s", code, out)
			}
			// The wrap says so once the acceptance is recorded and echo
			// released.
			l.waitErr(t, `tool "echo" of toolsrv accepted by`)
			if a := c.call(t, "echo"); a.Error != nil {
				t.Fatalf("accepted echo: refused %q", refusedCode(a))
			}
			if code := l.stop(t); code != 0 {
				t.Fatalf("wrap --listen exit %d\n%s", code, l.errText())
			}
			e.f.mustVerify(t, 0)

			var got []string
			refused, passed := 0, 0
			for _, r := range e.f.records(t) {
				switch b := r.Body.(type) {
				case *record.Tools:
					s := pins(b)
					if b.Event == record.ToolsAccept {
						s = fmt.Sprintf("accept %s uid=%v", b.Tool.String(), b.UID == uint64(os.Getuid()))
					}
					got = append(got, s)
				case *record.Intent:
					if b.Verdict == record.VerdictAllowed {
						passed++
					} else {
						refused++
					}
				}
			}
			want := []string{"echo:first", "echo:changed", "accept echo uid=true"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("tools records %q; want %q", got, want)
			}
			if refused != 1 || passed != 2 {
				t.Errorf("%d intents refused, %d passed; want 1, 2", refused, passed)
			}
		})
	}
}
