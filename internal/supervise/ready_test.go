package supervise_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestSessionReady: no byte moves either way before Session.Ready returns
// — not the client's call, not a line the child writes as it starts — and
// everything moves once it has; a Ready that fails ends the session as an
// audit failure, with nothing relayed.
func TestSessionReady(t *testing.T) {
	const hello = `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`
	for _, fail := range []bool{false, true} {
		name := map[bool]string{false: "released", true: "failed"}[fail]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			seed := sha256.Sum256([]byte("aegis ready test"))
			j, err := journal.Open(filepath.Join(dir, "audit.jsonl"), journal.Options{
				Durability: journal.Durability{Level: journal.Strict}, Key: ed25519.NewKeyFromSeed(seed[:]),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			seq, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"sh"}, Durability: "strict", PolicySet: "pass-through"})
			if err != nil {
				t.Fatal(err)
			}
			stdinR, stdinW, _ := os.Pipe()
			defer stdinR.Close()
			defer stdinW.Close()
			outR, outW, _ := os.Pipe()
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
			devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			defer devnull.Close()
			// The child says hello as it starts, then echoes what it reads
			// into a file: what reached it, and when.
			got := filepath.Join(dir, "got")
			release, started := make(chan error), make(chan struct{})
			r := relay.New(relay.Config{Journal: j})
			s := &supervise.Session{
				Relay: r, Journal: j, Grace: 2 * time.Second,
				Argv:  []string{"sh", "-c", `printf '%s\n' '` + hello + `'; while read -r l; do printf '%s\n' "$l" >> ` + got + `; done`},
				Stdin: stdinR, Stdout: outW, Stderr: devnull,
				Ready: func() error {
					close(started)
					if err := <-release; err != nil {
						return err
					}
					return j.Wait(seq, journal.BeforeRequest)
				},
			}
			done := make(chan supervise.Result, 1)
			go func() { done <- s.Run() }()
			<-started
			if _, err := stdinW.WriteString(tcall("1", "echo") + "\n"); err != nil {
				t.Fatal(err)
			}
			// Long enough for the child to start and say hello, and for a
			// pump that did not wait to relay either line.
			time.Sleep(300 * time.Millisecond)
			select {
			case l := <-lines:
				t.Fatalf("the client got %q before Ready returned", l)
			default:
			}
			if b, _ := os.ReadFile(got); len(b) > 0 {
				t.Fatalf("the child got %q before Ready returned", b)
			}
			if fail {
				release <- journal.ErrIO
			} else {
				release <- nil
			}
			if !fail {
				select {
				case l := <-lines:
					if l != hello+"\n" {
						t.Errorf("the client got %q; want the child's hello", l)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("nothing reached the client once Ready returned")
				}
				deadline := time.Now().Add(20 * time.Second)
				for b, _ := os.ReadFile(got); len(b) == 0 && time.Now().Before(deadline); b, _ = os.ReadFile(got) {
					time.Sleep(10 * time.Millisecond)
				}
				stdinW.Close()
			}
			var res supervise.Result
			select {
			case res = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the session did not end")
			}
			outW.Close()
			b, _ := os.ReadFile(got)
			if fail {
				if res.Exit != exitcode.AuditIO || !errors.Is(res.Err, journal.ErrIO) {
					t.Errorf("Run() = exit %d, %v; want %d, journal.ErrIO", res.Exit, res.Err, exitcode.AuditIO)
				}
				if len(b) > 0 {
					t.Errorf("the child got %q after a failed Ready", b)
				}
				for l := range lines {
					t.Errorf("the client got %q after a failed Ready", l)
				}
				return
			}
			if res.Exit != 0 || res.Err != nil {
				t.Errorf("Run() = exit %d, %v; want 0", res.Exit, res.Err)
			}
			if string(b) != tcall("1", "echo")+"\n" {
				t.Errorf("the child got %q; want the call", b)
			}
		})
	}
}
