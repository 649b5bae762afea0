package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Undumpable makes the calling process non-dumpable, as ssh-agent makes
// itself: its /proc/PID files that give away its memory, environment and
// descriptors (environ, maps, mem, fd, …) become root's, and ptrace,
// process_vm_readv and pidfd_getfd on it need CAP_SYS_PTRACE. aegis wrap
// calls it before it starts the child, so that a child of the same
// unprivileged account, confined or not, reads neither the signing key
// nor the environment --clean-env withholds from it.
//
// It does not stop a child running as root, which has CAP_SYS_PTRACE:
// there only Landlock holds (under --confine no /proc grant reaches
// another process). execve makes a process dumpable again, so the helper
// and the target are unaffected.
func Undumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("confine: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
