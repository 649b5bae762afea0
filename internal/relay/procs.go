package relay

import (
	"os"
	"runtime"
	"sync"
)

// A pump whose descriptor is outside Go's network poller (a blocking
// stdin or stdout, as a client usually hands wrap) blocks in read(2) or
// write(2) while it holds its scheduler slot (a P). With as many slots as
// CPUs and the other pump running, the runtime's monitor thread (sysmon)
// finds no idle slot, takes the blocked one away at its next 20 µs tick
// and hands it to another thread; and each such take keeps the monitor
// from backing off, so that it wakes every 20 µs while messages flow.
// Those hand-offs, wake-ups and sleeps are a large part of the CPU a
// relayed message costs. One spare slot for each pump that blocks leaves
// an idle slot, and the monitor then leaves a blocked call alone. The
// kernel still shares the same CPUs among the threads that run.
//
// Setting GOMAXPROCS stops the runtime from following a change of the
// process's CPU limit; a user who set the variable keeps their value.

var (
	procsMu sync.Mutex
	procsIn bool // a slot was added for a pump that reads a blocking descriptor
	procsTo bool // and for one that writes one
)

// spareProc adds a scheduler slot for a pump that blocks in system calls
// on f (up: Upstream's source; otherwise Downstream's destination), at
// most one per direction in a process, unless the user set GOMAXPROCS.
func spareProc(f any, up bool) {
	if !blockingFile(f) || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	procsMu.Lock()
	defer procsMu.Unlock()
	done := &procsTo
	if up {
		done = &procsIn
	}
	if *done {
		return
	}
	*done = true
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
}

// blockingFile reports whether f is an *os.File whose descriptor is in
// blocking mode: a read or write of it blocks a thread, not only a
// goroutine.
func blockingFile(f any) bool {
	file, ok := f.(*os.File)
	return ok && file != nil && fdBlocks(file)
}
