package approval

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the uid of the process at the other end of c, a unix
// socket, as the kernel says (SO_PEERCRED): what it was when it connected.
func peerUID(c net.Conn) (uint64, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a unix socket")
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return uint64(cred.Uid), nil
}
