//go:build linux

package confine

// arch is what the filter checks about the calling convention.
type arch struct {
	audit uint32 // AUDIT_ARCH_* of native system calls
	x32   bool   // x32 calls share audit and must be told apart by number
	// metaLegacy are the architecture's older calls that change file
	// metadata (chmod, chown, lchown, utime, utimes, futimesat), beside
	// metaCalls; newer architectures such as arm64 have none.
	metaLegacy []uint32
}
