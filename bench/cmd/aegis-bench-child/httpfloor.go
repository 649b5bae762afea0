package main

import (
	"net"
	"os"

	"github.com/aegisrelay/aegis/internal/httpfloor"
)

// httpFloor is the floor an HTTP front is judged against (package
// httpfloor) around an echo child of the given response size, serving at
// addr until the harness ends it.
func httpFloor(addr string, size int) int {
	argv, err := echoArgv(size)
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(err)
	}
	if err := httpfloor.Serve(ln, argv, os.Stderr); err != nil {
		return fail(err)
	}
	return 0
}
