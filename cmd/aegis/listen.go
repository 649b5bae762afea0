package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/httpfront"
	"github.com/aegisrelay/aegis/internal/serve"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
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
	fs.IntVar(&lf.maxSessions, "max-sessions", httpfront.DefaultMaxSessions, "with --listen: sessions at once (the 2026-07-28 requests of one principal share one); an initialize, or a first 2026-07-28 request, beyond it is answered 503")
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
	network, address, local, err := serve.ParseAddr(lf.addr)
	if err != nil {
		return fail(exitcode.Usage, "wrap: --listen %v", err), false
	}
	lf.network, lf.address = network, address
	if lf.auth == "none" && !local {
		return fail(exitcode.Usage, "wrap: --auth none on %s: anyone who can reach it could call the server's tools; use it only on a loopback address or a unix socket", lf.addr), false
	}
	if lf.auth != "token" && lf.auth != "none" {
		return fail(exitcode.Usage, "wrap: --auth %q: want token or none", lf.auth), false
	}
	if lf.maxSessions <= 0 || lf.idle <= 0 || lf.maxConns <= 0 || lf.perPeer <= 0 || lf.header <= 0 {
		return fail(exitcode.Usage, "wrap: --max-sessions, --idle-timeout, --max-conns, --max-conns-per-peer and --header-timeout must be positive"), false
	}
	return 0, true
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
	ln, err := serve.Listen(lf.network, lf.address)
	if err != nil {
		return fail(exitcode.Usage, "wrap: --listen %s: %v", lf.addr, err), false
	}
	lf.tokenNote = "no authentication: --auth none"
	principal := "none"
	if lf.auth == "token" {
		path := lf.tokenFile
		if path == "" {
			path = serve.TokenPath(audit)
		}
		if lf.token, lf.tokenID, err = serve.WriteToken(path); err != nil {
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
// SIGTERM (serve.Config.Serve), then closes the log and says how
// serving ended.
func (w wrapSession) serve(j *journal.Journal, startSeq uint64) int {
	lf := w.listen
	front := httpfront.Config{
		AllowHosts: lf.allowHost, AllowOrigins: lf.allowOrigin, CheckHost: lf.network == "tcp",
		MaxSessions: lf.maxSessions, IdleTimeout: lf.idle,
		MaxConns: lf.maxConns, MaxConnsPerPeer: lf.perPeer, HeaderTimeout: lf.header,
		Token: lf.token, TokenID: lf.tokenID,
	}
	code, err := w.config().HTTP(j, startSeq, serve.HTTPOptions{
		Listener: lf.ln, Front: front, Start: w.start, Signals: w.sigs,
		Serving: func() {
			fmt.Fprintf(os.Stderr, "aegis: serving MCP at %s (%s)\n", serve.URL(lf.ln), lf.tokenNote)
		},
	})
	if errors.Is(err, serve.ErrNotServed) {
		j.Close()
		return fail(code, "wrap: %v", err)
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

// fitDescriptors lowers --max-conns and --max-sessions to what the
// open-file limit holds (serve.FitDescriptors), and says so when it does.
func (lf *listenFlags) fitDescriptors() error {
	conns, sessions, limit, err := serve.FitDescriptors(lf.maxConns, lf.maxSessions)
	if err != nil {
		return err
	}
	if conns < lf.maxConns || sessions < lf.maxSessions {
		fmt.Fprintf(os.Stderr, "aegis: open-file limit %d: serving at most %d connections and %d sessions (--max-conns %d, --max-sessions %d; raise the limit with ulimit -n)\n",
			limit, conns, sessions, lf.maxConns, lf.maxSessions)
	}
	lf.maxConns, lf.maxSessions = conns, sessions
	return nil
}
