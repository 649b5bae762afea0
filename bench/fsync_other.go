//go:build !linux

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// fdatasync is fsync where the system has no fdatasync to call: the floor
// then includes the metadata an fdatasync could skip, as the journal's
// own sync does on such a system.
func fdatasync(fd int) error { return unix.Fsync(fd) }

// threadCPU reports ok false: there is no portable per-thread CPU time,
// and the process's would count every other goroutine's work. The figure
// that uses it is then reported as not measured.
func threadCPU() (cpu time.Duration, ok bool) { return 0, false }
