package httpfront

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// acceptedPair is a loopback TCP connection: the server's side as the
// front accepts it (a limitedConn) and the client's.
func acceptedPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimit(ln, 4, 4, t.Logf)
	t.Cleanup(func() { l.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	if _, ok := server.(*limitedConn); !ok {
		t.Fatalf("accepted %T; want *limitedConn", server)
	}
	return server, client
}

// TestDeadlineMovedLater: a read deadline moved later ends a read at the
// later one, not at the earlier one the connection was given first; one
// moved earlier ends a read in progress at once; one that has passed and
// is then cleared leaves the next read to wait for the peer.
func TestDeadlineMovedLater(t *testing.T) {
	server, client := acceptedPair(t)
	buf := make([]byte, 8)

	start := time.Now()
	server.SetReadDeadline(start.Add(20 * time.Millisecond))
	server.SetReadDeadline(start.Add(300 * time.Millisecond))
	_, err := server.Read(buf)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v; want a deadline error", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("read ended after %v; want no earlier than the deadline last asked for, 300ms", el)
	}

	// Moved earlier while a read waits (net/http's abortPendingRead).
	server.SetReadDeadline(time.Time{})
	ended := make(chan error, 1)
	go func() {
		_, err := server.Read(buf)
		ended <- err
	}()
	// The read is under way or about to be: either way it ends at the
	// deadline, and not at the 30 s the test allows.
	server.SetReadDeadline(time.Now())
	select {
	case err := <-ended:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read under a deadline moved to now: %v; want a deadline error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read went on past a deadline moved earlier")
	}

	// Passed, then cleared: the next read takes what the peer sends.
	server.SetReadDeadline(time.Time{})
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(server, buf[:4]); err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read after the deadline was cleared: %q, %v; want ping", buf[:n], err)
	}
}

// TestDeadlineWriteMovedLater: a write to a peer that reads nothing ends
// at the write deadline last asked for, having written what the peer's
// buffers took, and a write whose deadline was cleared waits for the
// peer and then writes all.
func TestDeadlineWriteMovedLater(t *testing.T) {
	server, client := acceptedPair(t)
	big := make([]byte, 16<<20) // more than loopback's buffers hold
	start := time.Now()
	server.SetWriteDeadline(start.Add(20 * time.Millisecond))
	server.SetWriteDeadline(start.Add(300 * time.Millisecond))
	n, err := server.Write(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) || n == 0 || n == len(big) {
		t.Fatalf("write to a peer reading nothing: %d bytes, %v; want some bytes and a deadline error", n, err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("write ended after %v; want no earlier than the deadline last asked for, 300ms", el)
	}

	server.SetWriteDeadline(time.Time{})
	read := make(chan int64, 1)
	go func() {
		got, _ := io.Copy(io.Discard, client)
		read <- got
	}()
	if m, err := server.Write(big); err != nil || m != len(big) {
		t.Fatalf("write after the deadline was cleared: %d bytes, %v; want %d", m, err, len(big))
	}
	server.Close()
	if got := <-read; got != int64(n+len(big)) {
		t.Fatalf("the peer read %d bytes; want %d", got, n+len(big))
	}
}
