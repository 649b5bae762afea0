//go:build !unix

package bench

import (
	"os"
	"time"
)

// usageOf reports nothing where the system has no rusage.
func usageOf(*os.ProcessState) (faults int64, cpu time.Duration, ok bool) { return 0, 0, false }
