package witness

import (
	"crypto/ed25519"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/tlog"
)

// blackHole listens on loopback, accepts connections and never answers.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

// TestSubmitterUnreachable: with a witness that never answers and one
// whose port is closed, Start returns within Timeout, Offer never
// blocks (a burst of checkpoints is taken at once, the latest kept),
// failures are said at most once per LogEvery per witness, and Close
// returns within twice Timeout, having recorded both as unreachable and
// the quorum not met.
func TestSubmitterUnreachable(t *testing.T) {
	logKey, witKey, cp := goldenKeys(t)
	vkey, _ := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	w1, _ := New("http://"+blackHole(t), vkey)
	w2, _ := New("http://"+closed, vkey)
	var mu sync.Mutex
	var lines []string
	file := filepath.Join(t.TempDir(), "cp")
	const timeout = 300 * time.Millisecond
	s, err := NewSubmitter(Options{Witnesses: []Witness{w1, w2}, File: file, Key: logKey.Public().(ed25519.PublicKey),
		Timeout: timeout, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Interval: time.Millisecond,
		Logf: func(format string, args ...any) {
			mu.Lock()
			lines = append(lines, format)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := tlog.Signer(cp.Origin, logKey)
	note := func(c tlog.Checkpoint) []byte {
		n, err := tlog.Sign(c, ls)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	t0 := time.Now()
	if err := s.Start(note(cp), cp); err != nil {
		t.Fatalf("Start = %v; want nil (unreachable witnesses do not stop a session)", err)
	}
	if d := time.Since(t0); d > timeout+time.Second {
		t.Errorf("Start took %v; want about Timeout, %v", d, timeout)
	}
	notes := make([][]byte, 100)
	cps := make([]tlog.Checkpoint, 100)
	for i := range notes {
		cps[i] = cp
		cps[i].Size += uint64(i + 1)
		notes[i] = note(cps[i])
	}
	t0 = time.Now()
	for i := range notes {
		s.Offer(notes[i], cps[i])
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("100 Offers took %v; want them never to wait on a witness", d)
	}
	time.Sleep(50 * time.Millisecond) // failures and retries, with backoffs of a few ms
	t0 = time.Now()
	summary, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 2*timeout+time.Second {
		t.Errorf("Close took %v; want at most 2 × Timeout", d)
	}
	mu.Lock()
	n := len(lines)
	mu.Unlock()
	if n > 2 {
		t.Errorf("%d lines said during the session; want one per witness (LogEvery)", n)
	}
	state, err := os.ReadFile(file + StateExt)
	if err != nil {
		t.Fatal(err)
	}
	last := cp
	last.Size += 100
	for _, want := range []string{last.Body(), "state=unreachable cosigned=0 start=unreachable", "quorum 2 of 2: not met"} {
		if !strings.Contains(string(state), want) {
			t.Errorf("state file lacks %q:\n%s", want, state)
		}
	}
	if len(summary) != 3 || !strings.Contains(summary[2], "NOT witnessed") {
		t.Errorf("Close's lines = %q; want one per witness and the quorum not met", summary)
	}
}
