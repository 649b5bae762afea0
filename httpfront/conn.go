package httpfront

import (
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
// connections the rest. A connection beyond the result is refused when accepted, so the
// log's own files never go without a descriptor. It fails with
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
// in total and per peer (peerKey): a connection beyond either bound is
// closed as soon as it is accepted, before a byte of it is read, so that
// it costs a descriptor for no longer than that. Running out of
// descriptors while accepting waits (with backoff, up to a second)
// instead of spinning, and leaves the connection waiting in the kernel's
// queue. Safe for concurrent use.
type connLimit struct {
	net.Listener
	max, perPeer int
	logf         func(format string, args ...any)
	closed       chan struct{}
	closeOnce    sync.Once

	mu      sync.Mutex
	open    int
	peers   map[peerKey]int
	refused int       // since the last report
	said    time.Time // the last report of refusals or of want of descriptors
}

// refusalReport is the least time between two reports of refused
// connections, so that a flood costs a line a second at most on stderr.
const refusalReport = time.Second

func newConnLimit(ln net.Listener, max, perPeer int, logf func(string, ...any)) *connLimit {
	return &connLimit{Listener: ln, max: max, perPeer: perPeer, logf: logf, closed: make(chan struct{}), peers: map[peerKey]int{}}
}

// Accept returns the next connection within the bounds.
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
		k := keyOf(c.RemoteAddr())
		if lc := l.admit(c, k); lc != nil {
			return lc, nil
		}
		refuse(c)
	}
}

// admit counts c in, or returns nil when a bound is reached.
func (l *connLimit) admit(c net.Conn, k peerKey) net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || k.ok && l.peers[k] >= l.perPeer {
		l.refused++
		if now := time.Now(); now.Sub(l.said) >= refusalReport {
			l.logf("refused %d connections: %d open of --max-conns %d (--max-conns-per-peer %d)", l.refused, l.open, l.max, l.perPeer)
			l.refused, l.said = 0, now
		}
		return nil
	}
	l.open++
	if k.ok {
		l.peers[k]++
	}
	return &limitedConn{Conn: c, l: l, k: k}
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

func (l *connLimit) release(k peerKey) {
	l.mu.Lock()
	l.open--
	if k.ok {
		if l.peers[k]--; l.peers[k] <= 0 {
			delete(l.peers, k)
		}
	}
	l.mu.Unlock()
}

// Close closes the listener and ends a wait for descriptors.
func (l *connLimit) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// refuse closes a connection over a bound at once: with a TCP reset,
// which frees the kernel's side too (no TIME_WAIT), and tells the client
// at once rather than at its first read.
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

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	l    *connLimit
	k    peerKey
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.k) })
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
