package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// Resolver is what the proxy resolves names with: net.DefaultResolver,
// or a test's own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is a proxy's configuration. Zero limits take the defaults.
type Config struct {
	Grants Grants
	// Resolver resolves names (nil: net.DefaultResolver).
	Resolver Resolver
	// Dial dials the address the proxy checked (nil: a net.Dialer's
	// DialContext); tests redirect it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Record receives each connection's records: an allowed one's
	// opening record once the checked address has answered, before any
	// byte is carried, and every connection's record once it has ended.
	// It is called from the connection's goroutine and returns once the
	// record is written; an error refuses the connection an opening
	// record was not written for.
	Record func(*record.Egress) error
	// InFlight returns the intent seqs of the calls in flight (nil: none).
	InFlight func() []uint64

	MaxConns      int           // connections at once (DefaultMaxConns)
	MaxHeader     int           // bytes of a request's head (DefaultMaxHeader)
	HeaderTimeout time.Duration // to read the head, and a ClientHello (DefaultHeaderTimeout)
	DialTimeout   time.Duration // to resolve and connect (DefaultDialTimeout)
	IdleTimeout   time.Duration // with no byte either way (DefaultIdleTimeout)
}

// Defaults of Config's limits.
const (
	DefaultMaxConns      = 64
	DefaultMaxHeader     = 32 << 10
	DefaultHeaderTimeout = 10 * time.Second
	DefaultDialTimeout   = 15 * time.Second
	DefaultIdleTimeout   = 5 * time.Minute
	// maxHello bounds the bytes read for a TLS ClientHello.
	maxHello = 64 << 10
)

// Refusal reasons, as records write them. Part of the format.
const (
	ReasonBadRequest = "not a proxy request aegis serves"
	ReasonNoGrant    = "no --allow-egress grant covers it"
	ReasonResolve    = "the name did not resolve"
	ReasonNotPublic  = "it resolves to no address its grant allows (loopback, private, link-local and metadata addresses need a grant naming them)"
	ReasonNotTLS     = "a CONNECT tunnel carries TLS only, and the first bytes were not a TLS ClientHello"
	ReasonSNI        = "the TLS ClientHello names another server than the CONNECT"
	ReasonDial       = "connecting to the checked address failed"
	ReasonTooMany    = "too many connections at once"
	ReasonClosed     = "the session ended"
	ReasonIdle       = "idle for too long"
	ReasonNotWritten = "its opening record could not be written"
)

// Proxy is the egress proxy of one confined child: HTTP CONNECT (for
// TLS) and plain HTTP requests in absolute form, each checked against
// the grants, dialled at the address checked, and recorded.
type Proxy struct {
	cfg    Config
	next   atomic.Uint64 // the last connection's number
	slots  chan struct{}
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// New returns a proxy for cfg.
func New(cfg Config) *Proxy {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = d.DialContext
	}
	if cfg.Record == nil {
		cfg.Record = func(*record.Egress) error { return nil }
	}
	if cfg.InFlight == nil {
		cfg.InFlight = func() []uint64 { return nil }
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.HeaderTimeout, DefaultHeaderTimeout)
	def(&cfg.DialTimeout, DefaultDialTimeout)
	def(&cfg.IdleTimeout, DefaultIdleTimeout)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxHeader <= 0 {
		cfg.MaxHeader = DefaultMaxHeader
	}
	return &Proxy{cfg: cfg, slots: make(chan struct{}, cfg.MaxConns), conns: map[net.Conn]struct{}{}}
}

// Serve accepts on ln until Close, or until ln fails; it returns nil
// after Close.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return nil
	}
	p.conns[listenerConn{ln}] = struct{}{}
	p.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

// listenerConn lets Close close the listener with the connections.
type listenerConn struct{ net.Listener }

func (listenerConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (listenerConn) Write([]byte) (int, error)        { return 0, io.EOF }
func (listenerConn) LocalAddr() net.Addr              { return nil }
func (listenerConn) RemoteAddr() net.Addr             { return nil }
func (listenerConn) SetDeadline(time.Time) error      { return nil }
func (listenerConn) SetReadDeadline(time.Time) error  { return nil }
func (listenerConn) SetWriteDeadline(time.Time) error { return nil }

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Close stops accepting, ends every connection, and returns once each
// has been recorded.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// conn is one connection's state, which becomes its record.
type conn struct {
	p        *Proxy
	client   net.Conn
	start    time.Time
	rec      record.Egress
	up, down atomic.Int64
}

func (p *Proxy) handle(c net.Conn) {
	defer p.wg.Done()
	cn := &conn{p: p, client: c, start: time.Now()}
	cn.rec.Conn = p.next.Add(1)
	in := p.cfg.InFlight()
	if len(in) > record.MaxEgressInFlight {
		in = in[:record.MaxEgressInFlight]
	}
	cn.rec.InFlight = append([]uint64{}, in...)
	if in == nil {
		cn.rec.InFlight = []uint64{}
	}
	select {
	case p.slots <- struct{}{}:
		cn.serve()
		<-p.slots
	default:
		cn.refuse(http.StatusServiceUnavailable, ReasonTooMany)
	}
	c.Close()
	p.untrack(c)
	cn.rec.BytesUp, cn.rec.BytesDown = cn.up.Load(), cn.down.Load()
	cn.rec.DurationMS = time.Since(cn.start).Milliseconds()
	if cn.rec.Decision == "" {
		cn.rec.Decision = record.EgressRefused
	}
	p.cfg.Record(&cn.rec)
}

// refuse answers the client with status and why, and records the refusal.
func (cn *conn) refuse(status int, why string) {
	cn.rec.Decision, cn.rec.Reason, cn.rec.Grant, cn.rec.Addr = record.EgressRefused, why, "", ""
	body := "aegis egress: " + why + "\n"
	cn.client.SetWriteDeadline(time.Now().Add(cn.p.cfg.HeaderTimeout))
	fmt.Fprintf(cn.client, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// serve reads one request and carries its connection.
func (cn *conn) serve() {
	cfg := &cn.p.cfg
	cn.client.SetReadDeadline(time.Now().Add(cfg.HeaderTimeout))
	head := &io.LimitedReader{R: cn.client, N: int64(cfg.MaxHeader)}
	br := bufio.NewReaderSize(head, 4096)
	req, err := http.ReadRequest(br)
	if err != nil {
		cn.rec.Method = ""
		status := http.StatusBadRequest
		if head.N <= 0 {
			status = http.StatusRequestHeaderFieldsTooLarge
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) && head.N > 0 {
			cn.rec.Decision, cn.rec.Reason = record.EgressRefused, ReasonBadRequest
			return
		}
		cn.refuse(status, ReasonBadRequest)
		return
	}
	cn.rec.Method = boundedToken(req.Method)
	host, port, ok := target(req)
	cn.rec.Host, cn.rec.Port = host, int(port)
	if !ok {
		cn.rec.Host = ""
		cn.refuse(http.StatusBadRequest, ReasonBadRequest)
		return
	}
	g, ok := cfg.Grants.Match(host, port)
	if !ok {
		cn.refuse(http.StatusForbidden, ReasonNoGrant)
		return
	}
	// The head is read: the rest of the connection is the body or the
	// tunnel, whatever its length.
	head.N = 1<<63 - 1
	if req.Method == http.MethodConnect {
		cn.tunnel(g, host, port, br)
		return
	}
	cn.forward(g, host, port, req)
}

// boundedToken is a method as recorded: a token of at most 32 bytes.
func boundedToken(s string) string {
	if len(s) > 32 {
		return s[:32]
	}
	return s
}

// target is what req asks to reach: a CONNECT's authority (HOST:PORT), or
// a plain request's absolute http:// URL (port 80 when it names none).
func target(req *http.Request) (host string, port uint16, ok bool) {
	var authority string
	switch {
	case req.Method == http.MethodConnect:
		authority = req.RequestURI
		h, p, err := net.SplitHostPort(authority)
		if err != nil {
			return "", 0, false
		}
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return "", 0, false
		}
		host, ok = normalHost(h)
		return host, uint16(n), ok
	case req.URL != nil && req.URL.Scheme == "http" && req.URL.Host != "" && req.URL.User == nil:
		h, p := req.URL.Hostname(), req.URL.Port()
		n := uint64(80)
		if p != "" {
			var err error
			if n, err = strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
				return "", 0, false
			}
		}
		host, ok = normalHost(h)
		return host, uint16(n), ok
	}
	return "", 0, false
}

// resolve resolves host (or takes its literal) and returns the addresses
// g allows; it answers the client with the refusal when there are none.
func (cn *conn) resolve(g Grant, host string) ([]netip.Addr, bool) {
	cfg := &cn.p.cfg
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if g.Pin.IsValid() {
		addrs = []netip.Addr{g.Pin}
	} else if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = cfg.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			cn.refuse(http.StatusBadGateway, ReasonResolve)
			return nil, false
		}
	}
	var allowed []netip.Addr
	for _, a := range addrs {
		if allowedAddr(g, a) {
			allowed = append(allowed, a.Unmap())
		}
	}
	if len(allowed) == 0 {
		cn.refuse(http.StatusForbidden, ReasonNotPublic)
		return nil, false
	}
	return allowed, true
}

// connect dials the first of the checked addresses that answers: the
// address checked is the address dialled. It records why when none does.
func (cn *conn) connect(allowed []netip.Addr, port uint16) (net.Conn, bool) {
	cfg := &cn.p.cfg
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	for _, a := range allowed {
		addr := netip.AddrPortFrom(a, port).String()
		up, err := cfg.Dial(ctx, "tcp", addr)
		if err == nil {
			cn.rec.Addr = addr
			return up, true
		}
	}
	cn.rec.Decision, cn.rec.Reason = record.EgressRefused, ReasonDial
	return nil, false
}

// tunnel answers a CONNECT: 200, then the ClientHello is read and its
// server name checked before anything is dialled; then the two sides are
// spliced, the ClientHello first.
func (cn *conn) tunnel(g Grant, host string, port uint16, br *bufio.Reader) {
	cfg := &cn.p.cfg
	addrs, ok := cn.resolve(g, host)
	if !ok {
		return
	}
	cn.client.SetWriteDeadline(time.Now().Add(cfg.HeaderTimeout))
	if _, err := io.WriteString(cn.client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		cn.rec.Decision, cn.rec.Reason = record.EgressRefused, ReasonClosed
		return
	}
	cn.client.SetDeadline(time.Now().Add(cfg.HeaderTimeout))
	sni, hello, err := readClientHello(br)
	if err != nil {
		cn.rec.Decision, cn.rec.Reason = record.EgressRefused, ReasonNotTLS
		return
	}
	cn.rec.SNI = sni
	if !sniMatches(sni, host) {
		cn.rec.Decision, cn.rec.Reason = record.EgressRefused, ReasonSNI
		return
	}
	up, ok := cn.connect(addrs, port)
	if !ok {
		// The 200 is sent: the client reads the failure as a broken
		// handshake, and the record says why.
		return
	}
	defer up.Close()
	if !cn.open(g) {
		return
	}
	cn.p.track(up)
	defer cn.p.untrack(up)
	up.SetWriteDeadline(time.Now().Add(cfg.IdleTimeout))
	n, err := up.Write(hello)
	cn.up.Add(int64(n))
	if err != nil {
		cn.rec.Reason = ReasonClosed
		return
	}
	cn.splice(up, br)
}

// open allows the connection by g and writes its opening record, before
// any byte is carried; when that fails the connection is refused.
func (cn *conn) open(g Grant) bool {
	cn.rec.Decision, cn.rec.Grant, cn.rec.Reason = record.EgressAllowed, g.String(), ""
	o := cn.rec
	o.Open, o.DurationMS = true, time.Since(cn.start).Milliseconds()
	if err := cn.p.cfg.Record(&o); err != nil {
		cn.rec.Decision, cn.rec.Grant, cn.rec.Reason = record.EgressRefused, "", ReasonNotWritten
		return false
	}
	return true
}

// sniMatches reports whether a ClientHello's server name fits a CONNECT
// to host: the same name (case aside), or, for an IP literal, none.
func sniMatches(sni, host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return sni == ""
	}
	return strings.EqualFold(strings.TrimSuffix(sni, "."), host)
}

// errHelloRead stops crypto/tls once it has parsed the ClientHello.
var errHelloRead = errors.New("egress: ClientHello read")

// readClientHello reads a TLS ClientHello from r with crypto/tls's own
// parser, and returns its server name and the bytes read, to be sent on.
func readClientHello(r io.Reader) (sni string, read []byte, err error) {
	var buf bytes.Buffer
	var hello *tls.ClientHelloInfo
	c := helloConn{r: io.TeeReader(io.LimitReader(r, maxHello), &buf)}
	err = tls.Server(c, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		hello = h
		return nil, errHelloRead
	}}).Handshake()
	if hello == nil {
		return "", nil, fmt.Errorf("egress: no ClientHello: %v", err)
	}
	return hello.ServerName, buf.Bytes(), nil
}

// helloConn is a read-only net.Conn over what the client sent; what the
// TLS server would answer (an alert) is dropped.
type helloConn struct{ r io.Reader }

func (c helloConn) Read(b []byte) (int, error)     { return c.r.Read(b) }
func (helloConn) Write(b []byte) (int, error)      { return len(b), nil }
func (helloConn) Close() error                     { return nil }
func (helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (helloConn) SetDeadline(time.Time) error      { return nil }
func (helloConn) SetReadDeadline(time.Time) error  { return nil }
func (helloConn) SetWriteDeadline(time.Time) error { return nil }

// forward carries a plain HTTP request: sent on in origin form, without
// the proxy's own and hop-by-hop headers, with Connection: close; the
// response is carried back as it comes until the server closes.
func (cn *conn) forward(g Grant, host string, port uint16, req *http.Request) {
	addrs, ok := cn.resolve(g, host)
	if !ok {
		return
	}
	up, ok := cn.connect(addrs, port)
	if !ok {
		cn.refuse(http.StatusBadGateway, ReasonDial)
		return
	}
	defer up.Close()
	if !cn.open(g) {
		addr := cn.rec.Addr
		cn.refuse(http.StatusServiceUnavailable, ReasonNotWritten)
		cn.rec.Addr = addr
		return
	}
	cn.p.track(up)
	defer cn.p.untrack(up)
	for _, h := range strings.Split(req.Header.Get("Connection"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			req.Header.Del(h)
		}
	}
	for _, h := range []string{"Connection", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		req.Header.Del(h)
	}
	req.RequestURI = ""
	req.Close = true
	cfg := &cn.p.cfg
	cn.client.SetDeadline(time.Time{})
	w := &countWriter{w: idleConn{up, cfg.IdleTimeout}, n: &cn.up}
	if err := req.Write(w); err != nil {
		cn.rec.Reason = ReasonClosed
		return
	}
	_, err := io.Copy(&countWriter{w: idleConn{cn.client, cfg.IdleTimeout}, n: &cn.down}, idleConn{up, cfg.IdleTimeout})
	cn.noteEnd(err)
}

// splice copies both ways until each side has finished, counting bytes.
func (cn *conn) splice(up net.Conn, client io.Reader) {
	idle := cn.p.cfg.IdleTimeout
	cn.client.SetDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(&countWriter{w: idleConn{up, idle}, n: &cn.up}, readerIdle{client, cn.client, idle})
		closeWrite(up)
		done <- err
	}()
	_, err := io.Copy(&countWriter{w: idleConn{cn.client, idle}, n: &cn.down}, idleConn{up, idle})
	closeWrite(cn.client)
	err2 := <-done
	if err == nil {
		err = err2
	}
	cn.noteEnd(err)
}

// noteEnd says in the record how an allowed connection ended, when not
// by either side closing.
func (cn *conn) noteEnd(err error) {
	var ne net.Error
	switch {
	case err == nil:
	case errors.As(err, &ne) && ne.Timeout():
		cn.rec.Reason = ReasonIdle
	default:
		cn.p.mu.Lock()
		closed := cn.p.closed
		cn.p.mu.Unlock()
		if closed {
			cn.rec.Reason = ReasonClosed
		}
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// idleConn reads and writes c with a deadline idle after each call.
type idleConn struct {
	c    net.Conn
	idle time.Duration
}

func (i idleConn) Read(b []byte) (int, error) {
	i.c.SetReadDeadline(time.Now().Add(i.idle))
	return i.c.Read(b)
}

func (i idleConn) Write(b []byte) (int, error) {
	i.c.SetWriteDeadline(time.Now().Add(i.idle))
	return i.c.Write(b)
}

// readerIdle reads r (the client's buffered reader) with c's read
// deadline moved on before each read.
type readerIdle struct {
	r    io.Reader
	c    net.Conn
	idle time.Duration
}

func (r readerIdle) Read(b []byte) (int, error) {
	r.c.SetReadDeadline(time.Now().Add(r.idle))
	return r.r.Read(b)
}

type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
