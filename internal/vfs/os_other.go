//go:build !linux

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync is fsync where there is no fdatasync(2) (os.File.Sync: on
// darwin F_FULLFSYNC, which also flushes the drive's cache).
func fdatasync(f *os.File) error { return f.Sync() }

// renameat2 reports ENOSYS: Rename falls back to a check and rename(2)
// for RenameNoReplace and to errors.ErrUnsupported for RenameExchange, as
// on a Linux file system without the flags.
func renameat2(oldpath, newpath string, mode RenameMode) error { return unix.ENOSYS }
