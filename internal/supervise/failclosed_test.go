package supervise_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// tcall is a tools/call request line without its newline.
func tcall(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `"}}`
}

// failingJournal is a strict journal on the real filesystem, but for the
// failSync-th fdatasync of its records, which fails with EIO; its
// session_start (the first sync) is durable.
func failingJournal(t *testing.T, failSync int) *journal.Journal {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("aegis forward test"))
	j, err := journal.Open(path, journal.Options{
		Durability: journal.Durability{Level: journal.Strict},
		Key:        ed25519.NewKeyFromSeed(seed[:]),
		FS:         errorfs.Wrap(vfs.OS, errorfs.New(errorfs.Fail(errorfs.Nth(failSync, errorfs.Kind(errorfs.OpSync)), errorfs.EIO))),
	})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"sh"}, Durability: "strict", PolicySet: "pass-through"})
	if err == nil {
		err = j.Wait(seq, journal.BeforeResponse)
	}
	if err != nil {
		j.Close()
		t.Fatal(err)
	}
	return j
}

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
			j := failingJournal(t, tc.failSync)
			defer j.Close()
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
			s := &supervise.Session{
				Relay:   r,
				Journal: j,
				Argv:    []string{"sh", "-c", tc.child},
				Grace:   2 * time.Second,
				Stdin:   stdinR,
				Stdout:  outW,
				Stderr:  devnull,
			}
			done := make(chan supervise.Result, 1)
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
			var res supervise.Result
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

// TestCallTimeoutFailsClosed: when the timeout outcome cannot be synced,
// the client gets no timeout answer, and the session ends at once with
// exit 74, though the client keeps its stdin open and the child neither
// writes nor exits: both pumps are blocked in reads, and the failure
// reaches the session from the timer.
func TestCallTimeoutFailsClosed(t *testing.T) {
	// Syncs: 1 session_start, 2 the intent, 3 the timeout outcome.
	j := failingJournal(t, 3)
	defer j.Close()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinR.Close()
	defer stdinW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(outR); got <- b }()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	r := relay.New(relay.Config{Journal: j, Client: outW, CallTimeout: 100 * time.Millisecond})
	s := &supervise.Session{Relay: r, Journal: j, Argv: []string{"sh", "-c", "read -r l; exec sleep 30"},
		Grace: 2 * time.Second, Stdin: stdinR, Stdout: outW, Stderr: devnull}
	if _, err := io.WriteString(stdinW, tcall("1", "slow")+"\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := s.Run()
	outW.Close()
	if res.Exit != exitcode.AuditIO {
		t.Errorf("Run() exit = %d (%v); want %d", res.Exit, res.Err, exitcode.AuditIO)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the session took %v to end; want it ended at the failure", took)
	}
	stdinW.Close()
	if b := <-got; len(b) != 0 {
		t.Errorf("the client got %q; want nothing", b)
	}
}
