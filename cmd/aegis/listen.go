package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aegisrelay/aegis/exitcode"
	"github.com/aegisrelay/aegis/gate"
	"github.com/aegisrelay/aegis/httpfront"
	"github.com/aegisrelay/aegis/internal/atomicfile"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/relay"
	"github.com/aegisrelay/aegis/supervise"
)

// listenFlags are wrap's flags for serving MCP Streamable HTTP
// (--listen): one child per MCP session, each recorded as a session of
// its own in the one log (package httpfront).
type listenFlags struct {
	addr        string
	auth        string
	tokenFile   string
	allowOrigin stringList
	allowHost   stringList
	maxSessions int
	idle        time.Duration
	maxConns    int
	perPeer     int
	header      time.Duration

	network, address string // from addr, by check

	// By prepare: the socket bound, and the token and its id.
	ln             net.Listener
	token, tokenID string
	tokenNote      string // where the token is, for stderr
}

func addListenFlags(fs *flag.FlagSet) *listenFlags {
	lf := &listenFlags{}
	fs.StringVar(&lf.addr, "listen", "", "serve MCP Streamable HTTP at http://`ADDR`/mcp instead of stdio: 127.0.0.1:PORT, [::1]:PORT, HOST:PORT or unix:PATH; one child per session (PORT 0: any free port, printed)")
	fs.StringVar(&lf.auth, "auth", "token", "with --listen: token (a bearer token made at start, in --token-file) or none (loopback and unix sockets only)")
	fs.StringVar(&lf.tokenFile, "token-file", "", "with --listen: write the bearer token to `FILE`, mode 0600 (default: the audit log's name with .token)")
	fs.Var(&lf.allowOrigin, "allow-origin", "with --listen: accept requests whose Origin is `ORIGIN` (such as https://app.example.com; * any) beside the loopback ones (repeatable)")
	fs.Var(&lf.allowHost, "allow-host", "with --listen: accept requests whose Host is `NAME` or NAME:PORT (* any) beside the loopback names (repeatable)")
	fs.IntVar(&lf.maxSessions, "max-sessions", httpfront.DefaultMaxSessions, "with --listen: sessions at once; an initialize beyond it is answered 503")
	fs.DurationVar(&lf.idle, "idle-timeout", httpfront.DefaultIdleTimeout, "with --listen: end a session that no request used for `D`")
	fs.IntVar(&lf.maxConns, "max-conns", httpfront.DefaultMaxConns, "with --listen: connections open at once; one beyond it takes the place of one not yet authenticated (lowered to fit the open-file limit)")
	fs.IntVar(&lf.perPeer, "max-conns-per-peer", httpfront.DefaultMaxConnsPerPeer, "with --listen: connections open at once from one IP address (an IPv6 /64)")
	fs.DurationVar(&lf.header, "header-timeout", httpfront.DefaultHeaderTimeout, "with --listen: time a connection has to send a request's headers")
	return lf
}

func (lf *listenFlags) on() bool { return lf != nil && lf.addr != "" }

// check reads --listen and --auth: a mistake exits 2 before anything is
// opened. --auth none is allowed only where no one else can connect: a
// loopback address or a unix socket.
func (lf *listenFlags) check() (code int, ok bool) {
	if !lf.on() {
		return 0, true
	}
	if p, isUnix := strings.CutPrefix(lf.addr, "unix:"); isUnix {
		if p == "" {
			return fail(exitcode.Usage, "wrap: --listen unix:PATH: no PATH"), false
		}
		lf.network, lf.address = "unix", p
	} else {
		host, _, err := net.SplitHostPort(lf.addr)
		if err != nil {
			return fail(exitcode.Usage, "wrap: --listen %q: want 127.0.0.1:PORT, [::1]:PORT, HOST:PORT or unix:PATH", lf.addr), false
		}
		lf.network, lf.address = "tcp", lf.addr
		if lf.auth == "none" && !loopbackHost(host) {
			return fail(exitcode.Usage, "wrap: --auth none on %s: anyone who can reach it could call the server's tools; use it only on a loopback address or a unix socket", lf.addr), false
		}
	}
	if lf.auth != "token" && lf.auth != "none" {
		return fail(exitcode.Usage, "wrap: --auth %q: want token or none", lf.auth), false
	}
	if lf.maxSessions <= 0 || lf.idle <= 0 || lf.maxConns <= 0 || lf.perPeer <= 0 || lf.header <= 0 {
		return fail(exitcode.Usage, "wrap: --max-sessions, --idle-timeout, --max-conns, --max-conns-per-peer and --header-timeout must be positive"), false
	}
	return 0, true
}

// loopbackHost reports whether host names only this machine.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// prepare binds the socket (so that the port is known) and makes the
// token, and says so in the listener's session_start: transport http, the
// address served as peer, and the principal every request must present.
// A failure here is a setup mistake (exit 2); the caller closes the log.
func (lf *listenFlags) prepare(start *record.SessionStart, audit string) (code int, ok bool) {
	if !lf.on() {
		return 0, true
	}
	if err := lf.fitDescriptors(); err != nil {
		return fail(exitcode.Usage, "wrap: --listen: %v", err), false
	}
	ln, err := lf.listen()
	if err != nil {
		return fail(exitcode.Usage, "wrap: --listen %s: %v", lf.addr, err), false
	}
	lf.tokenNote = "no authentication: --auth none"
	principal := "none"
	if lf.auth == "token" {
		path := lf.tokenFile
		if path == "" {
			path = strings.TrimSuffix(audit, filepath.Ext(audit)) + ".token"
		}
		if lf.token, lf.tokenID, err = writeToken(path); err != nil {
			ln.Close()
			return fail(exitcode.Usage, "wrap: --token-file: %v", err), false
		}
		lf.tokenNote = "bearer token in " + path
		principal = "token:" + lf.tokenID
	}
	lf.ln = ln
	start.Transport, start.Peer, start.Principal = record.TransportHTTP, ln.Addr().String(), principal
	return 0, true
}

// serve is wrap --listen once the log is open and the listener's own
// session_start (start, at startSeq) appended: it serves until SIGINT or
// SIGTERM, each MCP session a child run as a stdio session is, with its
// own session_start; then it ends them, appends the listener's
// session_end and closes the log.
func (w wrapSession) serve(j *journal.Journal, startSeq uint64) int {
	lf, start := w.listen, w.start
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "aegis: "+format+"\n", args...) }
	if err := j.Wait(startSeq, journal.BeforeRequest); err != nil {
		lf.ln.Close()
		j.Close()
		return fail(exitcode.AuditIO, "wrap: %v", err)
	}
	ln := lf.ln
	cfg := httpfront.Config{
		AllowHosts: lf.allowHost, AllowOrigins: lf.allowOrigin, CheckHost: lf.network == "tcp",
		MaxFrame: w.maxFrame, MaxSessions: lf.maxSessions, IdleTimeout: lf.idle, Logf: logf,
		MaxConns: lf.maxConns, MaxConnsPerPeer: lf.perPeer, HeaderTimeout: lf.header,
	}
	cfg.Token, cfg.TokenID = lf.token, lf.tokenID
	fatal := make(chan error, 1)
	live := &liveSessions{sigs: map[chan os.Signal]struct{}{}}
	cfg.Start = func(c *httpfront.Conn) (<-chan struct{}, error) {
		return w.startSession(j, start, c, logf, fatal, live)
	}
	srv, err := httpfront.New(cfg)
	if err != nil {
		ln.Close()
		j.Close()
		return fail(exitcode.Usage, "wrap: %v", err)
	}
	// The listener's relay records what concerns every session: the
	// policy's reloads (the gate is shared).
	lr := relay.New(relay.Config{Journal: j})
	stopPolicy := w.pol.start(lr, logf)
	fmt.Fprintf(os.Stderr, "aegis: serving MCP at %s (%s)\n", listenURL(ln), lf.tokenNote)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	reason, code := record.EndSignal, 0
	for done := false; !done; {
		select {
		case sig := <-w.sigs:
			if done = sig != syscall.SIGHUP; done {
				// Each session ends as a stdio wrap does on this signal:
				// its child gets it, and its session_end says signal,
				// not the client_eof that closing its stdin would record.
				live.signal(sig)
			}
		case err := <-served:
			logf("serving stopped: %v", err)
			reason, code, done = record.EndChildExit, exitcode.CannotStart, true
		case err := <-fatal:
			logf("audit log failed, nothing more is relayed: %v", err)
			reason, code, done = record.EndAuditIOError, exitcode.AuditIO, true
		}
	}
	srv.Shutdown()
	stopPolicy()
	if lf.network == "unix" {
		os.Remove(lf.address)
	}
	counts, err := lr.End(record.StatusUnanswered, "")
	if err == nil && code != exitcode.AuditIO {
		var seq uint64
		if seq, err = j.Append(&record.SessionEnd{Reason: reason, Counts: counts}); err == nil {
			err = j.Wait(seq, journal.BeforeResponse)
		}
	}
	cerr := j.Close()
	w.witnesses.finish()
	if err := errors.Join(err, cerr); err != nil || code == exitcode.AuditIO {
		fail(exitcode.AuditIO, "wrap: audit log failed: %v", err)
		return exitcode.AuditIO
	}
	if head, ok := j.Head(); ok {
		fmt.Fprintf(os.Stderr, "aegis: audit head %s (keep it elsewhere; check with verify --head)\n", head)
	}
	return code
}

// startSession starts the child of one MCP session under a relay of its
// own, recording to its own handle on the log (journal.Session): its
// session_start (start's fields, and who asked), then whatever stdio wrap
// records. It returns once session_start is appended; done closes when
// the session has ended and its session_end is written.
func (w wrapSession) startSession(j *journal.Journal, start *record.SessionStart, c *httpfront.Conn, logf func(string, ...any), fatal chan<- error, live *liveSessions) (<-chan struct{}, error) {
	var sid [16]byte
	if _, err := rand.Read(sid[:]); err != nil {
		return nil, err
	}
	h := j.Session(sid)
	ss := *start
	ss.Transport, ss.Peer, ss.Principal = record.TransportHTTP, c.Peer, c.Principal
	seq, err := h.Append(&ss)
	if err != nil {
		return nil, err
	}
	r := relay.New(relay.Config{Journal: h, MaxFrame: w.maxFrame, MaxPending: w.maxPending, Gate: w.pol.relayGate(), Client: c.Out, CallTimeout: w.callTimeout,
		Caller: gate.Caller{Transport: "http", Peer: c.Peer, Principal: c.Principal}})
	s := &supervise.Session{
		Relay: r, Journal: h, Argv: w.argv, Env: w.env, Launcher: launcher(w.prof), Grace: w.grace,
		Stdin: c.In, Stdout: c.Out, Stderr: os.Stderr, Logf: logf,
		Ready: func() error { return h.Wait(seq, journal.BeforeRequest) },
	}
	sigs := live.add()
	s.Signals = sigs
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
			logf("session %s: %v", c.ID, res.Err)
		}
	}()
	return done, nil
}

// fitDescriptors lowers --max-conns and --max-sessions to what the
// open-file limit holds beside the descriptors the log needs
// (httpfront.FitDescriptors), and says so when it does: a client's
// connection that finds no descriptor is refused, never a write of the
// log. The Go runtime has raised the soft limit to the hard one at start;
// a child gets the soft limit aegis was started with.
func (lf *listenFlags) fitDescriptors() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("open-file limit: %w", err)
	}
	conns, sessions, err := httpfront.FitDescriptors(uint64(lim.Cur), lf.maxConns, lf.maxSessions)
	if err != nil {
		return fmt.Errorf("%w (ulimit -n)", err)
	}
	if conns < lf.maxConns || sessions < lf.maxSessions {
		fmt.Fprintf(os.Stderr, "aegis: open-file limit %d: serving at most %d connections and %d sessions (--max-conns %d, --max-sessions %d; raise the limit with ulimit -n)\n",
			uint64(lim.Cur), conns, sessions, lf.maxConns, lf.maxSessions)
	}
	lf.maxConns, lf.maxSessions = conns, sessions
	return nil
}

// listen opens the listening socket; a unix socket is made mode 0600.
func (lf *listenFlags) listen() (net.Listener, error) {
	if lf.network != "unix" {
		// No TCP keep-alive as accepted: httpfront turns it on for a
		// connection once a request on it is authenticated, sparing a
		// stranger's connections the system calls.
		lc := net.ListenConfig{KeepAlive: -1}
		return lc.Listen(context.Background(), lf.network, lf.address)
	}
	// The umask covers the socket's creation: no moment where another
	// user could connect. Nothing else creates files at this point.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", lf.address)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	return ln, os.Chmod(lf.address, 0o600)
}

// listenURL is where a client finds the MCP endpoint.
func listenURL(ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		return "unix:" + ln.Addr().String() + " " + httpfront.Path
	}
	return "http://" + ln.Addr().String() + httpfront.Path
}

// maxTokenFile is the largest file read as a token file left by an
// earlier run: a token and its newline.
const maxTokenFile = 64

// writeToken makes a bearer token (32 random bytes, base64url) and writes
// it to path, mode 0600, replacing a token file an earlier run left there.
// Its id, which records name, is the first 16 hex digits of its SHA-256:
// it identifies the token without revealing it.
//
// The token replaces path atomically (atomicfile), so that a client
// reading path sees the old token or the new one, never an empty or
// partial file. Anything at path that is not a token file (another file
// named by mistake) is refused and kept.
func writeToken(path string) (token, id string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(token))
	id = hex.EncodeToString(sum[:8])
	if fi, err := os.Lstat(path); err == nil {
		old, rerr := os.ReadFile(path)
		if !fi.Mode().IsRegular() || fi.Size() > maxTokenFile || rerr != nil || !isToken(old) {
			return "", "", fmt.Errorf("%s exists and is no token file: it is left as it is", path)
		}
	}
	if err := atomicfile.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return token, id, nil
}

// isToken reports whether b is what writeToken writes: a base64url token
// of 32 bytes and a newline.
func isToken(b []byte) bool {
	t, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(string(t))
	return err == nil && len(raw) == 32
}

// liveSessions holds the signal channel of every session running, so that
// the signal that ends wrap --listen reaches each session as it reaches a
// stdio wrap's.
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
