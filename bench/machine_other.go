//go:build !linux && !darwin && !freebsd

package bench

// fsType is empty: this system's statfs does not name filesystems in a
// form the harness reads.
func fsType(dir string) string { return "" }
