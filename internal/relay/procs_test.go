//go:build unix

package relay

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"golang.org/x/sys/unix"
)

// blockingPipe is a pipe whose ends are in blocking mode, as a client's
// stdin and stdout usually are (os.Pipe's are not: they are in the
// network poller).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestSpareProcs: a pump that reads (Upstream) or writes (Downstream) a
// blocking descriptor adds one scheduler slot, once per direction in a
// process; pollable pipes, readers that are not files and a GOMAXPROCS
// the user set add none.
func TestSpareProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	// up runs Upstream from src (its line written first, then closed) to
	// io.Discard; down runs Downstream from a reader of one line to dst.
	up := func(t *testing.T, src *os.File, w *os.File) {
		go func() { w.Write(line); w.Close() }()
		if err := newProcsRelay(t).Upstream(src, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	down := func(t *testing.T, dst io.Writer) {
		if err := newProcsRelay(t).Downstream(bytes.NewReader(line), dst); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		env  string
		run  func(t *testing.T)
		want int // slots added
	}{
		{"blocking stdin", "", func(t *testing.T) { r, w := blockingPipe(t); up(t, r, w) }, 1},
		{"blocking stdout", "", func(t *testing.T) { r, w := blockingPipe(t); go io.Copy(io.Discard, r); down(t, w) }, 1},
		{"both", "", func(t *testing.T) {
			r, w := blockingPipe(t)
			up(t, r, w)
			r2, w2 := blockingPipe(t)
			go io.Copy(io.Discard, r2)
			down(t, w2)
		}, 2},
		{"twice the same direction", "", func(t *testing.T) {
			r, w := blockingPipe(t)
			up(t, r, w)
			r2, w2 := blockingPipe(t)
			up(t, r2, w2)
		}, 1},
		{"pollable pipes", "", func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			up(t, r, w)
			r2, w2, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			defer w2.Close()
			go io.Copy(io.Discard, r2)
			down(t, w2)
		}, 0},
		{"not files", "", func(t *testing.T) {
			down(t, io.Discard)
			if err := newProcsRelay(t).Upstream(bytes.NewReader(line), io.Discard); err != nil {
				t.Fatal(err)
			}
		}, 0},
		{"GOMAXPROCS set by the user", "2", func(t *testing.T) {
			r, w := blockingPipe(t)
			up(t, r, w)
			r2, w2 := blockingPipe(t)
			go io.Copy(io.Discard, r2)
			down(t, w2)
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.env)
			procsMu.Lock()
			procsIn, procsTo = false, false
			procsMu.Unlock()
			runtime.GOMAXPROCS(2)
			tc.run(t)
			if got := runtime.GOMAXPROCS(0) - 2; got != tc.want {
				t.Errorf("slots added: %d; want %d", got, tc.want)
			}
		})
	}
}

func newProcsRelay(t *testing.T) *Relay {
	t.Helper()
	seed := sha256.Sum256([]byte("aegis procs test"))
	j, err := journal.Open(filepath.Join(t.TempDir(), "audit.jsonl"), journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return New(Config{Journal: j})
}
