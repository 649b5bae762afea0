//go:build !linux

package main

import "runtime"

// kernelCannotConfine: --confine refuses on every system but Linux.
func kernelCannotConfine() string { return "--confine is Linux's; this is " + runtime.GOOS }
