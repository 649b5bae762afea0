package serve

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/aegisrelay/aegis/internal/httpfront"
	"github.com/aegisrelay/aegis/journal/record"
)

// Front is what wrap --listen serves with, as its flags give it: where
// (Addr), who may call (Auth, TokenFile, AllowOrigins, AllowHosts) and
// the bounds. Check reads it, Bind binds it, Options hands it to HTTP.
// Not safe for concurrent use.
type Front struct {
	Addr      string // wrap --listen ADDR (ParseAddr); "": no HTTP
	Auth      string // "token" or "none"
	TokenFile string // "": TokenPath of the log

	AllowOrigins, AllowHosts               []string
	MaxSessions, MaxConns, MaxConnsPerPeer int
	IdleTimeout, HeaderTimeout             time.Duration

	network, address string       // by Check
	ln               net.Listener // by Bind
	token, tokenID   string       // by Bind, with Auth token
	tokenNote        string       // by Bind: where the token is, for stderr

	approver     *httpfront.Approver // by Config.ServeApprovals (approvals.go)
	approverNote string              // where the approver token is
}

// On reports whether f serves HTTP at all.
func (f *Front) On() bool { return f != nil && f.Addr != "" }

// Check reads Addr and Auth, and says what is wrong with f, naming the
// flag: a mistake found before anything is opened. --auth none is
// allowed only where no one else can connect: a loopback address or a
// unix socket.
func (f *Front) Check() error {
	if !f.On() {
		return nil
	}
	network, address, local, err := ParseAddr(f.Addr)
	if err != nil {
		return fmt.Errorf("--listen %v", err)
	}
	f.network, f.address = network, address
	if f.Auth == "none" && !local {
		return fmt.Errorf("--auth none on %s: anyone who can reach it could call the server's tools; use it only on a loopback address or a unix socket", f.Addr)
	}
	if f.Auth != "token" && f.Auth != "none" {
		return fmt.Errorf("--auth %q: want token or none", f.Auth)
	}
	if f.MaxSessions <= 0 || f.IdleTimeout <= 0 || f.MaxConns <= 0 || f.MaxConnsPerPeer <= 0 || f.HeaderTimeout <= 0 {
		return errors.New("--max-sessions, --idle-timeout, --max-conns, --max-conns-per-peer and --header-timeout must be positive")
	}
	return nil
}

// Bind fits the bounds to the open-file limit (FitDescriptors, said
// through logf when it lowers them), binds the socket, so that the port
// is known, and makes the token (WriteToken, in TokenFile or TokenPath of
// audit); then it says so in the listener's session_start, start:
// transport http, the address served as peer, and the principal every
// request must present. Its errors name the flag; the caller closes the
// log.
func (f *Front) Bind(start *record.SessionStart, audit string, logf func(string, ...any)) error {
	if !f.On() {
		return nil
	}
	conns, sessions, limit, err := FitDescriptors(f.MaxConns, f.MaxSessions)
	if err != nil {
		return fmt.Errorf("--listen: %v", err)
	}
	if conns < f.MaxConns || sessions < f.MaxSessions {
		logf("open-file limit %d: serving at most %d connections and %d sessions (--max-conns %d, --max-sessions %d; raise the limit with ulimit -n)",
			limit, conns, sessions, f.MaxConns, f.MaxSessions)
	}
	f.MaxConns, f.MaxSessions = conns, sessions
	ln, err := Listen(f.network, f.address)
	if err != nil {
		return fmt.Errorf("--listen %s: %v", f.Addr, err)
	}
	f.tokenNote = "no authentication: --auth none"
	principal := "none"
	if f.Auth == "token" {
		path := f.TokenFile
		if path == "" {
			path = TokenPath(audit)
		}
		if f.token, f.tokenID, err = WriteToken(path); err != nil {
			ln.Close()
			return fmt.Errorf("--token-file: %v", err)
		}
		f.tokenNote = "bearer token in " + path
		principal = "token:" + f.tokenID
	}
	if host, _, _ := net.SplitHostPort(f.address); f.network == "tcp" && net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		logf("--listen %s: serving on every network address of this machine, to anyone who can reach it; requests must still carry a Host that is a loopback name or one given with --allow-host", f.Addr)
	}
	f.ln = ln
	start.Transport, start.Peer, start.Principal = record.TransportHTTP, ln.Addr().String(), principal
	return nil
}

// Serving is the line that says where f serves, once bound: the URL,
// where the token is, and how long a session may go unused.
func (f *Front) Serving() string {
	idle := f.IdleTimeout
	if idle <= 0 {
		idle = httpfront.DefaultIdleTimeout
	}
	s := fmt.Sprintf("serving MCP at %s (%s; a session no request uses for %v ends, --idle-timeout)", URL(f.ln), f.tokenNote, idle)
	if f.approver != nil {
		s += approverServing(f.ln, f.approverNote)
	}
	return s
}

// Options is what HTTP serves f with, once bound: the listener's
// session_start (start), the signals that end serving, and serving,
// called once the server is about to accept.
func (f *Front) Options(start *record.SessionStart, sigs <-chan os.Signal, serving func()) HTTPOptions {
	return HTTPOptions{
		Listener: f.ln, Start: start, Signals: sigs, Serving: serving,
		Front: httpfront.Config{
			AllowHosts: f.AllowHosts, AllowOrigins: f.AllowOrigins, CheckHost: f.network == "tcp",
			MaxSessions: f.MaxSessions, IdleTimeout: f.IdleTimeout,
			MaxConns: f.MaxConns, MaxConnsPerPeer: f.MaxConnsPerPeer, HeaderTimeout: f.HeaderTimeout,
			Token: f.token, TokenID: f.tokenID, Approver: f.approver,
		},
	}
}
