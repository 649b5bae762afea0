package httpfront

import (
	"container/list"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Defaults of the connection bounds (Config.MaxConns, MaxConnsPerPeer,
// HeaderTimeout).
const (
	DefaultMaxConns        = 1024
	DefaultMaxConnsPerPeer = 512
	DefaultHeaderTimeout   = 5 * time.Second
)

// Descriptor budget of FitDescriptors: what the process keeps for itself
// whatever the clients do, and what one session holds.
const (
	// ReservedDescriptors are kept for everything but the clients'
	// connections and the sessions' children: the log and its segments,
	// the checkpoint history, the temporary files a head file and a
	// checkpoint are written through, folders synced, the ssh-agent's
	// socket, the witnesses' connections, standard streams, the
	// runtime's poller.
	ReservedDescriptors = 64
	// SessionDescriptors bound what one session holds: its child's two
	// pipes (both ends while it starts), the child's process descriptor,
	// confinement's report pipe.
	SessionDescriptors = 8
)

// ErrDescriptors: the open-file limit cannot fit one session, a few
// connections and the reserve.
var ErrDescriptors = errors.New("httpfront: too few file descriptors")

// FitDescriptors returns the connections and sessions that fit in limit
// open files beside ReservedDescriptors: conns and sessions if they fit,
// else the sessions taking no more than half of what is left and the
// connections the rest. A connection beyond the result takes an
// unproven one's place or is refused when accepted, so the log's own
// files never go without a descriptor. It fails with
// ErrDescriptors where not even one session and two connections fit.
func FitDescriptors(limit uint64, conns, sessions int) (int, int, error) {
	const least = ReservedDescriptors + SessionDescriptors + 2
	if limit < least {
		return 0, 0, fmt.Errorf("%w: the open-file limit is %d, aegis --listen needs %d at least", ErrDescriptors, limit, least)
	}
	avail := int(min(limit-ReservedDescriptors, 1<<30))
	if conns+sessions*SessionDescriptors <= avail {
		return conns, sessions, nil
	}
	sessions = max(min(sessions, avail/2/SessionDescriptors), 1)
	conns = max(min(conns, avail-sessions*SessionDescriptors), 2)
	return conns, sessions, nil
}

// connLimit is a net.Listener that bounds the connections open at once,
// in total and per peer (peerKey), without letting a stranger's
// connections keep a client with the token out. A connection is unproven
// until a request on it passes authentication (prove); a new connection
// beyond a bound takes the place of an unproven one, which is reset: the
// oldest of its own peer at the per-peer bound, and at the total bound
// the oldest of the peer holding the most unproven connections. Only a
// connection whose way is barred by proven connections alone is reset
// as accepted, before a byte of it is read. So a client with the token
// always gets in, and keeps its connection once its first request has
// been read, however many connections strangers open and however fast;
// their connections cost a descriptor each, up to the bounds, for no
// longer than the header timeout or than the next connection needs the
// room. Running out of descriptors while accepting waits (with backoff,
// up to a second) instead of spinning, and leaves the connection waiting
// in the kernel's queue. Safe for concurrent use.
type connLimit struct {
	net.Listener
	max, perPeer int
	logf         func(format string, args ...any)
	closed       chan struct{}
	closeOnce    sync.Once

	mu      sync.Mutex
	open    int
	seq     uint64 // accepted so far: orders unproven connections by age
	peers   map[peerKey]*peerConns
	evicted int       // since the last report
	refused int       // since the last report
	said    time.Time // the last report of evictions, refusals or want of descriptors
}

// peerConns is what one peer holds: its connections open, and those of
// them unproven, oldest first.
type peerConns struct {
	n        int
	unproven list.List // of *limitedConn
}

// refusalReport is the least time between two reports of refused
// connections, so that a flood costs a line a second at most on stderr.
const refusalReport = time.Second

func newConnLimit(ln net.Listener, max, perPeer int, logf func(string, ...any)) *connLimit {
	return &connLimit{Listener: ln, max: max, perPeer: perPeer, logf: logf, closed: make(chan struct{}), peers: map[peerKey]*peerConns{}}
}

// Accept returns the next connection, making room for it if need be.
func (l *connLimit) Accept() (net.Conn, error) {
	var wait time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !outOfDescriptors(err) {
				return nil, err
			}
			// net/http would back off too, but says so on every
			// attempt; this says it once a second.
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			l.report(fmt.Sprintf("out of file descriptors: new connections wait (%v)", err))
			t := time.NewTimer(wait)
			select {
			case <-l.closed:
				t.Stop()
				return nil, net.ErrClosed
			case <-t.C:
			}
			continue
		}
		wait = 0
		lc, victim := l.admit(c, keyOf(c.RemoteAddr()))
		if victim != nil {
			refuse(victim.Conn)
		}
		if lc != nil {
			return lc, nil
		}
		refuse(c)
	}
}

// admit counts c in, unproven, and returns it with the unproven
// connection it takes the place of, if any (already counted out, for the
// caller to reset). It returns nil when a bound is reached and every
// connection in the way is proven.
func (l *connLimit) admit(c net.Conn, k peerKey) (lc, victim *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pc := l.peers[k]
	if pc == nil {
		pc = &peerConns{}
		l.peers[k] = pc
	}
	switch {
	case k.ok && pc.n >= l.perPeer:
		victim = pc.oldest()
	case l.open >= l.max:
		victim = l.heaviest()
	}
	if victim == nil && (k.ok && pc.n >= l.perPeer || l.open >= l.max) {
		l.refused++
		l.sayLocked()
		if pc.n == 0 {
			delete(l.peers, k)
		}
		return nil, nil
	}
	if victim != nil {
		l.releaseLocked(victim)
		l.peers[k] = pc // counting the victim out may have dropped it
		l.evicted++
		l.sayLocked()
	}
	l.open++
	pc.n++
	l.seq++
	lc = &limitedConn{Conn: c, l: l, k: k, seq: l.seq}
	lc.rd.set, lc.wd.set = c.SetReadDeadline, c.SetWriteDeadline
	lc.elem = pc.unproven.PushBack(lc)
	return lc, victim
}

// oldest returns the peer's oldest unproven connection, or nil.
func (pc *peerConns) oldest() *limitedConn {
	if e := pc.unproven.Front(); e != nil {
		return e.Value.(*limitedConn)
	}
	return nil
}

// heaviest returns the oldest unproven connection of the peer holding
// the most, or nil if none is unproven: a peer with one connection
// waiting on its first request keeps it while another holds more.
func (l *connLimit) heaviest() *limitedConn {
	var best *limitedConn
	bestN := 0
	for _, pc := range l.peers {
		n := pc.unproven.Len()
		if n == 0 || n < bestN {
			continue
		}
		if c := pc.oldest(); n > bestN || c.seq < best.seq {
			best, bestN = c, n
		}
	}
	return best
}

// sayLocked reports evictions and refusals, at most once per
// refusalReport. l.mu is held.
func (l *connLimit) sayLocked() {
	if now := time.Now(); now.Sub(l.said) >= refusalReport {
		l.logf("connections: %d unproven reset to make room, %d refused (proven ones in the way): %d open of --max-conns %d (--max-conns-per-peer %d)",
			l.evicted, l.refused, l.open, l.max, l.perPeer)
		l.evicted, l.refused, l.said = 0, 0, now
	}
}

// report says msg, at most once per refusalReport.
func (l *connLimit) report(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.Sub(l.said) >= refusalReport {
		l.logf("%s", msg)
		l.said = now
	}
}

// prove marks c proven: a request on it passed authentication. It
// reports false if c has already been reset to make room.
func (l *connLimit) prove(c *limitedConn) bool {
	l.mu.Lock()
	if c.released {
		l.mu.Unlock()
		return false
	}
	if c.elem == nil {
		l.mu.Unlock()
		return true
	}
	l.peers[c.k].unproven.Remove(c.elem)
	c.elem = nil
	l.mu.Unlock()
	// TCP keep-alive finds a proven client gone while its stream is
	// quiet; an unproven one ends at its header timeout anyway, so its
	// few system calls are spared where connections churn.
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		tc.SetKeepAlive(true)
	}
	return true
}

// releaseLocked counts c out, once. l.mu is held.
func (l *connLimit) releaseLocked(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	l.open--
	pc := l.peers[c.k]
	if c.elem != nil {
		pc.unproven.Remove(c.elem)
		c.elem = nil
	}
	if pc.n--; pc.n <= 0 {
		delete(l.peers, c.k)
	}
}

// Close closes the listener and ends a wait for descriptors.
func (l *connLimit) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// refuse closes a connection at once: with a TCP reset, which frees the
// kernel's side too (no TIME_WAIT), and tells the client at once rather
// than at its first read.
func refuse(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// outOfDescriptors reports whether err is the process's or the system's
// want of file descriptors (or of the kernel's memory for a socket):
// waiting frees them, unlike a closed listener.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// limitedConn is a connection counted against the bounds; it is counted
// out once, at its first Close or when another takes its place. Its
// fields but Conn, rd and wd are under l.mu. Its deadlines are rd and wd
// (deadline.go).
type limitedConn struct {
	net.Conn
	rd, wd   deadline
	l        *connLimit
	k        peerKey
	seq      uint64
	elem     *list.Element // in its peer's unproven list; nil once proven
	released bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}

// peerKey names the peer a connection counts against: an IPv4 address,
// or an IPv6 address's /64 (one host commonly holds a whole /64, so an
// address of its own per connection is no different peer). ok is false
// where the peer has no address (a unix socket, reachable by its owner
// alone): only the total bounds those.
type peerKey struct {
	p  netip.Prefix
	ok bool
}

func keyOf(a net.Addr) peerKey {
	ta, isTCP := a.(*net.TCPAddr)
	if !isTCP {
		return peerKey{}
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return peerKey{}
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, err := ip.WithZone("").Prefix(bits)
	if err != nil {
		return peerKey{}
	}
	return peerKey{p: p, ok: true}
}
