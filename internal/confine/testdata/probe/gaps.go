package main

// Attempts at the gaps neither Landlock nor a socket filter closes by
// itself: TCP Fast Open and listen's autobind under --allow-net, other
// processes' /proc files, file metadata outside every grant, and devices.

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

var (
	port6Denied = flag.Int("port6-denied", 0, "an IPv6 loopback TCP port that is listening and not allowed")
	clientPID   = flag.Int("client", 0, "the process that started aegis wrap (the MCP client)")
)

// xattrKeep is set on secret.txt by the test, for removexattr to remove.
const xattrKeep = "user.aegis-keep"

func init() {
	secret := func() string { return filepath.Join(*outside, "secret.txt") }
	readFile := func() string { return filepath.Join(*readDir, "file.txt") }
	proc := func(pid int, name string) func() error {
		return func() error { _, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name)); return err }
	}
	ppid := os.Getppid()
	more := map[string]func() error{
		// TCP Fast Open connects from inside the send, where Landlock's
		// connect hook does not look (landlock-lsm/linux#41).
		"tfo_sendto_denied_port":  func() error { return tfoSendto(unix.AF_INET, *portDenied) },
		"tfo_sendto_allowed_port": func() error { return tfoSendto(unix.AF_INET, *portAllowed) },
		"tfo6_sendto_denied_port": func() error { return tfoSendto(unix.AF_INET6, *port6Denied) },
		"tfo_sendmsg_denied_port": func() error {
			return withTCP(unix.AF_INET, func(fd int) error {
				_, err := unix.SendmsgN(fd, []byte("x"), nil, loopback(unix.AF_INET, *portDenied), unix.MSG_FASTOPEN)
				return err
			})
		},
		"tfo_sendmmsg_denied_port": tfoSendmmsg,
		"tfo_connect_option_denied_port": func() error {
			return withTCP(unix.AF_INET, func(fd int) error {
				if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_CONNECT, 1); err != nil {
					return err
				}
				if err := unix.Connect(fd, loopback(unix.AF_INET, *portDenied)); err != nil {
					return err
				}
				_, err := unix.Write(fd, []byte("x"))
				return err
			})
		},
		"tfo_server_option": func() error {
			return withTCP(unix.AF_INET, func(fd int) error { return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_FASTOPEN, 5) })
		},
		// listen on an unbound socket binds it to an ephemeral port
		// without the bind hook; the port then accepts connections.
		"listen_unbound":  func() error { return listenTCP(unix.AF_INET, false) },
		"listen6_unbound": func() error { return listenTCP(unix.AF_INET6, false) },
		"bind_then_listen": func() error {
			return listenTCP(unix.AF_INET, true)
		},
		"listen_unix": func() error {
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err // refused without --allow-unix
			}
			defer unix.Close(fd)
			if err := unix.Bind(fd, &unix.SockaddrUnix{Name: fmt.Sprintf("@aegis-probe-listen-%d", os.Getpid())}); err != nil {
				return fmt.Errorf("setup: %w", err)
			}
			return unix.Listen(fd, 1)
		},

		// Other processes: aegis (the parent), the MCP client, init.
		"proc_parent_environ":   proc(ppid, "environ"),
		"proc_parent_cmdline":   proc(ppid, "cmdline"),
		"proc_parent_maps":      proc(ppid, "maps"),
		"proc_parent_status":    proc(ppid, "status"),
		"proc_parent_mem":       func() error { return openClose(fmt.Sprintf("/proc/%d/mem", ppid), os.O_RDONLY) },
		"proc_parent_fd":        func() error { _, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", ppid)); return err },
		"proc_client_environ":   func() error { return proc(*clientPID, "environ")() },
		"proc_client_cmdline":   func() error { return proc(*clientPID, "cmdline")() },
		"proc_1_environ":        proc(1, "environ"),
		"proc_1_cmdline":        proc(1, "cmdline"),
		"proc_self_status":      func() error { _, err := os.ReadFile("/proc/self/status"); return err },
		"proc_thread_self_stat": func() error { _, err := os.ReadFile("/proc/thread-self/stat"); return err },
		"proc_meminfo":          func() error { _, err := os.ReadFile("/proc/meminfo"); return err },
		"process_vm_readv_parent": func() error {
			b := make([]byte, 1)
			local := []unix.Iovec{{Base: &b[0]}}
			local[0].SetLen(1)
			_, err := unix.ProcessVMReadv(ppid, local, []unix.RemoteIovec{{Base: parentText, Len: 1}}, 0)
			if errors.Is(err, unix.EFAULT) {
				return nil // the access check passed; only the address is not mapped
			}
			return err
		},
		"pidfd_getfd_parent": func() error {
			pfd, err := unix.PidfdOpen(ppid, 0)
			if err != nil {
				return fmt.Errorf("setup: %w", err)
			}
			defer unix.Close(pfd)
			fd, err := unix.PidfdGetfd(pfd, 0, 0)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		},
		"dev_kmsg": func() error { return openClose("/dev/kmsg", os.O_RDONLY|unix.O_NONBLOCK) },

		// File metadata outside every grant, and on a file granted read
		// only. Each call sets what is already there, so that an
		// unconfined run changes nothing.
		"chmod_outside":     func() error { return unix.Chmod(secret(), 0o644) },
		"fchmodat_outside":  func() error { return unix.Fchmodat(unix.AT_FDCWD, secret(), 0o644, 0) },
		"fchmodat2_outside": func() error { return rawPath(unix.SYS_FCHMODAT2, secret(), 0o644, 0) },
		"fchmod_read_only": func() error {
			return withFile(readFile(), func(fd int) error { return unix.Fchmod(fd, 0o644) })
		},
		"chown_outside": func() error {
			st, err := stat(secret())
			if err != nil {
				return err
			}
			return unix.Chown(secret(), int(st.Uid), int(st.Gid))
		},
		"lchown_outside": func() error {
			st, err := stat(secret())
			if err != nil {
				return err
			}
			return unix.Lchown(secret(), int(st.Uid), int(st.Gid))
		},
		"fchownat_opath_outside": func() error {
			st, err := stat(secret())
			if err != nil {
				return err
			}
			fd, err := unix.Open(secret(), unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("setup: %w", err)
			}
			defer unix.Close(fd)
			return unix.Fchownat(fd, "", int(st.Uid), int(st.Gid), unix.AT_EMPTY_PATH)
		},
		"setxattr_outside": func() error {
			if err := unix.Setxattr(secret(), "user.aegis", []byte("x"), 0); err != nil {
				return err
			}
			return unix.Removexattr(secret(), "user.aegis")
		},
		"lsetxattr_outside": func() error {
			if err := unix.Lsetxattr(secret(), "user.aegis", []byte("x"), 0); err != nil {
				return err
			}
			return unix.Lremovexattr(secret(), "user.aegis")
		},
		"fsetxattr_read_only": func() error {
			return withFile(readFile(), func(fd int) error {
				if err := unix.Fsetxattr(fd, "user.aegis", []byte("x"), 0); err != nil {
					return err
				}
				return unix.Fremovexattr(fd, "user.aegis")
			})
		},
		"removexattr_outside": func() error {
			if err := unix.Removexattr(secret(), xattrKeep); err != nil {
				return err
			}
			return unix.Setxattr(secret(), xattrKeep, []byte("1"), 0)
		},
		"setxattrat_outside": setxattrat,
		"utimensat_outside": func() error {
			st, err := stat(secret())
			if err != nil {
				return err
			}
			return unix.UtimesNano(secret(), []unix.Timespec{st.Atim, st.Mtim})
		},
		"futimens_read_only": func() error {
			return withFile(readFile(), func(fd int) error {
				_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0)
				return errnoErr(errno)
			})
		},
		"file_setattr_outside": fileSetattr,
		"ioctl_setflags_read_only": func() error {
			return withFile(readFile(), func(fd int) error {
				flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
				if err != nil {
					return fmt.Errorf("setup: %w", err)
				}
				return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags))
			})
		},
	}
	for name, f := range more {
		attempts[name] = f
	}
}

// parentText is an address likely mapped in the parent (the start of a
// non-PIE Go binary's text); EFAULT, which comes after the access check,
// counts as access.
const parentText = 0x400000

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func stat(path string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	return &st, nil
}

func withFile(path string, f func(fd int) error) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer unix.Close(fd)
	return f(fd)
}

func loopback(family, port int) unix.Sockaddr {
	if family == unix.AF_INET6 {
		return &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}
	}
	return &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
}

// withTCP runs f on a new TCP socket of family; the socket's own failure
// is the attempt's result (seccomp decides it).
func withTCP(family int, f func(fd int) error) error {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

func tfoSendto(family, port int) error {
	if port == 0 {
		return errors.New("setup: no listener for this family")
	}
	return withTCP(family, func(fd int) error {
		return unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, loopback(family, port))
	})
}

// tfoSendmmsg sends one message with MSG_FASTOPEN through sendmmsg(2),
// whose vector of struct mmsghdr is laid out by hand in C memory.
func tfoSendmmsg() error {
	return withTCP(unix.AF_INET, func(fd int) error {
		m, err := newCmem()
		if err != nil {
			return err
		}
		sa := make([]byte, 16) // struct sockaddr_in
		binary.LittleEndian.PutUint16(sa[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(sa[2:], uint16(*portDenied))
		copy(sa[4:], []byte{127, 0, 0, 1})
		name, err1 := m.put(sa)
		data, err2 := m.put([]byte("x"))
		iov := make([]byte, 16) // struct iovec
		binary.LittleEndian.PutUint64(iov[0:], uint64(data))
		binary.LittleEndian.PutUint64(iov[8:], 1)
		iovAddr, err3 := m.put(iov)
		hdr := make([]byte, 64) // struct mmsghdr: msghdr (56 bytes), msg_len, padding
		binary.LittleEndian.PutUint64(hdr[0:], uint64(name))
		binary.LittleEndian.PutUint32(hdr[8:], 16)
		binary.LittleEndian.PutUint64(hdr[16:], uint64(iovAddr))
		binary.LittleEndian.PutUint64(hdr[24:], 1)
		vec, err4 := m.put(hdr)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		_, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), vec, 1, unix.MSG_FASTOPEN, 0, 0)
		return errnoErr(errno)
	})
}

// listenTCP listens on a new TCP socket, bound first to port 0 if bind,
// and checks that the socket then has a port of its own.
func listenTCP(family int, bind bool) error {
	return withTCP(family, func(fd int) error {
		if bind {
			if err := unix.Bind(fd, loopback(family, 0)); err != nil {
				return err
			}
		}
		if err := unix.Listen(fd, 1); err != nil {
			return err
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			if a.Port == 0 {
				return errors.New("setup: listening without a port")
			}
		case *unix.SockaddrInet6:
			if a.Port == 0 {
				return errors.New("setup: listening without a port")
			}
		}
		return nil
	})
}

// rawPath calls nr(AT_FDCWD, path, a, b) for the calls x/sys/unix does not
// wrap.
func rawPath(nr uintptr, path string, a, b uintptr) error {
	m, err := newCmem()
	if err != nil {
		return err
	}
	p, err := m.str(path)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	_, _, errno := unix.Syscall6(nr, atFDCWD, p, a, b, 0, 0)
	return errnoErr(errno)
}

// atFDCWD is AT_FDCWD (-100) in a register; the kernel reads an int.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

// setxattrat(2) sets user.aegis through a struct xattr_args, then the
// attribute is removed.
func setxattrat() error {
	path := filepath.Join(*outside, "secret.txt")
	m, err := newCmem()
	if err != nil {
		return err
	}
	p, err1 := m.str(path)
	name, err2 := m.str("user.aegis")
	val, err3 := m.put([]byte("x"))
	args := make([]byte, 16) // struct xattr_args: value, size, flags
	binary.LittleEndian.PutUint64(args[0:], uint64(val))
	binary.LittleEndian.PutUint32(args[8:], 1)
	a, err4 := m.put(args)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	_, _, errno := unix.Syscall6(unix.SYS_SETXATTRAT, atFDCWD, p, 0, name, a, 16)
	if errno != 0 {
		return errno
	}
	return unix.Removexattr(path, "user.aegis")
}

// fileSetattr sets secret.txt's inode flags (struct file_attr, 6.17+) to
// what file_getattr reads.
func fileSetattr() error {
	const size = 24 // FILE_ATTR_SIZE_VER0
	m, err := newCmem()
	if err != nil {
		return err
	}
	p, err1 := m.str(filepath.Join(*outside, "secret.txt"))
	fa, err2 := m.put(make([]byte, size))
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if _, _, errno := unix.Syscall6(unix.SYS_FILE_GETATTR, atFDCWD, p, fa, size, 0, 0); errno != 0 {
		return fmt.Errorf("setup: file_getattr: %w", errno)
	}
	_, _, errno := unix.Syscall6(unix.SYS_FILE_SETATTR, atFDCWD, p, fa, size, 0, 0)
	return errnoErr(errno)
}

// cmem is C memory for raw system calls: an anonymous mapping the kernel
// placed, written with process_vm_writev, so that the probe never hands
// the kernel a Go pointer (it has no unsafe). It is never unmapped; the
// probe makes a few.
type cmem struct{ base, off uintptr }

func newCmem() (*cmem, error) {
	a, err := anon(4096)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	return &cmem{base: a}, nil
}

func (m *cmem) put(b []byte) (uintptr, error) {
	addr := m.base + m.off
	if m.off+uintptr(len(b)) > 4096 {
		return 0, errors.New("cmem full")
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	n, err := unix.ProcessVMWritev(os.Getpid(), local, []unix.RemoteIovec{{Base: addr, Len: len(b)}}, 0)
	if err == nil && n != len(b) {
		err = errors.New("short write: " + strconv.Itoa(n))
	}
	m.off += (uintptr(len(b)) + 7) &^ 7
	return addr, err
}

func (m *cmem) str(s string) (uintptr, error) { return m.put(append([]byte(s), 0)) }
