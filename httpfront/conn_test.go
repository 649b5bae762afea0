package httpfront

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestFitDescriptors: the bounds fit the open-file limit beside the
// reserve, sessions taking half of what is left at most; a limit that
// fits nothing is ErrDescriptors.
func TestFitDescriptors(t *testing.T) {
	tests := []struct {
		limit                   uint64
		conns, sessions         int
		wantConns, wantSessions int
		wantErr                 bool
	}{
		{1 << 20, 1024, 256, 1024, 256, false},
		{4096, 1024, 256, 1024, 256, false},
		{1024, 1024, 256, 480, 60, false},
		{200, 1024, 256, 72, 8, false},
		{200, 10, 2, 10, 2, false},
		{ReservedDescriptors + SessionDescriptors + 2, 1024, 256, 2, 1, false},
		{ReservedDescriptors + SessionDescriptors + 1, 1024, 256, 0, 0, true},
		{0, 1024, 256, 0, 0, true},
	}
	for _, tt := range tests {
		c, s, err := FitDescriptors(tt.limit, tt.conns, tt.sessions)
		if c != tt.wantConns || s != tt.wantSessions || errors.Is(err, ErrDescriptors) != tt.wantErr {
			t.Errorf("FitDescriptors(%d, %d, %d) = %d, %d, %v; want %d, %d, error %v", tt.limit, tt.conns, tt.sessions, c, s, err, tt.wantConns, tt.wantSessions, tt.wantErr)
		}
		if err == nil && uint64(c+s*SessionDescriptors+ReservedDescriptors) > tt.limit {
			t.Errorf("FitDescriptors(%d, …) = %d, %d: over the limit", tt.limit, c, s)
		}
	}
}

// TestKeyOf: a peer is an IPv4 address or an IPv6 /64; an IPv4-mapped
// IPv6 address is its IPv4 one; a unix socket's peer is none.
func TestKeyOf(t *testing.T) {
	tests := []struct {
		a, b net.Addr
		same bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}, &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 2}, true},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1")}, &net.TCPAddr{IP: net.ParseIP("192.0.2.2")}, false},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1")}, &net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1")}, true},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::1")}, &net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::9")}, true},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::1")}, &net.TCPAddr{IP: net.ParseIP("2001:db8:1:3::1")}, false},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}, &net.TCPAddr{IP: net.ParseIP("fe80::2"), Zone: "eth1"}, true},
	}
	for _, tt := range tests {
		ka, kb := keyOf(tt.a), keyOf(tt.b)
		if !ka.ok || !kb.ok || (ka == kb) != tt.same {
			t.Errorf("keyOf(%v) == keyOf(%v): %v (%v, %v); want %v", tt.a, tt.b, ka == kb, ka, kb, tt.same)
		}
	}
	if k := keyOf(&net.UnixAddr{Name: "@", Net: "unix"}); k.ok {
		t.Errorf("keyOf(unix) = %v; want no peer", k)
	}
}

// TestConnLimit: over real sockets, connections beyond the per-peer or
// the total bound are reset as accepted, and a slot closed is free again.
func TestConnLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimit(ln, 3, 2, t.Logf)
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	// dial returns nil for a connection reset as it opened.
	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if errors.Is(err, syscall.ECONNRESET) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// reset reports whether the server reset c (rather than keeping it).
	reset := func(c net.Conn) bool {
		if c == nil {
			return true
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !errors.Is(err, io.EOF) && !isTimeout(err)
	}
	steps := []struct {
		from string
		kept bool
	}{
		{"127.0.0.1", true},
		{"127.0.0.1", true},
		{"127.0.0.1", false}, // the peer's bound
		{"127.0.0.2", true},
		{"127.0.0.3", false}, // the total
	}
	var kept []net.Conn
	for i, st := range steps {
		c := dial(st.from)
		if st.kept {
			kept = append(kept, <-accepted)
		}
		if got := !reset(c); got != st.kept {
			t.Errorf("step %d: connection from %s kept %v; want %v", i, st.from, got, st.kept)
		}
	}
	kept[0].Close() // a slot of 127.0.0.1, and of the total, free again
	c := dial("127.0.0.1")
	<-accepted
	if reset(c) {
		t.Errorf("a connection after one closed: reset; want kept")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
