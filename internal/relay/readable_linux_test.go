package relay

import (
	"os"
	"testing"
)

// TestReadable: the probe a pump calls after every recorded run tells a
// pipe with bytes waiting from an empty one, and allocates nothing.
func TestReadable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	more := readable(r)
	if more == nil {
		t.Fatal("readable(pipe) = nil; want a probe")
	}
	if more() {
		t.Errorf("more() on an empty pipe = true; want false")
	}
	w.Write([]byte("x\n"))
	if !more() {
		t.Errorf("more() with 2 bytes waiting = false; want true")
	}
	if n := testing.AllocsPerRun(100, func() { more() }); n != 0 {
		t.Errorf("more() allocates %v times per call; want 0", n)
	}
}
