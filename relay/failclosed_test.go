package relay_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aegisrelay/aegis/exitcode"
	"github.com/aegisrelay/aegis/internal/faultfs"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/relay"
)

// TestSessionFailsClosedWhileReading: when the sync of a record fails,
// the session ends at once with exit 74 and nothing of the frame reaches
// the other side, though the client keeps its stdin open and sends nothing
// more (its pump is blocked in a read) and the child neither exits nor
// writes: a pump's forwarder that fails must end the pump, not wait for
// its next read. A lone call is waited for by the pump's reader itself;
// with a call in flight the run goes to the forwarder, and it is the
// forwarder's Wait that fails.
func TestSessionFailsClosedWhileReading(t *testing.T) {
	const (
		note   = `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`
		answer = `{"jsonrpc":"2.0","id":1,"result":{}}`
		// The child says it has call 1, then reads call 2 and answers 1.
		inFlight = `read -r a; printf '%s\n' '` + note + `'; read -r b; printf '%s\n' '` + answer + `'; exec sleep 30`
	)
	for _, tc := range []struct {
		name      string
		failSync  int // 1 is session_start's, 2 call 1's intent
		child     string
		second    bool // the client sends call 2 once it has the note
		wantFrom  int  // frames from the child
		wantNotes int  // lines the client gets
	}{
		{"lone intent", 2, `read -r l; exec sleep 30`, false, 0, 0},
		{"lone outcome", 3, `read -r l; printf '%s\n' '` + answer + `'; exec sleep 30`, false, 1, 0},
		{"intent in flight", 3, inFlight, true, 1, 1},
		{"outcome in flight", 4, inFlight, true, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			seed := sha256.Sum256([]byte("aegis forward test"))
			j, err := journal.Open(path, journal.Options{
				Durability: journal.Durability{Level: journal.Strict},
				Key:        ed25519.NewKeyFromSeed(seed[:]),
				// The real filesystem, but for the failSync-th fdatasync of
				// the records, which fails with EIO.
				FS: journal.OSFS{Fault: faultfs.New(faultfs.Fail(faultfs.Nth(tc.failSync, faultfs.Kind("sync")), faultfs.EIO)).Hook},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			seq, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"sh"}, Durability: "strict", PolicySet: "pass-through"})
			if err == nil {
				err = j.Wait(seq, journal.BeforeResponse)
			}
			if err != nil {
				t.Fatal(err)
			}
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdinR.Close()
			defer stdinW.Close() // only now: the client stays connected
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer outR.Close()
			lines := make(chan string, 10)
			go func() {
				defer close(lines)
				br := bufio.NewReader(outR)
				for {
					l, err := br.ReadString('\n')
					if err != nil {
						return
					}
					lines <- l
				}
			}()
			devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer devnull.Close()
			r := relay.New(relay.Config{Journal: j})
			s := &relay.Session{
				Relay:   r,
				Journal: j,
				Argv:    []string{"sh", "-c", tc.child},
				Grace:   2 * time.Second,
				Stdin:   stdinR,
				Stdout:  outW,
				Stderr:  devnull,
			}
			done := make(chan relay.Result, 1)
			go func() { done <- s.Run() }()
			var got []string
			send := func(id string) {
				t.Helper()
				if _, err := stdinW.WriteString(tcall(id, "echo") + "\n"); err != nil {
					t.Fatal(err)
				}
			}
			send("1")
			if tc.second {
				select {
				case l := <-lines:
					got = append(got, l)
				case <-time.After(20 * time.Second):
					t.Fatal("the child's note did not arrive")
				}
				send("2")
			}
			var res relay.Result
			select {
			case res = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the session did not end after the audit sync failed")
			}
			outW.Close()
			for l := range lines {
				got = append(got, l)
			}
			if res.Exit != exitcode.AuditIO || !errors.Is(res.Err, journal.ErrIO) {
				t.Errorf("Run() = exit %d, error %v; want %d, journal.ErrIO", res.Exit, res.Err, exitcode.AuditIO)
			}
			if len(got) != tc.wantNotes || len(got) == 1 && got[0] != note+"\n" {
				t.Errorf("the client got %q; want %d note(s) and no answer", got, tc.wantNotes)
			}
			if c := r.Counts(); c.FramesOut != uint64(tc.wantFrom) {
				t.Errorf("%d frames from the child; want %d", c.FramesOut, tc.wantFrom)
			}
		})
	}
}

// TestDownstreamClientGone: once a write to the client fails, Downstream
// writes nothing more but keeps reading and recording until the child's
// EOF, and then returns the write error.
func TestDownstreamClientGone(t *testing.T) {
	j, _ := testJournal(t)
	r := relay.New(relay.Config{Journal: j})
	var up strings.Builder
	for _, id := range []string{"1", "2", "3"} {
		up.WriteString(tcall(id, "echo") + "\n")
	}
	if err := r.Upstream(strings.NewReader(up.String()), io.Discard); err != nil {
		t.Fatal(err)
	}
	// One line a read: a run each, the first one recorded.
	down := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/progress"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n"
	gone := &failingWriter{err: syscall.EPIPE}
	err := r.Downstream(iotest.OneByteReader(strings.NewReader(down)), gone)
	if !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Downstream() = %v; want the write error (EPIPE)", err)
	}
	if gone.writes != 1 {
		t.Errorf("%d writes to the client; want 1, the one that failed", gone.writes)
	}
	if c := r.Counts(); c.Outcomes != 3 || c.FramesOut != 4 {
		t.Errorf("counts %+v; want 3 outcomes of 4 frames: recorded after the client was gone", c)
	}
}

// failingWriter fails every write with err.
type failingWriter struct {
	err    error
	writes int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	return 0, w.err
}
