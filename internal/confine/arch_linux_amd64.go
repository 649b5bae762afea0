//go:build linux && amd64

package confine

import "golang.org/x/sys/unix"

// native is this build's architecture. i386 entry points (int 0x80) carry
// AUDIT_ARCH_I386 and fail the architecture check; x32 ones carry
// AUDIT_ARCH_X86_64 with the x32 bit set in the number.
var native = arch{audit: unix.AUDIT_ARCH_X86_64, x32: true, metaLegacy: []uint32{
	unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT,
}}

func seccompSupported() error { return nil }
