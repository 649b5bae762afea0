package relay_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/relay"
)

// seenGate allows every call and keeps a copy of what each Decide saw.
type seenGate struct{ seen []gate.Call }

func (g *seenGate) Begin(time.Time) gate.FrameDecider { return g }
func (g *seenGate) Set() string                       { return "sha256:seen" }
func (g *seenGate) Commit()                           {}
func (g *seenGate) Decide(c *gate.Call) gate.Decision {
	cp := *c
	cp.Tool, cp.Args = bytes.Clone(c.Tool), bytes.Clone(c.Args)
	cp.Caller = &gate.Caller{}
	*cp.Caller = *c.Caller
	g.seen = append(g.seen, cp)
	return gate.Decision{Verdict: gate.Allowed}
}

// TestCallView: a decider sees each well-formed call's tool, its
// arguments as the line carries them, whether decoders read their text
// alike, and the session's caller; calls whose arguments member is
// ambiguous are refused without reaching it.
func TestCallView(t *testing.T) {
	caller := gate.Caller{Transport: "http", Peer: "192.0.2.1:5000", Principal: "token:0123456789abcdef"}
	const pre = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read",`
	tests := []struct {
		name    string
		line    string
		want    []gate.Call // nil Caller: the session's
		refused bool
	}{
		{"arguments", pre + `"arguments": {"path" : "/etc/hosts"}}}`, []gate.Call{{Tool: []byte("read"), Args: []byte(`{"path" : "/etc/hosts"}`), HasArgs: true}}, false},
		{"no arguments", pre + `"x":1}}`, []gate.Call{{Tool: []byte("read")}}, false},
		{"unclear text", pre + `"arguments":{"path":"/etc/passwd\u0000.txt"}}}`, []gate.Call{{Tool: []byte("read"), Args: []byte(`{"path":"/etc/passwd\u0000.txt"}`), HasArgs: true, ArgsUnclear: true}}, false},
		{"batch", `[` + pre + `"arguments":[1]}},{"id":2,"method":"tools/call","params":{"name":"w","arguments":{}}}]`,
			[]gate.Call{{Tool: []byte("read"), Args: []byte(`[1]`), HasArgs: true}, {Tool: []byte("w"), Args: []byte(`{}`), HasArgs: true}}, false},
		{"duplicate arguments", pre + `"arguments":{"path":"/tmp/x"},"arguments":{"path":"/etc/shadow"}}}`, nil, true},
		{"case-variant arguments", pre + `"Arguments":{"path":"/etc/shadow"}}}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, _ := testJournal(t)
			g := &seenGate{}
			var child, client bytes.Buffer
			r := relay.New(relay.Config{Journal: j, Gate: g, Client: &client, Caller: caller})
			if err := r.Upstream(strings.NewReader(tt.line+"\n"), &child); err != nil {
				t.Fatalf("Upstream = %v", err)
			}
			if len(g.seen) != len(tt.want) {
				t.Fatalf("Upstream(%q): %d calls decided; want %d", tt.line, len(g.seen), len(tt.want))
			}
			for i, got := range g.seen {
				w := tt.want[i]
				if string(got.Tool) != string(w.Tool) || string(got.Args) != string(w.Args) || got.HasArgs != w.HasArgs ||
					got.ArgsUnclear != w.ArgsUnclear || *got.Caller != caller {
					t.Errorf("Decide(call %d of %q) saw %+v args %q caller %+v; want %+v args %q caller %+v",
						i, tt.line, got, got.Args, *got.Caller, w, w.Args, caller)
				}
			}
			if refused := child.Len() == 0; refused != tt.refused {
				t.Errorf("Upstream(%q): child got %q; want refused %v", tt.line, child.String(), tt.refused)
			}
		})
	}
}

// blockingGate's Decide waits until the child's answer reached the client,
// as a decider waiting on something slow would: the other pump must move
// meanwhile.
type blockingGate struct {
	deciding chan<- struct{} // closed when Decide begins
	answered <-chan struct{}
	waited   bool // Decide saw the answer arrive
}

func (g *blockingGate) Begin(time.Time) gate.FrameDecider { return g }
func (g *blockingGate) Set() string                       { return "sha256:blocking" }
func (g *blockingGate) Commit()                           {}
func (g *blockingGate) Decide(*gate.Call) gate.Decision {
	close(g.deciding)
	select {
	case <-g.answered:
		g.waited = true
	case <-time.After(5 * time.Second):
	}
	return gate.Decision{Verdict: gate.Allowed}
}

// signalWriter closes done at its first write.
type signalWriter struct {
	buf  bytes.Buffer
	done chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		close(w.done)
	}
	return w.buf.Write(p)
}

// TestDecideUnlocked: the child's answers reach the client while a call
// is being decided. A decider that takes its time (an approval, a slow
// rule) must not stall the other direction of the session.
func TestDecideUnlocked(t *testing.T) {
	j, _ := testJournal(t)
	client := &signalWriter{done: make(chan struct{})}
	deciding := make(chan struct{})
	g := &blockingGate{deciding: deciding, answered: client.done}
	r := relay.New(relay.Config{Journal: j, Gate: g, Client: client})
	childOut, childW := io.Pipe()
	down := make(chan error, 1)
	go func() { down <- r.Downstream(childOut, client) }()

	upR, upW := io.Pipe()
	up := make(chan error, 1)
	go func() { up <- r.Upstream(upR, io.Discard) }()
	go io.WriteString(upW, tcall("1", "t")+"\n")
	// The child's notification, written once the call is being decided:
	// Downstream takes the relay's lock to record what it reads.
	<-deciding
	if _, err := io.WriteString(childW, `{"jsonrpc":"2.0","method":"notifications/progress"}`+"\n"); err != nil {
		t.Fatalf("write child: %v", err)
	}
	<-client.done
	upW.Close()
	if err := <-up; err != nil {
		t.Fatalf("Upstream = %v", err)
	}
	childW.Close()
	if err := <-down; err != nil {
		t.Fatalf("Downstream = %v", err)
	}
	if !g.waited {
		t.Errorf("Decide waited 5 s without the child's line reaching the client; want it delivered while a call is decided")
	}
}
