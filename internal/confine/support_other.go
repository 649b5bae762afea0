//go:build !linux

package confine

import (
	"fmt"
	"runtime"
)

// supported refuses: Landlock and seccomp are Linux's, and a child that
// is not confined as the record would say must not run at all.
func supported() error {
	return fmt.Errorf("%w: --confine needs Linux (Landlock and seccomp), not %s; recording and --policy work without it", ErrRefused, runtime.GOOS)
}
