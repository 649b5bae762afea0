package bench

import (
	"errors"

	"golang.org/x/sys/unix"
)

// fdatasync is what the journal's sync does on macOS (os.File.Sync):
// F_FULLFSYNC, which asks the drive to flush its cache too, or fsync
// where the filesystem does not support it.
func fdatasync(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EINVAL) {
		return unix.Fsync(fd)
	}
	return err
}
