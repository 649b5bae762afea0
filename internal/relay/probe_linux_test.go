package relay

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aegisrelay/aegis/journal"
)

// probedPipe is a pipe's read end that counts the probes for waiting
// bytes (readable: Control on its descriptor).
type probedPipe struct {
	*os.File
	probes *atomic.Int64
}

func (p probedPipe) SyscallConn() (syscall.RawConn, error) {
	rc, err := p.File.SyscallConn()
	return countedConn{rc, p.probes}, err
}

type countedConn struct {
	syscall.RawConn
	n *atomic.Int64
}

func (c countedConn) Control(f func(fd uintptr)) error {
	c.n.Add(1)
	return c.RawConn.Control(f)
}

// chanWriter passes every write on.
type chanWriter chan []byte

func (w chanWriter) Write(p []byte) (int, error) { w <- append([]byte(nil), p...); return len(p), nil }

// TestLoneCallProbe: a lone recorded line (a tools/call notification,
// nothing in flight) is probed for bytes waiting behind it only where its
// run waits for an fdatasync (strict), whose group those bytes would
// share; at none, interval and reply (whose requests wait for a write
// only) the probe, a system call on every lone call's path, is not made.
// Every line still reaches the child, byte for byte, and is recorded.
func TestLoneCallProbe(t *testing.T) {
	const calls = 20
	for _, tc := range []struct {
		level journal.Level
		want  int64
	}{{journal.None, 0}, {journal.Interval, 0}, {journal.Reply, 0}, {journal.Strict, calls}} {
		t.Run(journal.Durability{Level: tc.level, Every: journal.DefaultInterval}.String(), func(t *testing.T) {
			seed := sha256.Sum256([]byte("aegis probe test"))
			j, err := journal.Open(filepath.Join(t.TempDir(), "audit.jsonl"), journal.Options{
				Durability: journal.Durability{Level: tc.level, Every: journal.DefaultInterval}, Key: ed25519.NewKeyFromSeed(seed[:])})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			var probes atomic.Int64
			got := make(chanWriter, 1)
			r := New(Config{Journal: j})
			done := make(chan error, 1)
			go func() { done <- r.Upstream(probedPipe{pr, &probes}, got) }()
			for i := range calls {
				line := fmt.Sprintf(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"n":%d}}}`+"\n", i)
				if _, err := pw.WriteString(line); err != nil {
					t.Fatal(err)
				}
				if b := <-got; string(b) != line {
					t.Fatalf("the child got %q; want %q", b, line)
				}
			}
			pw.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := probes.Load(); n != tc.want {
				t.Errorf("%d probes for %d lone calls; want %d", n, calls, tc.want)
			}
			if c := r.Counts(); c.Intents != calls {
				t.Errorf("%d intents; want %d", c.Intents, calls)
			}
		})
	}
}
