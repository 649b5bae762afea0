package journal

import (
	"os"

	"golang.org/x/sys/unix"
)

func fdatasync(f *os.File) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := sc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// renameat2 renames with RENAME_NOREPLACE or RENAME_EXCHANGE.
func renameat2(oldpath, newpath string, mode RenameMode) error {
	flags := uint(unix.RENAME_NOREPLACE)
	if mode == RenameExchange {
		flags = unix.RENAME_EXCHANGE
	}
	return unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, flags)
}

// lowerThreadPriority puts the calling thread at the lowest CPU priority
// (nice 19). On Linux a thread has a priority of its own; the caller
// locks its goroutine to the thread first.
func lowerThreadPriority() {
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}
