package httpfront

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/frame"
)

// Errors of the package; classify with errors.Is.
var (
	// ErrConfig: a Config that cannot serve (no Start, an --auth none
	// beyond loopback).
	ErrConfig = errors.New("httpfront: bad configuration")
	// ErrIdle is what a session's Conn.In returns, in place of io.EOF,
	// once the server has ended the session because no request used it
	// for Config.IdleTimeout. Its Idle method reports true, so a caller
	// that cannot import this package still tells the end apart.
	ErrIdle error = idleError{}
)

// idleError is ErrIdle's type.
type idleError struct{}

func (idleError) Error() string { return "httpfront: session idle past its idle timeout" }

// Idle reports true: the session ended for idleness.
func (idleError) Idle() bool { return true }

// Defaults of Config.
const (
	DefaultMaxFrame    = 64 << 20
	DefaultMaxSessions = 256
	// DefaultIdleTimeout is sized for clients that never end their
	// session (the MCP Inspector sends no DELETE): each such session
	// keeps a child running until it is reaped. A client that is still
	// there loses nothing but the child's state: its next request gets
	// 404, and the transport has it start a new session.
	DefaultIdleTimeout  = 5 * time.Minute
	DefaultReplay       = 256
	DefaultWriteTimeout = 30 * time.Second
	// DefaultRetry is the SSE retry field (milliseconds) sent in each
	// stream's priming event: how long a client waits before resuming.
	DefaultRetry = 1000
	// Path is the MCP endpoint.
	Path = "/mcp"
)

// Conn is one session as the caller's Start sees it: the child's two
// sides and who asked for it. In and Out are the session's; the caller's
// session reads client lines from In (each a POST body and '\n') and
// writes the child's lines to Out, as a stdio session reads os.Stdin and
// writes os.Stdout.
type Conn struct {
	ID        string // the MCP-Session-Id (a stateless session's is never given to a client)
	Peer      string // the client's address (host:port, or the socket path); a stateless session's: the endpoint's
	Principal string // who the request that opened it authenticated as: "token:<id>" or "none"
	// Stateless: the session serves the 2026-07-28 requests of Principal,
	// which reach its child without initialize (package documentation,
	// "Stateless requests").
	Stateless bool
	In        io.Reader
	Out       io.Writer
}

// Config configures a Server.
type Config struct {
	// Start starts the session c: it returns once the session's records
	// say it began (or with an error: the initialize is answered 500), and
	// runs it in its own goroutine, reading c.In and writing c.Out, until
	// c.In ends or its child exits; then it closes done. Required.
	Start func(c *Conn) (done <-chan struct{}, err error)
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer), compared in constant time; TokenID names it
	// in Conn.Principal. Empty: no authentication (Conn.Principal "none").
	Token, TokenID string
	// AllowHosts and AllowOrigins extend the default allow-lists (the
	// loopback names: localhost, 127.0.0.1, [::1], any port) of the Host
	// header and of an Origin header when present. "*" allows any.
	AllowHosts, AllowOrigins []string
	// CheckHost: check the Host header (off for a unix socket, where no
	// DNS rebinding can reach).
	CheckHost bool
	// MaxFrame bounds a line either way as the relay counts it, its '\n'
	// included: a POST body (without its own line ending) and a '\n', a
	// child's line. A longer body is 413. Default DefaultMaxFrame.
	MaxFrame int
	// SessionBuffer bounds the bytes one session holds for its clients in
	// each direction: POST bodies read and not yet taken by its child's
	// relay, and events routed and not yet let go (package documentation,
	// "Memory"). Buffer bounds the same for every session together. Each
	// is at least MaxFrame+1. Defaults 2 and 4 times MaxFrame.
	SessionBuffer, Buffer int
	// MaxSessions bounds the sessions at once, a principal's stateless
	// session among them; an initialize (or a principal's first stateless
	// request) beyond it is answered 503. A session counts until its child has exited, not
	// only until DELETE or idleness ends it, so that the bound holds for
	// the children running. Default DefaultMaxSessions.
	MaxSessions int
	// MaxConns bounds the connections open at once, and MaxConnsPerPeer
	// those of one peer (an IPv4 address, an IPv6 /64; not applied to a
	// unix socket): a connection beyond either takes the place of one not
	// yet authenticated, or is reset as accepted when only authenticated
	// ones are in its way (package documentation, "Connections").
	// Defaults DefaultMaxConns, DefaultMaxConnsPerPeer (at
	// most MaxConns). FitDescriptors fits both into an open-file limit.
	MaxConns, MaxConnsPerPeer int
	// HeaderTimeout bounds the time a connection may take to send a
	// request's headers, from its start or from the end of its previous
	// request: what a client costs before it is authenticated. A
	// request refused before authentication (Host, Origin, token, path)
	// closes its connection. Default DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// IdleTimeout ends a session no request has used for that long.
	// Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Replay bounds the events of a stream kept, once sent, for a client
	// that resumes with Last-Event-ID. Default DefaultReplay.
	Replay int
	// WriteTimeout bounds one write to a client: a client that reads
	// nothing of an SSE stream for that long loses the connection (the
	// stream stays resumable). Default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Logf prints a diagnostic; default none.
	Logf func(format string, args ...any)
	// Approver, when set, serves the approvers' page and endpoints under
	// ApproverPath (package documentation, "Approvers").
	Approver *Approver
}

// Server serves MCP Streamable HTTP at Path, one child session per MCP
// session. Its methods are safe for concurrent use.
type Server struct {
	cfg  Config
	hs   *http.Server
	stop chan struct{}

	mu       sync.Mutex
	sessions map[string]*session // every session, by id
	// stateless holds each principal's stateless session, also in
	// sessions (by an id no client is given).
	stateless map[string]*session
	running   sync.WaitGroup // sessions whose done is not closed yet
	mem       memory         // bytes held for clients (memory.go)
	live      int            // the same count, for MaxSessions; under mu
	shut      bool
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Start == nil {
		return nil, fmt.Errorf("%w: no Start", ErrConfig)
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Replay <= 0 {
		cfg.Replay = DefaultReplay
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnsPerPeer <= 0 {
		cfg.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	cfg.MaxConnsPerPeer = min(cfg.MaxConnsPerPeer, cfg.MaxConns)
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, sessions: map[string]*session{}, stateless: map[string]*session{}, stop: make(chan struct{})}
	s.hs = &http.Server{
		Handler: s,
		// Each request knows its connection, which its authentication
		// proves (connLimit).
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		// A client that sends its headers slowly holds a connection: a
		// bound on that, and on an idle keep-alive connection. No write
		// timeout: an SSE stream lasts as long as its call.
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	return s, nil
}

// Serve accepts connections on ln until Shutdown, at most
// Config.MaxConns at once (Config.MaxConnsPerPeer from one peer).
func (s *Server) Serve(ln net.Listener) error {
	go s.reap()
	err := s.hs.Serve(newConnLimit(ln, s.cfg.MaxConns, s.cfg.MaxConnsPerPeer, s.cfg.Logf))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, ends every session (its child's stdin
// closed, as a stdio client's EOF) and waits for them, and closes the
// connections left.
func (s *Server) Shutdown() {
	s.mu.Lock()
	if s.shut {
		s.mu.Unlock()
		return
	}
	s.shut = true
	close(s.stop)
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.sessions = map[string]*session{}
	s.stateless = map[string]*session{}
	s.mu.Unlock()
	for _, ss := range all {
		ss.close()
	}
	s.running.Wait()
	s.hs.Close()
}

// reap ends the sessions idle for longer than IdleTimeout.
func (s *Server) reap() {
	t := time.NewTicker(max(s.cfg.IdleTimeout/8, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			var idle []*session
			s.mu.Lock()
			for id, ss := range s.sessions {
				ss.mu.Lock()
				if ss.busy == 0 && now.Sub(ss.lastUse) > s.cfg.IdleTimeout {
					idle = append(idle, ss)
					delete(s.sessions, id)
					if s.stateless[ss.conn.Principal] == ss {
						delete(s.stateless, ss.conn.Principal)
					}
				}
				ss.mu.Unlock()
			}
			s.mu.Unlock()
			for _, ss := range idle {
				s.cfg.Logf("session %s idle for %v: ended", ss.id, s.cfg.IdleTimeout)
				ss.closeWith(ErrIdle)
			}
		}
	}
}

// supportedVersions are the MCP-Protocol-Version values accepted.
var supportedVersions = map[string]bool{
	"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true, Modern: true,
}

// ServeHTTP serves the MCP endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Approver != nil && strings.HasPrefix(r.URL.Path+"/", ApproverPath) {
		s.serveApprover(w, r) // approver.go
		return
	}
	if r.URL.Path != Path {
		closeUnread(w)
		http.NotFound(w, r)
		return
	}
	if !s.admit(w, r) {
		return
	}
	if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok && !c.l.prove(c) {
		// Its connection was reset to make room before the request was
		// authenticated: nobody is there to answer.
		return
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	if v != "" && !supportedVersions[v] {
		s.unsupportedVersion(w, r, v)
		return
	}
	if v == Modern {
		// The revision has no sessions: no GET stream, no DELETE, and
		// neither Mcp-Session-Id nor Last-Event-ID is read.
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			httpError(w, http.StatusMethodNotAllowed, "method not allowed: "+Modern+" has no sessions and no GET stream")
			return
		}
		sse, jsonOK := accepts(r, "text/event-stream"), accepts(r, "application/json")
		if !sse && !jsonOK {
			httpError(w, http.StatusNotAcceptable, "Accept must include application/json and text/event-stream")
			return
		}
		if !contentTypeJSON(r) {
			httpError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
			return
		}
		s.postModern(w, r, sse, jsonOK)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.getStream(w, r)
	case http.MethodDelete:
		s.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

// connKey is the context key of a request's net.Conn.
type connKey struct{}

// admit checks Host, Origin and the bearer token, answering a request
// that fails one. A request refused here closes its connection (the body
// unread): a client without a token keeps nothing of the server's
// between its requests.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	refuse := func(status int, msg string) bool {
		closeUnread(w)
		httpError(w, status, msg)
		return false
	}
	if s.cfg.CheckHost && !hostAllowed(r.Host, s.cfg.AllowHosts) {
		return refuse(http.StatusForbidden, "Host not allowed: wrap --listen accepts the loopback names and those given with --allow-host NAME")
	}
	if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, s.cfg.AllowOrigins) {
		return refuse(http.StatusForbidden, "Origin not allowed")
	}
	if s.cfg.Token != "" {
		tok, ok := bearer(r.Header.Values("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aegis"`)
			return refuse(http.StatusUnauthorized, "a valid bearer token is required")
		}
	}
	return true
}

// closeUnread makes the connection of a request refused before
// authentication end with its response, the rest of its body unread:
// net/http would otherwise read up to 256 KiB of a declared body, for as
// long as its client takes to send it, before closing.
func closeUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// bearer returns the token of the one Authorization header in values
// when it uses the Bearer scheme. The scheme is compared without case and
// may be followed by any run of spaces (RFC 9110, 11.1 and 11.4); two
// Authorization headers are refused, since proxies and servers differ on
// which one counts.
func bearer(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	return tok, tok != ""
}

// principal names who the request authenticated as.
func (s *Server) principal() string {
	if s.cfg.Token == "" {
		return "none"
	}
	return "token:" + s.cfg.TokenID
}

// httpError answers with status and a JSON-RPC error without an id, as
// the transport allows for a refused message.
func httpError(w http.ResponseWriter, status int, msg string) {
	rpcError(w, status, codeServerError, msg)
}

// JSON-RPC 2.0 error codes of the bodies the front answers itself.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeServerError    = -32000 // a transport-level refusal: a header, the session, a limit
)

// rpcError answers status with a JSON-RPC error body of code.
func rpcError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%q}}`, code, msg)
}

// accepts reports whether the Accept header takes typ (or everything).
// Media types are compared without case; parameters (q=…) are ignored,
// as the transport gives them no meaning. It allocates nothing.
func accepts(r *http.Request, typ string) bool {
	major, _, _ := strings.Cut(typ, "/")
	for _, v := range r.Header.Values("Accept") {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			part, _, _ = strings.Cut(part, ";")
			part = strings.TrimSpace(part)
			if strings.EqualFold(part, typ) || part == "*/*" ||
				len(part) == len(major)+2 && strings.EqualFold(part[:len(major)], major) && part[len(major):] == "/*" {
				return true
			}
		}
	}
	return false
}

// lookup finds the session the request names, answering 400 when it
// names none and 404 when it names one that does not exist (or ended).
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		httpError(w, http.StatusBadRequest, "Mcp-Session-Id header required")
		return nil
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil || ss.conn.Stateless {
		httpError(w, http.StatusNotFound, "session not found")
		return nil
	}
	return ss
}

// post serves one message POSTed.
func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	sse, jsonOK := accepts(r, "text/event-stream"), accepts(r, "application/json")
	if !sse && !jsonOK {
		httpError(w, http.StatusNotAcceptable, "Accept must include application/json or text/event-stream")
		return
	}
	if !contentTypeJSON(r) {
		httpError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	// A session named is found before the body is read: the body is
	// counted against its budget, and waits for room there (memory.go).
	var ss *session
	if r.Header.Get("Mcp-Session-Id") != "" {
		if ss = s.lookup(w, r); ss == nil {
			return
		}
	}
	bd, line, cl := s.readMessage(w, r, ss, "the body must be one JSON-RPC request, notification or response")
	if cl == nil {
		return
	}
	defer classifiers.Put(cl)
	// The body's count is given back once the child's relay has its
	// line: by send, or by the goroutine request starts, which then
	// owns it.
	owned := true
	defer func() {
		if owned {
			bd.release()
		}
	}()
	m := &cl.f.Msgs[0]
	if msg := headerMismatch(r, m); msg != "" {
		httpError(w, http.StatusBadRequest, msg)
		return
	}
	if ss == nil {
		if m.Type != frame.Request || string(m.Method) != "initialize" {
			s.lookup(w, r) // answers why: no Mcp-Session-Id
			return
		}
		if ss = s.begin(w, r); ss == nil {
			return
		}
	}
	ss.use(+1)
	defer ss.use(-1)
	if m.Type != frame.Request {
		owned = false
		err := ss.send(line, bd.release) // given back once the relay has read it
		if err != nil {
			httpError(w, http.StatusNotFound, "session ended")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.ID.Key == nil {
		httpError(w, http.StatusBadRequest, "a request's id must be a string or a number")
		return
	}
	progress, _ := requestProgressKey(line)
	o, err := ss.request(r.Context(), line, routeKeys(m), sse, progress, streamKind{}, bd.release)
	if err != nil {
		return // errGone: the client went away while an earlier request with its id was in flight
	}
	owned = false
	if err := ss.wait(r.Context(), o); errors.Is(err, errGone) {
		return
	} else if err != nil {
		httpError(w, http.StatusNotFound, "session ended")
		return
	}
	st := o.st
	w.Header()["Mcp-Session-Id"] = ss.idHeader
	if sse {
		ss.serveStream(w, r, st, 1, false)
		return
	}
	ss.serveJSON(w, r, st)
}

// contentTypeJSON reports whether the request's Content-Type, when it
// gives one, is application/json.
func contentTypeJSON(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// classifier is a Classifier and its Frame, reused across requests
// (classifiers): a request's Frame is valid until the request returns it.
// readMessage reads a POST's body as the line it is written to the child
// and classifies it. A body that cannot be read, is longer than the
// maximum frame, holds a raw line break, or is not one JSON-RPC message
// is answered on w (notOne says what the body must be) and readMessage
// returns a nil classifier, having released the body. Otherwise the
// caller owns bd (release it unless another takes it) and cl (put it
// back in classifiers), whose frame holds the one message, valid while
// line is.
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request, ss *session, notOne string) (bd *body, line []byte, cl *classifier) {
	bd, err := s.readBody(w, r, ss)
	switch {
	case errors.Is(err, errTooLong):
		httpError(w, http.StatusRequestEntityTooLarge, "body longer than the maximum frame")
		return nil, nil, nil
	case errors.Is(err, errGone):
		return nil, nil, nil
	case err != nil:
		httpError(w, http.StatusBadRequest, "cannot read the body")
		return nil, nil, nil
	}
	line, err = Line(bd.b)
	if err != nil {
		bd.release()
		httpError(w, http.StatusBadRequest, err.Error())
		return nil, nil, nil
	}
	// --max-frame counts a line as it reaches the child, its '\n'
	// included, as the relay's reader counts it (frame.NewReader): a body
	// taken here is never one that ends the session there.
	if len(line)+1 > s.cfg.MaxFrame {
		bd.release()
		httpError(w, http.StatusRequestEntityTooLarge, "body longer than the maximum frame")
		return nil, nil, nil
	}
	cl = classifiers.Get().(*classifier)
	f := &cl.f
	cl.c.Classify(line, f)
	if f.Kind != frame.Single || len(f.Msgs) != 1 || f.Msgs[0].Type == frame.Invalid {
		bd.release()
		classifiers.Put(cl)
		// JSON-RPC's codes: a body that is not one JSON value is a parse
		// error, one that is JSON but no single message an invalid request.
		code := codeInvalidRequest
		if f.Kind == frame.NotJSON || f.Kind == frame.Empty {
			code = codeParseError
		}
		rpcError(w, http.StatusBadRequest, code, notOne)
		return nil, nil, nil
	}
	return bd, line, cl
}

type classifier struct {
	c frame.Classifier
	f frame.Frame
}

var classifiers = sync.Pool{New: func() any { return new(classifier) }}

// headerMismatch checks the 2026-07-28 Mcp-Method and Mcp-Name headers,
// where present, against the body: a header must never let a message be
// judged as another. Mcp-Name is checked for a tools/call, whose
// params.name the relay records and a policy judges.
func headerMismatch(r *http.Request, m *frame.Message) string {
	if v, ok := r.Header["Mcp-Method"]; ok && (len(v) != 1 || v[0] != string(m.Method)) {
		return "Mcp-Method header differs from the body's method"
	}
	if v, ok := r.Header["Mcp-Name"]; ok && m.IsToolCall && (len(v) != 1 || !m.HasTool || v[0] != string(m.Tool)) {
		return "Mcp-Name header differs from the body's params.name"
	}
	return ""
}

// begin starts a session for an initialize request, or answers why not.
func (s *Server) begin(w http.ResponseWriter, r *http.Request) *session {
	return s.start(w, &Conn{Peer: peer(r), Principal: s.principal()})
}

// start starts the session c (given its id here), or answers why not. A
// stateless session is not started twice: a principal's second first
// request is given the one the first started.
func (s *Server) start(w http.ResponseWriter, c *Conn) *session {
	id, err := newSessionID()
	if err != nil {
		httpError(w, http.StatusInternalServerError, "cannot make a session id")
		return nil
	}
	c.ID = id
	s.mu.Lock()
	if s.shut {
		s.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, "shutting down")
		return nil
	}
	if ss := s.stateless[c.Principal]; c.Stateless && ss != nil {
		s.mu.Unlock()
		<-ss.started
		if ss.startErr {
			httpError(w, http.StatusInternalServerError, "cannot start the server")
			return nil
		}
		return ss
	}
	if s.live >= s.cfg.MaxSessions {
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "too many sessions")
		return nil
	}
	ss := newSession(s, id, c)
	s.sessions[id] = ss
	if c.Stateless {
		s.stateless[c.Principal] = ss
	}
	s.live++
	s.running.Add(1)
	s.mu.Unlock()
	done, err := s.cfg.Start(c)
	if err != nil {
		s.mu.Lock()
		delete(s.sessions, id)
		if s.stateless[c.Principal] == ss {
			delete(s.stateless, c.Principal)
		}
		s.live--
		s.mu.Unlock()
		ss.startErr = true
		close(ss.started)
		s.running.Done()
		s.cfg.Logf("session %s: %v", id, err)
		httpError(w, http.StatusInternalServerError, "cannot start the server")
		return nil
	}
	close(ss.started)
	go func() {
		<-done
		// The caller writes no more: what it wrote is routed, then the
		// session is gone (404) and its streams end.
		ss.lines.closeRead()
		ss.out.close()
		s.mu.Lock()
		if s.sessions[id] == ss {
			delete(s.sessions, id)
		}
		if s.stateless[c.Principal] == ss {
			delete(s.stateless, c.Principal)
		}
		s.live--
		s.mu.Unlock()
		close(ss.done)
		s.running.Done()
	}()
	return ss
}

// peer is the client's address; for a unix socket, which gives clients
// no address, the socket's path.
func peer(r *http.Request) string {
	if r.RemoteAddr != "" && r.RemoteAddr != "@" {
		return r.RemoteAddr
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return r.RemoteAddr
}

// newSessionID is 16 random bytes in hex: visible ASCII, unguessable.
func newSessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// use counts a request in (+1) or out (-1) of the session.
func (ss *session) use(d int) {
	ss.mu.Lock()
	ss.busy += d
	ss.lastUse = time.Now()
	ss.mu.Unlock()
}

// delete ends the session the request names.
func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	ss := s.lookup(w, r)
	if ss == nil {
		return
	}
	// The id is 404 from now on; the session keeps its MaxSessions slot
	// until its child has exited (begin).
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	s.mu.Unlock()
	ss.close()
	w.WriteHeader(http.StatusOK)
}

// getStream serves GET: the standalone stream, or with Last-Event-ID the
// stream it names, resumed after that event.
func (s *Server) getStream(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		httpError(w, http.StatusNotAcceptable, "Accept must include text/event-stream")
		return
	}
	ss := s.lookup(w, r)
	if ss == nil {
		return
	}
	ss.use(+1)
	defer ss.use(-1)
	st, from, resume := ss.get, uint64(0), false
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		sid, n, ok := parseEventID(last)
		ss.mu.Lock()
		st = ss.streams[sid]
		ss.mu.Unlock()
		if !ok || st == nil || !st.sse {
			httpError(w, http.StatusNotFound, "no stream to resume for Last-Event-ID "+last)
			return
		}
		from, resume = n+1, true
	}
	ss.mu.Lock()
	if from == 0 {
		from = st.sent
	}
	ss.mu.Unlock()
	ss.serveStream(w, r, st, from, resume)
}
