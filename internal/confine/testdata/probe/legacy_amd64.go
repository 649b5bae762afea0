package main

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// amd64's older entry points, which newer architectures lack.
func init() {
	secret := func() string { return filepath.Join(*outside, "secret.txt") }
	attempts["chmod_legacy_outside"] = func() error { return rawPath1(unix.SYS_CHMOD, secret(), 0o644) }
	attempts["utimes_legacy_outside"] = func() error { return rawPath1(unix.SYS_UTIMES, secret(), 0) }
}

// rawPath1 calls nr(path, a).
func rawPath1(nr uintptr, path string, a uintptr) error {
	m, err := newCmem()
	if err != nil {
		return err
	}
	p, err := m.str(path)
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall(nr, p, a, 0)
	return errnoErr(errno)
}
