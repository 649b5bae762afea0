//go:build linux && arm64

package confine

import "golang.org/x/sys/unix"

// native is this build's architecture; AArch32 entry points carry
// AUDIT_ARCH_ARM and fail the architecture check.
var native = arch{audit: unix.AUDIT_ARCH_AARCH64}

func seccompSupported() error { return nil }
