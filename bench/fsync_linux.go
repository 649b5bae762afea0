package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// fdatasync is the sync the journal makes per commit group: the data and
// the metadata needed to read it back, such as the file's size.
func fdatasync(fd int) error { return unix.Fdatasync(fd) }

// threadCPU is the calling thread's CPU time, user + system; ok is false
// when it cannot be read.
func threadCPU() (cpu time.Duration, ok bool) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
