//go:build !linux

package confine

import (
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/internal/exitcode"
)

// ExitRefused is the helper's exit status when it refuses to exec.
const ExitRefused = exitcode.Confinement

// Main refuses: Landlock and seccomp are Linux's. Nothing is executed.
func Main(args []string) int {
	fmt.Fprintf(os.Stderr, "aegis: %s: --confine needs Linux (Landlock and seccomp); nothing was run\n", HelperCommand)
	return ExitRefused
}
