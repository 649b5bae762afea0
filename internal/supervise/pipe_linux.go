package supervise

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is what the child's pipes are grown to: Linux's default
// pipe-max-size, what an unprivileged process may ask for. A 1 MiB
// response then moves in one or two reads instead of sixteen, which is
// most of the relay step's time for large frames (bench/copystep measures
// it).
const pipeSize = 1 << 20

// growPipe asks for a pipeSize buffer. Where it is refused (a lower
// pipe-max-size, or the user's pipe-user-pages-soft spent) the pipe keeps
// its 64 KiB, which only costs speed. It uses SyscallConn, not f.Fd():
// Fd would put the pipe in blocking mode, out of the netpoller.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}

// pipeCapacity is the most f's pipe can hold (F_GETPIPE_SZ), or pipeSize
// where it cannot tell.
func pipeCapacity(f *os.File) int {
	n := pipeSize
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			if c, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && c > 0 {
				n = c
			}
		})
	}
	return n
}
