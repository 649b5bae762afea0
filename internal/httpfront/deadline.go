package httpfront

import (
	"errors"
	"os"
	"sync"
	"time"
)

// deadline is one direction's deadline of a client's connection, moved
// as net/http and the front ask but given to the connection only when
// it must be: net/http moves a connection's read deadline several times
// a request (idle, headers, whole request, its background read), and
// the front its write deadline for each write and back, and each move
// of a connection's deadline is a timer the runtime moves, one that may
// wake the thread in the network poller. A deadline later than the one
// the connection has waits: the connection keeps the earlier one, and
// when that expires first, the read or write it ends is taken up again
// under the deadline asked for (deadlines of a net.Conn end a read or
// write without losing what it did). An earlier one is given at once.
// So every read and write ends no later than the deadline asked for,
// and no earlier, and a connection that is used steadily moves its
// timers a few times a request, not every time it is asked.
type deadline struct {
	mu    sync.Mutex
	want  time.Time // the deadline asked for; zero: none
	armed time.Time // the connection's; zero: none
	set   func(time.Time) error
}

// ask sets the deadline to t.
func (d *deadline) ask(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.want = t
	if !t.IsZero() && (d.armed.IsZero() || t.Before(d.armed)) {
		return d.arm(t)
	}
	return nil
}

// arm gives the connection t. Called with mu held.
func (d *deadline) arm(t time.Time) error {
	if err := d.set(t); err != nil {
		return err
	}
	d.armed = t
	return nil
}

// ready gives the connection the deadline asked for when the one it has
// has passed and that one has not: a read or write is about to start,
// which would otherwise fail at once.
func (d *deadline) ready() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed.IsZero() || d.armed.Equal(d.want) {
		return
	}
	if now := time.Now(); !d.armed.After(now) && (d.want.IsZero() || d.want.After(now)) {
		d.arm(d.want)
	}
}

// early reports whether err is the connection's deadline ending a read
// or write before the deadline asked for; if so, it gives the
// connection the one asked for, and the caller takes the read or write
// up again.
func (d *deadline) early(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.want.IsZero() && !d.want.After(time.Now()) {
		return false // the deadline asked for has passed
	}
	return d.arm(d.want) == nil
}

// Read reads with the read deadline asked for (SetReadDeadline).
func (c *limitedConn) Read(p []byte) (int, error) {
	for {
		c.rd.ready()
		n, err := c.Conn.Read(p)
		if n == 0 && err != nil && c.rd.early(err) {
			continue
		}
		return n, err
	}
}

// Write writes with the write deadline asked for (SetWriteDeadline).
func (c *limitedConn) Write(p []byte) (int, error) {
	done := 0
	for {
		c.wd.ready()
		n, err := c.Conn.Write(p[done:])
		done += n
		if err != nil && done < len(p) && c.wd.early(err) {
			continue
		}
		return done, err
	}
}

func (c *limitedConn) SetReadDeadline(t time.Time) error  { return c.rd.ask(t) }
func (c *limitedConn) SetWriteDeadline(t time.Time) error { return c.wd.ask(t) }

func (c *limitedConn) SetDeadline(t time.Time) error {
	return errors.Join(c.rd.ask(t), c.wd.ask(t))
}
