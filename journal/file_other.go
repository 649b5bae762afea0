//go:build !linux

package journal

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync is fsync where there is no fdatasync(2) (os.File.Sync: on
// darwin F_FULLFSYNC, which also flushes the drive's cache).
func fdatasync(f *os.File) error { return f.Sync() }

// renameat2 reports ENOSYS: Rename falls back to a check and rename(2)
// for RenameNoReplace (safe under the log's lock) and to two renames for
// RenameExchange, as on a Linux filesystem without the flags.
func renameat2(oldpath, newpath string, mode RenameMode) error { return unix.ENOSYS }

// lowerThreadPriority does nothing: elsewhere the priority is the whole
// process's, and lowering it would slow the relay too.
func lowerThreadPriority() {}
