package relay

import (
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// readable returns a function that reports whether r has bytes to read
// right now (FIONREAD, which Linux calls TIOCINQ; SIOCINQ on sockets), or
// nil where it cannot tell.
func readable(r io.Reader) func() bool {
	sc, ok := r.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	n := 0
	probe := func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }
	return func() bool { // made once per pump: a call allocates nothing
		n = 0
		rc.Control(probe)
		return n > 0
	}
}
