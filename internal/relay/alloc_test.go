package relay

import (
	"crypto/ed25519"
	"crypto/sha256"
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestPlainCallAllocatesNothing: a tools/call and its answer, recorded
// the way the pumps record them (a 2026-07-28 call declaring its revision,
// answered with resultType complete, and a call of the older revision),
// allocate nothing once the relay's buffers are warm: the rounds, tasks
// and revisions the relay reads cost the common call nothing.
func TestPlainCallAllocatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("aegis alloc test"))
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"x"}, Durability: "none", PolicySet: "pass-through"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, call, answer string }{
		{"2025-11-25",
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n"},
		{"2026-07-28",
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"hello"}]}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Config{Journal: j})
			var up upstream
			var down downstream
			call, answer := []byte(tc.call), []byte(tc.answer)
			failed := error(nil)
			n := testing.AllocsPerRun(1000, func() {
				last, k, err := r.recordRequests(call, &up)
				if err == nil {
					err = r.release(k, last, journal.BeforeRequest, up.calls, 0)
				}
				if err == nil {
					last, k, err = r.recordResponses(answer, &down)
				}
				if err == nil {
					err = r.release(k, last, journal.BeforeResponse, nil, k)
				}
				if err != nil && failed == nil {
					failed = err
				}
			})
			if failed != nil {
				t.Fatal(failed)
			}
			if c := r.Counts(); c.Outcomes != c.Intents || c.Intents == 0 {
				t.Fatalf("counts %+v; want every call answered", c)
			}
			if n != 0 {
				t.Errorf("a recorded call and its answer allocate %v times; want 0", n)
			}
		})
	}
}

// BenchmarkRecordCall is the relay's own work for a plain tools/call and
// its answer, without pipes or goroutines: both lines classified,
// recorded (journal at level none) and released. On both revisions' plain
// lines, for comparing builds:
//
//	go test -run XXX -bench RecordCall -count 10 ./internal/relay/
func BenchmarkRecordCall(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("aegis bench"))
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	for _, tc := range []struct{ name, call, answer string }{
		{"2025-11-25",
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}` + "\n"},
		{"2026-07-28",
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"hello"}]}}` + "\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := New(Config{Journal: j})
			var up upstream
			var down downstream
			call, answer := []byte(tc.call), []byte(tc.answer)
			b.ReportAllocs()
			for b.Loop() {
				last, k, err := r.recordRequests(call, &up)
				if err == nil {
					err = r.release(k, last, journal.BeforeRequest, up.calls, 0)
				}
				if err == nil {
					last, k, err = r.recordResponses(answer, &down)
				}
				if err == nil {
					err = r.release(k, last, journal.BeforeResponse, nil, k)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
