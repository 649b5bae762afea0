package relay_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/relay"
)

// TestRelayedCountsEveryByte relays, each way, a batch and a line longer
// than the pumps' read buffer (handed over whole, not copied), and checks
// that relay.Relayed grew in each direction by exactly the bytes the peer
// wrote, which are the bytes the other side received.
func TestRelayedCountsEveryByte(t *testing.T) {
	const long = 1 << 20
	tests := []struct {
		name       string
		up, answer string
	}{
		{"batch",
			`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n",
			`[{"jsonrpc":"2.0","id":1,"result":{"content":[]}},{"jsonrpc":"2.0","id":2,"result":{"content":[]}}]` + "\n"},
		{"long line",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("y", long) + `"}}}` + "\n",
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("z", long) + `"}]}}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := testJournal(t)
			r := relay.New(relay.Config{Journal: j})
			c0, s0 := relay.Relayed()
			var child, client bytes.Buffer
			if err := r.Upstream(strings.NewReader(tc.up), &child); err != nil {
				t.Fatalf("Upstream = %v", err)
			}
			if err := r.Downstream(strings.NewReader(tc.answer), &client); err != nil {
				t.Fatalf("Downstream = %v", err)
			}
			c1, s1 := relay.Relayed()
			if got, want := c1-c0, uint64(len(tc.up)); got != want || child.String() != tc.up {
				t.Errorf("client to server: counted %d bytes, relayed %d; want %d", got, child.Len(), want)
			}
			if got, want := s1-s0, uint64(len(tc.answer)); got != want || client.String() != tc.answer {
				t.Errorf("server to client: counted %d bytes, relayed %d; want %d", got, client.Len(), want)
			}
		})
	}
}
