//go:build !linux

package bench

import "time"

// threadCPU reports ok false: there is no portable per-thread CPU time,
// and the process's would count every other goroutine's work. The figure
// that uses it is then reported as not measured.
func threadCPU() (cpu time.Duration, ok bool) { return 0, false }
