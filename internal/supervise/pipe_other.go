//go:build !linux

package supervise

import "os"

// growPipe leaves the pipe as the system makes it: only Linux lets a
// process size its pipes.
func growPipe(*os.File) {}

// pipeCapacity bounds what a cut reads of f's pipe: more than the
// systems aegis builds for keep in one.
func pipeCapacity(*os.File) int { return 1 << 20 }
