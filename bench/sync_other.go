//go:build !linux && !darwin

package bench

import "golang.org/x/sys/unix"

// fdatasync is fsync, what the journal's sync does on this system
// (os.File.Sync): the floor then includes the metadata an fdatasync could
// skip.
func fdatasync(fd int) error { return unix.Fsync(fd) }
