package main

import (
	"fmt"
	"runtime"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// kernelCannotConfine says why this kernel cannot run a bare --confine
// (Landlock ABI 3 or later, and seccomp filters), asking the kernel itself
// rather than aegis: a test skips on what the machine lacks, never on
// what the code under test reports. "" when it can.
func kernelCannotConfine() string {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return "aegis filters system calls on amd64 and arm64 only, not " + runtime.GOARCH
	}
	if abi, err := ll.LandlockGetABIVersion(); err != nil || abi < 3 {
		return fmt.Sprintf("this kernel's Landlock ABI is %d (%v); a bare --confine needs 3", abi, err)
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return fmt.Sprintf("this kernel has no seccomp: %v", err)
	}
	return ""
}
