package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// apply enforces the plan on the calling OS thread, which the caller has
// locked and never unlocks: no_new_privs, then Landlock, then seccomp. Each
// layer is checked after it is applied.
func (pl *plan) apply() error {
	// Landlock and an unprivileged seccomp filter both require it; it also
	// keeps the target from gaining privilege through a setuid execve.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if pl.abi > 0 {
		if err := pl.pin(); err != nil {
			return err
		}
		if err := pl.applyLandlock(); err != nil {
			return err
		}
	}
	if pl.seccomp {
		if err := installFilter(pl.filter.program(native)); err != nil {
			return err
		}
		mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
		if err != nil || mode != 2 {
			return fmt.Errorf("seccomp: the filter does not show as installed (PR_GET_SECCOMP = %d, %v)", mode, err)
		}
	}
	return nil
}

// pin opens each of the plan's pins with O_PATH and without close-on-exec,
// so that the target inherits the descriptors and they are never closed.
//
// A Landlock rule holds the inode it was made on. procfs makes a new inode
// each time it looks a name up again, and it looks it up again once the
// dentry has been evicted (memory pressure, drop_caches): a rule on
// /proc/PID or /proc/meminfo would then match nothing, and the target would
// lose what it was granted. A descriptor keeps the dentry, and with it the
// inode, for as long as the target lives. The descriptors grant nothing
// the rules do not: O_PATH opens no content, and every path is granted.
func (pl *plan) pin() error {
	for _, p := range pl.pins {
		if _, err := unix.Open(p, unix.O_PATH, 0); err != nil {
			return fmt.Errorf("landlock: holding %s: %w", p, err)
		}
	}
	return nil
}

// applyLandlock builds the ruleset for exactly the plan's config (never in
// best-effort mode: go-landlock then fails rather than enforcing less) and
// restricts this thread with it.
func (pl *plan) applyLandlock() error {
	rules := make([]landlock.Rule, 0, len(pl.fs)+len(pl.connect))
	for _, g := range pl.fs {
		rules = append(rules, landlock.PathAccess(g.access, g.path))
	}
	for _, port := range pl.connect {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	fd, flags, err := pl.landlock.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock ABI %d: %w", pl.abi, err)
	}
	if fd < 0 {
		return fmt.Errorf("landlock ABI %d: the library built no ruleset", pl.abi)
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	// A ruleset that handles read_dir and has no rule for "/" must deny
	// listing "/": if it does not, Landlock is not in force, whatever the
	// calls above returned.
	if pl.landlock.HandledAccessFS&ll.AccessFSReadDir != 0 && !pl.grants("/", ll.AccessFSReadDir) {
		fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
			return errors.New("landlock: restrict_self succeeded but \"/\" can still be listed")
		}
		if !errors.Is(err, unix.EACCES) {
			return fmt.Errorf("landlock: checking the restriction on \"/\": %w", err)
		}
	}
	return nil
}

func (pl *plan) grants(path string, a landlock.AccessFSSet) bool {
	for _, g := range pl.fs {
		if g.path == path && g.access&a == a {
			return true
		}
	}
	return false
}

// installFilter installs prog as a seccomp filter on the calling thread.
//
// The kernel takes a struct sock_fprog by address, and aegis has no unsafe:
// no Go pointer is ever turned into an integer here. Instead the program is
// written into an anonymous mapping the kernel places (outside the Go heap,
// so the garbage collector neither moves nor frees it), through
// process_vm_writev on this very process, and that mapping's address, an
// integer the kernel returned, is what seccomp(2) is given. The mapping is
// dropped by execve.
func installFilter(prog []unix.SockFilter) error {
	const hdr = 16 // struct sock_fprog: u16 len, padding, u64 filter pointer
	size := hdr + 8*len(prog)
	addr, _, errno := unix.Syscall6(unix.SYS_MMAP, 0, uintptr(size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	if errno != 0 {
		return fmt.Errorf("seccomp: mmap: %w", errno)
	}
	buf := make([]byte, size)
	binary.LittleEndian.PutUint16(buf[0:], uint16(len(prog)))
	binary.LittleEndian.PutUint64(buf[8:], uint64(addr)+hdr)
	for i, in := range prog {
		b := buf[hdr+8*i:]
		binary.LittleEndian.PutUint16(b[0:], in.Code)
		b[2], b[3] = in.Jt, in.Jf
		binary.LittleEndian.PutUint32(b[4:], in.K)
	}
	if err := writeOwnMemory(addr, buf); err != nil {
		return fmt.Errorf("seccomp: writing the filter: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, addr); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}

// writeOwnMemory copies b to addr in this process: process_vm_writev, or
// /proc/self/mem where that system call is not permitted.
func writeOwnMemory(addr uintptr, b []byte) error {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: addr, Len: len(b)}}
	n, err := unix.ProcessVMWritev(os.Getpid(), local, remote, 0)
	if err == nil && n == len(b) {
		return nil
	}
	f, ferr := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if ferr != nil {
		return fmt.Errorf("process_vm_writev: %v (%d of %d bytes); /proc/self/mem: %w", err, n, len(b), ferr)
	}
	defer f.Close()
	if _, werr := f.WriteAt(b, int64(addr)); werr != nil {
		return fmt.Errorf("process_vm_writev: %v; /proc/self/mem: %w", err, werr)
	}
	return nil
}
