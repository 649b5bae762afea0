//go:build !linux

package main

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// fdatasync is fsync off Linux: the floor then includes the metadata an
// fdatasync could skip.
func fdatasync(fd int) error { return unix.Fsync(fd) }

// openPTY skips: the tests open pseudo-terminals the Linux way.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	t.Skip("pseudo-terminals are opened here only on Linux")
	return nil, nil
}

// cpuCount is the number of logical CPUs.
func cpuCount() int { return runtime.NumCPU() }
