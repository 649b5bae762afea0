package main

import (
	"os"

	"github.com/aegisrelay/aegis/internal/floorrelay"
)

// floorRelay is the floor a relay is judged against (package floorrelay)
// around an echo child of the given response size.
func floorRelay(size int) int {
	argv, err := echoArgv(size)
	if err != nil {
		return fail(err)
	}
	if err := floorrelay.Run(argv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		return fail(err)
	}
	return 0
}
