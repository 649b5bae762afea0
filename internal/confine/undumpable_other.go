//go:build !linux

package confine

// Undumpable does nothing: PR_SET_DUMPABLE is Linux's.
func Undumpable() error { return nil }
