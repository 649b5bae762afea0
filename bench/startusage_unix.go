//go:build unix

package bench

import (
	"os"
	"syscall"
	"time"
)

// usageOf returns what the kernel counted for an ended process and the
// descendants it waited for: its minor page faults (a page mapped on
// first touch) and its CPU time, user and system. Both are counted by
// the kernel, not timed, so a loaded machine changes them far less than
// it changes a start's elapsed time.
func usageOf(ps *os.ProcessState) (faults int64, cpu time.Duration, ok bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, 0, false
	}
	return int64(ru.Minflt), time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
