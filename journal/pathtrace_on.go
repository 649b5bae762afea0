//go:build aegispathtrace

package journal

import (
	"bufio"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A build with the tag aegispathtrace stamps each step of a record's way
// through the journal with CLOCK_MONOTONIC (the clock a driver in
// another process reads too) and the thread it ran on, and writes the
// stamps to $AEGIS_PATHTRACE at Close, one "ns tid step" line each.
// Never in the product's build (pathtrace_off.go).

type stamp struct {
	ns  int64
	tid int32
	m   pathMark
}

var (
	stamps [1 << 20]stamp
	nstamp atomic.Int64
)

func mark(m pathMark) {
	i := nstamp.Add(1) - 1
	if i >= int64(len(stamps)) {
		return
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	stamps[i] = stamp{ns: ts.Nano(), tid: int32(unix.Gettid()), m: m}
}

func dumpMarks() {
	path := os.Getenv("AEGIS_PATHTRACE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		return
	}
	w := bufio.NewWriter(f)
	n := min(nstamp.Load(), int64(len(stamps)))
	for _, s := range stamps[:n] {
		fmt.Fprintf(w, "%d %d %s\n", s.ns, s.tid, markNames[s.m])
	}
	w.Flush()
	f.Close()
}
