package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync retries after EINTR, which loses nothing; any other error is
// the caller's to judge.
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
