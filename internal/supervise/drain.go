package supervise

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// drainReader is the read end of the child's stdout, as Downstream reads
// it. Once the child has exited, its output has a grace period to reach
// its end (a grandchild holding the pipe open, or writing on, must not
// hold the session forever); when it does not, the pipe is cut. A cut
// drops nothing the child wrote before it: what the pipe holds then, and
// what the relay read and still holds (a last frame without its newline),
// is relayed as at the child's own EOF; only what is written after the
// cut is not read. Closing the pipe instead would drop both, which a
// client reading slowly, or a journal syncing slowly, leaves there.
type drainReader struct {
	*os.File
	mu     sync.Mutex
	isCut  atomic.Bool
	woken  bool // the reader has cleared the deadline cut set
	budget int  // bytes the cut may still read: what the pipe held at most
}

// cut ends the pipe's reading at what it holds now, waking a read that
// waits for more. Where the pipe cannot take a deadline, it is closed.
func (d *drainReader) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.isCut.Store(true)
	if err := d.File.SetReadDeadline(time.Now()); err != nil {
		d.File.Close()
	}
}

func (d *drainReader) Read(p []byte) (int, error) {
	if !d.isCut.Load() {
		n, err := d.File.Read(p)
		if err == nil || !d.isCut.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
	return d.readCut(p)
}

// readCut reads what the pipe holds without waiting for more, at most
// its capacity in all, then reports io.EOF.
func (d *drainReader) readCut(p []byte) (int, error) {
	d.mu.Lock()
	if !d.woken {
		d.woken = true
		d.File.SetReadDeadline(time.Time{})
		d.budget = pipeCapacity(d.File)
	}
	d.mu.Unlock()
	if d.budget <= 0 || len(p) == 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), d.budget)]
	rc, err := d.File.SyscallConn()
	if err != nil {
		return 0, io.EOF
	}
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, rerr = unix.Read(int(fd), p)
		return true // never wait: what is not there now is after the cut
	}); err != nil {
		return 0, io.EOF // closed where no deadline could be set
	}
	switch {
	case n > 0:
		d.budget -= n
		return n, nil
	case rerr == nil || errors.Is(rerr, unix.EAGAIN):
		return 0, io.EOF // the pipe's end, or nothing more now
	}
	return 0, rerr
}
