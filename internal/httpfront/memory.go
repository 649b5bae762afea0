package httpfront

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// The front's memory (package documentation, "Memory"). Bytes held for
// clients are counted in two directions, each bounded per session
// (Config.SessionBuffer) and for the server (Config.Buffer):
//
//   - in: POST bodies, from before they are read until their line has
//     been taken by the session's relay. A body waits for its bytes
//     (FIFO, all at once) before it is read: the client is held back,
//     not buffered;
//   - out: the events the child's lines became, from when they are
//     routed until their stream lets them go (sent and beyond replay,
//     or dropped). See session.room for what happens at the bound.
type memory struct {
	once    sync.Once
	session int                 // per session, each direction
	in      *semaphore.Weighted // POST bodies, every session
	out     *budget             // events, every session
}

// memory returns the server's account, made on first use from s.cfg.
func (s *Server) memory() *memory {
	m := &s.mem
	m.once.Do(func() {
		sess, total := s.cfg.buffers()
		m.session = sess
		m.in = semaphore.NewWeighted(int64(total))
		m.out = &budget{max: total, wake: make(chan struct{})}
	})
	return m
}

// buffers returns Config.SessionBuffer and Config.Buffer with their
// defaults (2 and 4 times MaxFrame); each holds one largest body or event
// at least, since a frame up to MaxFrame must pass.
func (c *Config) buffers() (session, total int) {
	session, total = c.SessionBuffer, c.Buffer
	if session <= 0 {
		session = 2 * c.MaxFrame
	}
	session = max(session, c.MaxFrame+1)
	if total <= 0 {
		total = 4 * c.MaxFrame
	}
	return session, max(total, session)
}

// budget counts bytes against a bound; a waiter watches wake, which is
// closed (and replaced) whenever bytes are given back while it has been
// handed to a waiter (waited). Goroutine-safe.
type budget struct {
	mu     sync.Mutex
	used   int
	max    int
	wake   chan struct{}
	waited bool
}

// take counts n bytes if they fit, and reports whether they did.
func (b *budget) take(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// give gives back n bytes and wakes the waiters.
func (b *budget) give(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.waited {
		close(b.wake)
		b.wake, b.waited = make(chan struct{}), false
	}
	b.mu.Unlock()
}

// waiter is closed at the next give.
func (b *budget) waiter() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waited = true
	return b.wake
}

// Errors of readBody.
var (
	errTooLong  = errors.New("httpfront: body longer than the maximum frame")
	errReadBody = errors.New("httpfront: cannot read the body")
	errGone     = errors.New("httpfront: the client went away while its body waited")
)

// body is a POST body read under the in budget: its bytes stay counted
// until release.
type body struct {
	b       []byte
	n       int64               // counted
	session *semaphore.Weighted // nil: none counted there
	server  *semaphore.Weighted
}

// release gives the body's count back; its bytes must no longer be used.
// Safe to call more than once.
func (b *body) release() {
	if b.n == 0 {
		return
	}
	if b.session != nil {
		b.session.Release(b.n)
	}
	b.server.Release(b.n)
	b.n, b.b = 0, nil
}

// readBody reads r's body once its bytes are counted against session's
// in budget (when it names one: an initialize has no session yet) and the
// server's. The count is the Content-Length, or the longest body allowed
// (MaxFrame+1: a line of MaxFrame-1 bytes and "\r\n") when the client did
// not say. A longer body is errTooLong, read no further. The returned
// buffer has room for the '\n' the line is written with.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, ss *session) (*body, error) {
	limit := int64(s.cfg.MaxFrame) + 1
	n := limit
	if r.ContentLength >= 0 {
		if r.ContentLength > limit {
			return nil, errTooLong
		}
		n = max(r.ContentLength, 1)
	}
	m := s.memory()
	bd := &body{server: m.in}
	ctx := r.Context()
	if ss != nil {
		if err := ss.in.Acquire(ctx, n); err != nil {
			return nil, errGone
		}
		bd.session = ss.in
	}
	if err := m.in.Acquire(ctx, n); err != nil {
		if ss != nil {
			ss.in.Release(n)
		}
		return nil, errGone
	}
	bd.n = n
	// A body of a length told is read into one buffer; another grows as
	// it comes (never past its count), so that a client that says nothing
	// cannot make the front allocate the longest body for a short one.
	// One byte is always spare: the line's '\n' goes there, and a read
	// of one byte past the count tells a body too long.
	size := n + 2
	if r.ContentLength < 0 {
		size = min(n, 64<<10) + 2
	}
	buf := make([]byte, 0, size)
	src := http.MaxBytesReader(w, r.Body, limit)
	for {
		if cap(buf)-len(buf) < 2 {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), n+2))
			copy(grown, buf)
			buf = grown
		}
		k, err := src.Read(buf[len(buf) : cap(buf)-1])
		buf = buf[:len(buf)+k]
		if int64(len(buf)) > n {
			bd.release()
			return nil, errTooLong
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			bd.release()
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return nil, errTooLong
			}
			return nil, errReadBody
		}
	}
	bd.b = buf
	return bd, nil
}

// waitRoom waits until a or b is closed or the deadline passes.
func waitRoom(a, b <-chan struct{}, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-a:
	case <-b:
	case <-t.C:
	}
}
