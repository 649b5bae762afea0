//go:build !linux

package confine

import "fmt"

// Preview refuses: Landlock and seccomp are Linux's.
func Preview(p Profile, argv []string) (*Enforced, error) {
	return nil, fmt.Errorf("%w: --confine needs Linux (Landlock and seccomp)", ErrRefused)
}
