//go:build unix

package relay

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdBlocks reports whether f's descriptor lacks O_NONBLOCK.
func fdBlocks(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	blocks := false
	rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		blocks = err == nil && fl&unix.O_NONBLOCK == 0
	})
	return blocks
}
