package confine

import "errors"

// Errors of the package; classify with errors.Is.
var (
	// ErrProfile: a --allow-* value or a profile is invalid (a path that
	// does not exist, a HOST:PORT that is not one).
	ErrProfile = errors.New("confine: invalid profile")
	// ErrRefused: the kernel cannot enforce the whole profile and
	// best-effort was not asked for, or applying it failed. The target was
	// not executed.
	ErrRefused = errors.New("confine: confinement refused")
	// ErrUnreached: the command needs a file to start (its interpreter,
	// its script) that no grant covers (Reach); it was not started.
	ErrUnreached = errors.New("confine: a file the command needs is outside every grant")
	// ErrNoReport: the helper ended without saying what it enforced.
	ErrNoReport = errors.New("confine: the helper did not report")
)
