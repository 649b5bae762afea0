package witness

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

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
	vkey, err := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	w1, err := New("http://"+blackHole(t), vkey)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := New("http://"+closed, vkey)
	if err != nil {
		t.Fatal(err)
	}
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
	ls, err := tlog.Signer(cp.Origin, logKey)
	check(t, err)
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

// TestSubmitterAsksAgain: a size a witness names in a 409 is its word,
// not authenticated. One larger than the log's checkpoint, said once, in
// the middle of a session or at Start, is said (state ahead) and then
// asked again at the next submission, never taken as the witness's state
// for the rest of the session; without Strict, Start returns at once
// whatever the witness says, and with it, Start returns ErrAhead.
func TestSubmitterAsksAgain(t *testing.T) {
	logKey, witKey, cp := goldenKeys(t)
	vkey, err := CosignatureKey("example.com/w", witKey.Public().(ed25519.PublicKey))
	check(t, err)
	signer, err := torchwood.NewCosignatureSigner("example.com/w", witKey)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := tlog.Signer(cp.Origin, logKey)
	check(t, err)
	// cp2 is another tree at cp's size, so that no proof (which would
	// read a log) is asked for.
	cp2 := cp
	cp2.Root = tlog.LeafHash([]byte("another root"))
	tests := []struct {
		name   string
		strict bool
		lie    int // the request answered with a 409 naming a larger size
		want   error
	}{
		{"a lie at Start", false, 0, nil},
		{"a lie at Start, Strict", true, 0, ErrAhead},
		{"a lie in the session", false, 1, nil},
		{"a lie in the session, Strict", true, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The witness cosigns whatever it is sent, but for one
			// request, and says what it cosigned.
			cosigned := make(chan string, 16)
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				body, _ := io.ReadAll(r.Body)
				_, msg, _ := bytes.Cut(body, []byte("\n\n"))
				text, _, _ := bytes.Cut(msg, []byte("\n\n"))
				if i == tt.lie {
					rw.WriteHeader(http.StatusConflict)
					io.WriteString(rw, "18446744073709551615\n")
					return
				}
				signed, err := note.Sign(&note.Note{Text: string(text) + "\n"}, signer)
				if err != nil {
					t.Error(err)
				}
				rw.Write(signed[len(text)+2:])
				cosigned <- string(text) + "\n"
			}))
			defer srv.Close()
			w, err := New(srv.URL, vkey)
			check(t, err)
			file := filepath.Join(t.TempDir(), "cp")
			var mu sync.Mutex
			var said []string
			s, err := NewSubmitter(Options{Witnesses: []Witness{w}, File: file, Key: logKey.Public().(ed25519.PublicKey),
				Timeout: 5 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Interval: time.Millisecond,
				Strict: tt.strict, Logf: func(format string, args ...any) {
					mu.Lock()
					said = append(said, fmt.Sprintf(format, args...))
					mu.Unlock()
				}})
			if err != nil {
				t.Fatal(err)
			}
			note1, err := tlog.Sign(cp, ls)
			check(t, err)
			if err := s.Start(note1, cp); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("Start = %v; want %v", err, tt.want)
			}
			if tt.want != nil {
				s.Abort()
				return
			}
			note2, err := tlog.Sign(cp2, ls)
			check(t, err)
			s.Offer(note2, cp2)
			// The witness cosigns cp2 only if it is asked again after
			// the lie.
			for done := false; !done; {
				select {
				case text := <-cosigned:
					done = text == cp2.Body()
				case <-time.After(10 * time.Second):
					t.Fatalf("the witness did not cosign the latest checkpoint in 10s (%d requests): it is not asked again after one 409 naming a larger size", n.Load())
				}
			}
			if _, err := s.Close(); err != nil {
				t.Fatal(err)
			}
			state, err := os.ReadFile(file + StateExt)
			check(t, err)
			if want := "state=ok cosigned=42"; !bytes.Contains(state, []byte(want)) {
				t.Errorf("state file:\n%s\nwant %q", state, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := strings.Join(said, "\n"); !strings.Contains(got, "says it holds 18446744073709551615") || !strings.Contains(got, "nothing authenticates") {
				t.Errorf("said:\n%s\nwant the 409's size, and that nothing authenticates it", got)
			}
		})
	}
}
