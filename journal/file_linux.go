package journal

import "golang.org/x/sys/unix"

// lowerThreadPriority puts the calling thread at the lowest CPU priority
// (nice 19). On Linux a thread has a priority of its own; the caller
// locks its goroutine to the thread first.
func lowerThreadPriority() {
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}
