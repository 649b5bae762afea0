package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/httpfront"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// ErrNotServed marks an HTTP that ended before it served: the log waits
// for no wind-down beyond its closing, and no session_end was written.
// The error HTTP returns then reads as its cause alone.
var ErrNotServed = errors.New("serve: not served")

// notServed is HTTP's error before it served: err, marked ErrNotServed.
type notServed struct{ err error }

func (e notServed) Error() string        { return e.err.Error() }
func (e notServed) Unwrap() error        { return e.err }
func (e notServed) Is(target error) bool { return target == ErrNotServed }

// HTTPOptions is what Config.HTTP serves with beside Config.
type HTTPOptions struct {
	// Listener is the socket bound (Listen); HTTP closes it, and removes
	// a unix socket's file at the end.
	Listener net.Listener
	// Front is httpfront's configuration; HTTP fills in Start, Logf and
	// MaxFrame.
	Front httpfront.Config
	// Start is the listener's session_start, appended at startSeq; each
	// MCP session's own session_start copies it with its peer and
	// principal.
	Start *record.SessionStart
	// Signals ends serving on SIGINT or SIGTERM (passed on to every
	// session's child); SIGHUP does not end it.
	Signals <-chan os.Signal
	// Serving, when set, is called once the log's session_start is
	// durable and the server is about to accept.
	Serving func()
}

// HTTP serves MCP Streamable HTTP on h.Listener, recording to j, whose
// listener session_start (h.Start) is at startSeq: each MCP session a
// child run as Stdio runs one, with its own session_start. It serves until
// SIGINT or SIGTERM, the listener failing, or the log failing; then it
// ends every session, and appends the listener's session_end. It returns
// wrap's exit status and the error that made it fail: one wrapping
// ErrNotServed when it stopped before serving (with the status to exit
// with), journal.ErrIO or another when the listener's session_end could
// not be written (the exit status is then exitcode.AuditIO's to give).
// The caller closes j.
func (c Config) HTTP(j *journal.Journal, startSeq uint64, h HTTPOptions) (code int, err error) {
	ln := h.Listener
	if err := j.Wait(startSeq, journal.BeforeRequest); err != nil {
		ln.Close()
		return exitcode.AuditIO, notServed{err}
	}
	cfg := h.Front
	cfg.MaxFrame, cfg.Logf = c.MaxFrame, c.Logf
	fatal := make(chan error, 1)
	live := &liveSessions{sigs: map[chan os.Signal]struct{}{}}
	cfg.Start = func(conn *httpfront.Conn) (<-chan struct{}, error) {
		return c.startSession(j, h.Start, conn, fatal, live)
	}
	srv, err := httpfront.New(cfg)
	if err != nil {
		ln.Close()
		return exitcode.Usage, notServed{err}
	}
	// The listener's relay records what concerns every session: the
	// policy's reloads (the gate is shared).
	lr := relay.New(relay.Config{Journal: j})
	stop := c.watch(lr)
	if h.Serving != nil {
		h.Serving()
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	reason, code := record.EndSignal, 0
	for done := false; !done; {
		select {
		case sig := <-h.Signals:
			if done = sig != syscall.SIGHUP; done {
				// Each session ends as a stdio wrap does on this signal:
				// its child gets it, and its session_end says signal,
				// not the client_eof that closing its stdin would record.
				live.signal(sig)
			}
		case err := <-served:
			c.Logf("serving stopped: %v", err)
			reason, code, done = record.EndChildExit, exitcode.CannotStart, true
		case err := <-fatal:
			c.Logf("audit log failed, nothing more is relayed: %v", err)
			reason, code, done = record.EndAuditIOError, exitcode.AuditIO, true
		}
	}
	srv.Shutdown()
	stop()
	if ln.Addr().Network() == "unix" {
		os.Remove(ln.Addr().String())
	}
	counts, err := lr.End(record.StatusUnanswered, "")
	if err == nil && code != exitcode.AuditIO {
		var seq uint64
		if seq, err = j.Append(&record.SessionEnd{Reason: reason, Counts: counts}); err == nil {
			err = j.Wait(seq, journal.BeforeResponse)
		}
	}
	return code, err
}

// startSession starts the child of one MCP session under a relay of its
// own, recording to its own handle on the log (journal.Session): its
// session_start (start's fields, and who asked), then whatever Stdio
// records. It returns once session_start is appended; done closes when
// the session has ended and its session_end is written.
func (c *Config) startSession(j *journal.Journal, start *record.SessionStart, conn *httpfront.Conn, fatal chan<- error, live *liveSessions) (<-chan struct{}, error) {
	var sid [16]byte
	if _, err := rand.Read(sid[:]); err != nil {
		return nil, err
	}
	h := j.Session(sid)
	ss := *start
	ss.Transport, ss.Peer, ss.Principal = record.TransportHTTP, conn.Peer, conn.Principal
	seq, err := h.Append(&ss)
	if err != nil {
		return nil, err
	}
	r := c.relay(h, conn.Out, gate.Caller{Transport: "http", Peer: conn.Peer, Principal: conn.Principal})
	sigs := live.add()
	s := &supervise.Session{
		Relay: r, Journal: h, Argv: c.Argv, Env: c.Env, Launcher: c.Launcher, Grace: c.Grace,
		Stdin: conn.In, Stdout: conn.Out, Stderr: c.Stderr, Signals: sigs, Logf: c.Logf,
		Ready: func() error { return h.Wait(seq, journal.BeforeRequest) },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		res := s.Run()
		live.remove(sigs)
		switch {
		case errors.Is(res.Err, journal.ErrIO):
			select {
			case fatal <- res.Err:
			default:
			}
		case res.Err != nil:
			c.Logf("session %s: %v", conn.ID, res.Err)
		}
	}()
	return done, nil
}

// Listen opens the listening socket for HTTP: network "tcp" or "unix";
// a unix socket is made mode 0600.
func Listen(network, address string) (net.Listener, error) {
	if network != "unix" {
		// No TCP keep-alive as accepted: httpfront turns it on for a
		// connection once a request on it is authenticated, sparing a
		// stranger's connections the system calls.
		lc := net.ListenConfig{KeepAlive: -1}
		return lc.Listen(context.Background(), network, address)
	}
	// The umask covers the socket's creation: no moment where another
	// user could connect. Nothing else creates files at this point.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", address)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	return ln, os.Chmod(address, 0o600)
}

// URL is where a client finds the MCP endpoint served on ln.
func URL(ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		return "unix:" + ln.Addr().String() + " " + httpfront.Path
	}
	return "http://" + ln.Addr().String() + httpfront.Path
}

// liveSessions holds the signal channel of every session running, so that
// the signal that ends serving reaches each session as it reaches a stdio
// wrap's.
type liveSessions struct {
	mu   sync.Mutex
	sigs map[chan os.Signal]struct{}
}

func (l *liveSessions) add() chan os.Signal {
	ch := make(chan os.Signal, 1)
	l.mu.Lock()
	l.sigs[ch] = struct{}{}
	l.mu.Unlock()
	return ch
}

func (l *liveSessions) remove(ch chan os.Signal) {
	l.mu.Lock()
	delete(l.sigs, ch)
	l.mu.Unlock()
}

// signal hands sig to every session running; one that has a signal
// pending already is ending.
func (l *liveSessions) signal(sig os.Signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.sigs {
		select {
		case ch <- sig:
		default:
		}
	}
}
