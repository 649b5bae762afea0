package relay_test

import (
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/aegisrelay/aegis/internal/relay"
)

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
