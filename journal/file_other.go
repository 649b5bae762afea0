//go:build !linux

package journal

// lowerThreadPriority does nothing: elsewhere the priority is the whole
// process's, and lowering it would slow the relay too.
func lowerThreadPriority() {}
