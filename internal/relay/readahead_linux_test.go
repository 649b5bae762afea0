package relay_test

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestUpstreamReadsAhead: requests already waiting in the pipe when a run
// has been recorded are read and recorded before the pump waits, so that
// one commit group (one write, one signature) covers them all; the child
// still gets every byte, in order. Linux only: every request must be in
// the pipe before the pump reads, and only Linux lets a pipe grow
// (F_SETPIPE_SZ) to hold them all.
func TestUpstreamReadsAhead(t *testing.T) {
	j, path := testJournal(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	if _, err := unix.FcntlInt(pw.Fd(), unix.F_SETPIPE_SZ, 1<<20); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	const calls = 3000 // ~280 KiB: several 64 KiB reads
	for i := range calls {
		in.WriteString(tcall(strconv.Itoa(i), "read") + "\n")
	}
	if _, err := pw.Write(in.Bytes()); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var child bytes.Buffer
	r := relay.New(relay.Config{Journal: j})
	if err := r.Upstream(pr, &child); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(child.Bytes(), in.Bytes()) {
		t.Fatalf("the child got %d bytes, not the %d sent", child.Len(), in.Len())
	}
	intents, signed := 0, 0
	for _, rec := range records(t, j, path) {
		if rec.Kind == record.KindIntent {
			intents++
			if rec.Sig != nil {
				signed++
			}
		}
	}
	if intents != calls || signed != 1 {
		t.Errorf("%d intents in %d signed groups; want %d in 1 (read %d bytes ahead of the first wait)", intents, signed, calls, in.Len())
	}
}
