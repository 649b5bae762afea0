package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCRelay builds the C floor relay as the harness does and drives it as
// a client does: what it relays must be byte for byte what was sent, both
// ways at once, over pipes and socketpairs, and its exit status the
// child's. Without gcc the harness must say why instead.
func TestCRelay(t *testing.T) {
	h := &harness{work: t.TempDir(), cfg: Config{Progress: io.Discard}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bin := h.buildCRelay(ctx)
	if _, err := exec.LookPath("gcc"); err != nil {
		if bin != "" || !strings.Contains(h.crelayMissing, "gcc") {
			t.Fatalf("buildCRelay without gcc = %q, missing %q; want no binary and the reason", bin, h.crelayMissing)
		}
		return
	}
	if bin == "" {
		t.Fatalf("buildCRelay: %s", h.crelayMissing)
	}

	// More than the pipes and socket buffers hold, so that the relay must
	// wait for its reader in both directions while cat writes back.
	in := make([]byte, 4<<20)
	rand.Read(in)
	for _, tr := range []Transport{Pipes, Socketpairs} {
		t.Run(string(tr), func(t *testing.T) {
			p, err := startProc(ctx, "crelay", tr, []string{bin, "cat"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			werr := make(chan error, 1)
			go func() {
				_, err := p.w.Write(in)
				werr <- err
				p.w.Close()
			}()
			out, err := io.ReadAll(p.r)
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("read: %v", err)
			}
			if err := <-werr; err != nil {
				t.Fatalf("write: %v", err)
			}
			if err := p.cmd.Wait(); err != nil {
				t.Fatalf("crelay cat: %v; want exit 0", err)
			}
			if !bytes.Equal(out, in) {
				t.Errorf("crelay cat relayed %d bytes, equal = false; want the %d bytes sent", len(out), len(in))
			}
		})
	}

	for _, tc := range []struct {
		name string
		argv []string
		want int
	}{
		{"exit 3", []string{"sh", "-c", "exit 3"}, 3},
		{"killed", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"no such program", []string{"/nonexistent/crelay-child"}, 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, bin, tc.argv...)
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.want {
				t.Errorf("crelay %q: %v; want exit status %d", tc.argv, err, tc.want)
			}
		})
	}
}
