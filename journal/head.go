package journal

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/journal/record"
)

// DefaultHeadEvery is how often the head file is replaced while records are
// written (Options.HeadEvery).
const DefaultHeadEvery = time.Second

// headWriter keeps Options.HeadFile: every HeadEvery, if records were
// written since, it makes the head durable in the log (a head file must
// never name a record that a power loss could take back) and replaces the
// file atomically: write FILE.tmp, fdatasync, rename over FILE, sync the
// directory. A failure fails the journal closed, like any audit I/O, but
// for a want of file descriptors (a PublishError): that is said, and the
// next replacement tries again.
type headWriter struct {
	j     *Journal
	fs    logFS
	path  string
	every time.Duration
	stop  chan struct{}
	done  chan struct{}

	last  record.Head // owned by the goroutine, then by close
	wrote bool
	pub   publisher
	buf   []byte
}

func newHeadWriter(j *Journal, opts Options, fsys logFS) (*headWriter, error) {
	if err := checkReplaceable(opts.HeadFile, "head file"); err != nil {
		return nil, err
	}
	every := opts.HeadEvery
	if every <= 0 {
		every = DefaultHeadEvery
	}
	h := &headWriter{j: j, fs: fsys, path: opts.HeadFile, every: every, stop: make(chan struct{}), done: make(chan struct{}),
		pub: publisher{what: "head file", logf: opts.Logf}}
	go h.run()
	return h, nil
}

func (h *headWriter) run() {
	defer close(h.done)
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			if err := h.pub.outcome(h.write()); err != nil {
				h.j.fail(err)
				return
			}
		}
	}
}

// close stops the ticker and writes the final head.
func (h *headWriter) close() error {
	close(h.stop)
	<-h.done
	if h.j.Err() != nil {
		return nil
	}
	return h.pub.outcome(h.write())
}

func (h *headWriter) write() error {
	head, ok, err := h.j.durableHead()
	if err != nil || !ok || h.wrote && head == h.last {
		return err
	}
	// Signed by the root key, which third parties pin: through an
	// ssh-agent, one round trip per head, on this goroutine. A root that
	// fails to sign (an agent gone) fails the journal as a failed write
	// does.
	if h.buf, err = record.SignHeadLine(h.buf[:0], head, h.j.now(), h.j.key); err != nil {
		return &IOError{Op: "sign head", Path: h.path, Err: err}
	}
	if err := replaceFile(h.fs, h.path, h.buf); err != nil {
		return err
	}
	h.last, h.wrote = head, true
	if h.j.cps != nil {
		h.j.cps.poke() // a checkpoint with every head
	}
	return nil
}

// checkReplaceable refuses, at Open, a file the journal replaces by
// rename (what: "head file", "checkpoint file") that cannot be: rename
// fails over a directory and would swap a FIFO or a device node for a
// file, and a folder that cannot be written would fail the journal
// closed a second into the session rather than now.
func checkReplaceable(path, what string) error {
	if err := regular.Check(path, nil); errors.Is(err, ErrNotRegular) {
		return fmt.Errorf("%w; a %s must be a regular file (or not exist yet)", err, what)
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &IOError{Op: what + ": directory not writable", Path: dir, Err: err}
	}
	return nil
}
