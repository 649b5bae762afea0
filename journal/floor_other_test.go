//go:build !linux

package journal

import "golang.org/x/sys/unix"

// floorSync is the floor's sync: the call the journal makes (file_other.go).
func floorSync(fd int) error { return unix.Fsync(fd) }
