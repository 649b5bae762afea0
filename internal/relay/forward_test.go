package relay

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal"
)

// countingReader serves data, its first line alone, and counts what it
// has handed out; reaching notify bytes closes reached.
type countingReader struct {
	data    []byte
	handed  atomic.Int64
	notify  int64
	reached chan struct{}
}

func (c *countingReader) Read(p []byte) (int, error) {
	at := c.handed.Load()
	if at == int64(len(c.data)) {
		return 0, io.EOF
	}
	if at == 0 {
		p = p[:bytes.IndexByte(c.data, '\n')+1]
	}
	n := copy(p, c.data[at:])
	if c.handed.Add(int64(n)) >= c.notify && at < c.notify {
		close(c.reached)
	}
	return n, nil
}

// slowWriter is a destination that blocks its second write until the
// source has reached its mark and takes its time over every later one,
// noting how far the source got ahead of it.
type slowWriter struct {
	src      *countingReader
	writes   int
	received int64
	maxLag   int64
	blocked  bool  // the second write waited for the source (else timed out)
	ahead    int64 // what the source had handed out when it went on
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.writes++
	switch w.writes {
	case 1:
	case 2:
		select {
		case <-w.src.reached:
			w.blocked = true
		case <-time.After(10 * time.Second):
		}
		w.ahead = w.src.handed.Load()
	default:
		time.Sleep(200 * time.Microsecond) // a slow consumer, for the bound to bite
	}
	w.received += int64(len(p))
	w.maxLag = max(w.maxLag, w.src.handed.Load()-w.received)
	return len(p), nil
}

// TestPumpReadsOnWithinBound: with calls in flight, while the destination
// blocks a write, the pump goes on reading and recording, up to
// maxReadAhead bytes of copies (and what its Reader buffers) ahead of what
// was written, and no further; everything still arrives, in order.
func TestPumpReadsOnWithinBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("aegis forward test"))
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var data []byte
	for i := range 1500 { // ~6 MiB
		data = fmt.Appendf(data, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}`+"\n", i, strings.Repeat("y", 4000))
	}
	src := &countingReader{data: data, reached: make(chan struct{})}
	src.notify = maxReadAhead - 2*readSize
	dst := &slowWriter{src: src}
	r := New(Config{Journal: j})
	if err := r.Upstream(src, dst); err != nil {
		t.Fatal(err)
	}
	if dst.received != int64(len(src.data)) {
		t.Errorf("the destination got %d bytes; want %d", dst.received, len(src.data))
	}
	if !dst.blocked {
		t.Errorf("while a write blocked, the pump read %d bytes; want it to read on to %d", dst.ahead, src.notify)
	}
	if bound := int64(maxReadAhead + readSize); dst.maxLag > bound {
		t.Errorf("the pump read up to %d bytes ahead of the destination; want at most %d", dst.maxLag, bound)
	}
	if c := r.Counts(); c.Intents != 1500 {
		t.Errorf("%d intents; want 1500", c.Intents)
	}
}

// TestForwarderAllocatesNothing: handing a run to the forwarder and having
// it written allocates nothing once its buffers are warm.
func TestForwarderAllocatesNothing(t *testing.T) {
	written := make(chan struct{})
	fw := newForwarder(&Relay{}, func(*heldRun) error { written <- struct{}{}; return nil })
	done := make(chan error, 1)
	go func() { done <- fw.writeRuns() }()
	chunk := []byte(`{"jsonrpc":"2.0","method":"ping"}` + "\n")
	failed := false
	n := testing.AllocsPerRun(1000, func() {
		h := fw.stage(chunk)
		if h == nil {
			failed = true
			return
		}
		fw.publish()
		<-written
	})
	fw.finish(nil)
	close(fw.readerDone)
	if err := <-done; err != nil || failed {
		t.Fatalf("forwarder = %v, failed %v; want nil, false", err, failed)
	}
	if n != 0 {
		t.Errorf("a run through the forwarder allocates %v times; want 0", n)
	}
}
