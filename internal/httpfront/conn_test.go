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

// TestConnLimit: over real sockets, a connection beyond the per-peer
// bound takes the place of its peer's oldest unproven connection, one
// beyond the total that of the peer holding the most unproven (the
// oldest on a tie), and one whose way is barred by proven connections
// alone is reset as accepted; a slot closed is free again.
func TestConnLimit(t *testing.T) {
	type step struct {
		from   string
		prove  bool
		kept   bool
		resets []int // the steps whose connections this one resets
	}
	tests := []struct {
		name          string
		max, perPeer  int
		steps         []step
		closeThenDial int // a step whose connection is closed, then one more from its peer is kept (-1: none)
	}{
		{"unproven make room", 4, 3, []step{
			{"127.0.0.1", false, true, nil},
			{"127.0.0.1", false, true, nil},
			{"127.0.0.1", false, true, nil},
			{"127.0.0.1", false, true, []int{0}},  // its peer's bound: its oldest
			{"127.0.0.2", true, true, nil},        // room
			{"127.0.0.3", false, true, []int{1}},  // the total: the peer with the most
			{"127.0.0.3", false, true, []int{2}},  // 127.0.0.1 still holds two
			{"127.0.0.3", false, true, []int{5}},  // now 127.0.0.3 does
			{"127.0.0.4", false, true, []int{6}},  // 127.0.0.3 still holds two
			{"127.0.0.4", false, true, []int{3}},  // one each: the oldest
			{"127.0.0.2", false, true, []int{8}},  // 127.0.0.4 holds two; not the proven one
			{"127.0.0.2", false, true, []int{7}},  // one each: the oldest
			{"127.0.0.2", false, true, []int{10}}, // its peer's bound: its oldest unproven
			{"127.0.0.5", false, true, []int{11}}, // 127.0.0.2 holds two unproven
		}, -1},
		{"proven in the way", 3, 2, []step{
			{"127.0.0.1", true, true, nil},
			{"127.0.0.1", true, true, nil},
			{"127.0.0.1", false, false, nil}, // its peer's bound, all proven
			{"127.0.0.2", false, true, nil},
			{"127.0.0.3", false, true, []int{3}}, // the total: the one unproven
			{"127.0.0.3", false, true, []int{4}},
			{"127.0.0.2", true, true, []int{5}},
			{"127.0.0.3", false, false, nil}, // the total, all proven
			{"127.0.0.1", false, false, nil},
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l := newConnLimit(ln, tt.max, tt.perPeer, t.Logf)
			defer l.Close()
			accepted := make(chan *limitedConn, 16)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						close(accepted)
						return
					}
					accepted <- c.(*limitedConn)
				}
			}()
			dial := func(from string) net.Conn {
				t.Helper()
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
				c, err := d.Dial("tcp", ln.Addr().String())
				if errors.Is(err, syscall.ECONNRESET) {
					return nil // reset as it opened
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			clients := make([]net.Conn, len(tt.steps))
			servers := make([]*limitedConn, len(tt.steps))
			gone := make([]bool, len(tt.steps))
			for i, st := range tt.steps {
				clients[i] = dial(st.from)
				if !st.kept {
					if !wasReset(clients[i]) {
						t.Fatalf("step %d: a connection from %s kept; want it reset as accepted", i, st.from)
					}
					gone[i] = true
					continue
				}
				select {
				case servers[i] = <-accepted:
				case <-time.After(5 * time.Second):
					t.Fatalf("step %d: a connection from %s not accepted in 5s; want it kept", i, st.from)
				}
				if st.prove && !l.prove(servers[i]) {
					t.Fatalf("step %d: prove = false; want true", i)
				}
				for _, j := range st.resets {
					gone[j] = true
					if !wasReset(clients[j]) {
						t.Errorf("step %d: the connection of step %d not reset", i, j)
					}
				}
				for j := range i + 1 {
					l.mu.Lock()
					released := servers[j] != nil && servers[j].released
					l.mu.Unlock()
					if servers[j] != nil && released != gone[j] {
						t.Errorf("after step %d: the connection of step %d counted out %v; want %v", i, j, released, gone[j])
					}
				}
			}
			for j, c := range servers {
				if c != nil && gone[j] && l.prove(c) {
					t.Errorf("prove(the connection of step %d, reset) = true; want false", j)
				}
			}
			if i := tt.closeThenDial; i >= 0 {
				servers[i].Close()
				c := dial(tt.steps[i].from)
				<-accepted
				if isReset(c, 200*time.Millisecond) {
					t.Errorf("a connection after one closed: reset; want kept")
				}
			}
		})
	}
}

// wasReset reports whether the server reset c within 5s.
func wasReset(c net.Conn) bool {
	return isReset(c, 5*time.Second)
}

// isReset reports whether the server reset c within d (rather than
// keeping it).
func isReset(c net.Conn, d time.Duration) bool {
	if c == nil {
		return true
	}
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, io.EOF) && !isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
