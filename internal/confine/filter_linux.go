//go:build linux

package confine

import (
	"golang.org/x/sys/unix"
)

// netFilter is the seccomp filter's configuration: what it lets through
// besides AF_UNIX, and what else it refuses.
//
// With neither tcp nor udp the filter denies the network: socket(2) for any
// family but AF_UNIX (below) kills the process (SIGSYS), except AF_NETLINK, which
// fails with EAFNOSUPPORT because getaddrinfo opens it and copes.
//
// With tcp or udp, AF_INET and AF_INET6 are decided by type and protocol:
// a TCP stream socket (protocol 0 or IPPROTO_TCP) is allowed if tcp, a UDP
// datagram socket (0 or IPPROTO_UDP) if udp; any other stream protocol
// (MPTCP, SCTP, SMC, which Landlock's TCP rules do not cover) fails with
// EPROTONOSUPPORT, so that MPTCP-first callers such as Go's net.Listen
// fall back to TCP; anything else (raw, ICMP, UDP when closed, TCP when
// only udp is open) fails with EPERM rather than killing, because glibc's
// getaddrinfo opens UDP sockets to sort addresses and must survive it.
// Every other family still kills.
//
// socket(2) of AF_UNIX fails with EACCES unless unix (--allow-unix):
// before Landlock ABI 9 nothing else stops a unix socket from connecting
// to any pathname socket the child can name (an ssh-agent, whose key
// would sign for the child; a container runtime; the session bus), and
// receiving descriptors over it. EACCES, not a kill, because libraries
// try such sockets and cope (glibc's nscd client and syslog, a logger's
// journald socket). socketpair(2) stays allowed: the pair is connected
// only to itself, so it reaches nothing outside, and runtimes make one at
// start (Python's asyncio self-pipe, Node's child_process stdio).
//
// In every mode socketpair(2) is allowed for AF_UNIX only (else kill), and
// io_uring_setup, io_uring_enter and io_uring_register fail with ENOSYS:
// a ring issues socket and connect from memory seccomp cannot read, and
// libuv probes io_uring_setup at start-up and falls back when it fails.
//
// In every mode TCP Fast Open fails with EOPNOTSUPP, what a kernel with
// Fast Open switched off answers, so that callers fall back to connect:
// sendto, sendmsg and sendmmsg with MSG_FASTOPEN, which connect from
// inside the send where Landlock's connect hook never sees it, and
// setsockopt(IPPROTO_TCP) of TCP_FASTOPEN, TCP_FASTOPEN_CONNECT,
// TCP_FASTOPEN_KEY and TCP_FASTOPEN_NO_COOKIE. A socket received over a
// unix socket is subject to the same checks.
//
// With noListen, listen(2) fails with EACCES, Landlock's answer to a bind
// it does not allow: listen on an unbound TCP socket binds it to an
// ephemeral port without the bind hook, so it would accept connections no
// rule grants. seccomp cannot see a descriptor's family, so listen on a
// unix socket is refused too.
//
// With noMeta, the calls that change a file's mode, owner, extended
// attributes, times or inode flags fail with EPERM, what they answer a
// process that does not own the file: Landlock handles none of them, so
// they would work on every file the child can name, granted or not. See
// metaCalls and arch.metaLegacy for the list, and the ioctls in
// setFlagsIoctls.
//
// With noSetns, setns(2) fails with EPERM: a child in a network
// namespace of its own (--allow-egress) that holds CAP_SYS_ADMIN, a root
// child, could otherwise join another namespace, aegis's own, through a
// /proc/PID/ns/net it can open.
type netFilter struct {
	tcp, udp bool
	unix     bool
	noListen bool
	noMeta   bool
	noSetns  bool
}

// metaCalls are the system calls that change file metadata on every
// architecture; arch.metaLegacy adds the older entry points one has.
var metaCalls = [...]uint32{
	unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2,
	unix.SYS_FCHOWN, unix.SYS_FCHOWNAT,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_REMOVEXATTRAT,
	unix.SYS_UTIMENSAT, unix.SYS_FILE_SETATTR,
}

// setFlagsIoctls set inode flags (immutable, append-only, …) on an open
// file: FS_IOC_SETFLAGS, its 32-bit form, and FS_IOC_FSSETXATTR.
var setFlagsIoctls = [...]uint32{0x40086602, 0x40046602, 0x401c5820}

// tcpFastOpenOpts are the IPPROTO_TCP options of TCP Fast Open.
var tcpFastOpenOpts = [...]uint32{unix.TCP_FASTOPEN, unix.TCP_FASTOPEN_CONNECT, unix.TCP_FASTOPEN_KEY, unix.TCP_FASTOPEN_NO_COOKIE}

// seccomp_data offsets (include/uapi/linux/seccomp.h): nr, arch, then
// instruction_pointer and args[6] as u64. Loads are 32-bit and native
// endian; on the little-endian architectures supported here, the low half
// of args[i] is at 16+8i. Only the low half is ever compared: the kernel
// truncates these arguments to int, so the high half is not part of their
// value (comparing it would let 1<<32|AF_INET pass as "not AF_INET").
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	offArg2 = 32
	offArg3 = 40
)

// x32SyscallBit marks x32 system calls on x86-64 (same AUDIT_ARCH).
const x32SyscallBit = 0x40000000

// Return values of the filter.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// program assembles the filter for an architecture. It is a pure function
// so that its decisions are tested by evaluating it (filter_test.go). It
// is one listing of the filter's instructions, in the order the kernel
// runs them, so that it reads as the program it emits.
func (f netFilter) program(a arch) []unix.SockFilter {
	var asm assembler
	asm.load(offArch)
	asm.jeq(a.audit, "", "kill")
	asm.load(offNr)
	if a.x32 {
		asm.jge(x32SyscallBit, "kill", "")
	}
	asm.jeq(uint32(unix.SYS_SOCKET), "socket", "")
	asm.jeq(uint32(unix.SYS_SOCKETPAIR), "socketpair", "")
	asm.jeq(uint32(unix.SYS_IO_URING_SETUP), "enosys", "")
	asm.jeq(uint32(unix.SYS_IO_URING_ENTER), "enosys", "")
	asm.jeq(uint32(unix.SYS_IO_URING_REGISTER), "enosys", "")
	asm.jeq(uint32(unix.SYS_SENDTO), "flags3", "")
	asm.jeq(uint32(unix.SYS_SENDMMSG), "flags3", "")
	asm.jeq(uint32(unix.SYS_SENDMSG), "flags2", "")
	asm.jeq(uint32(unix.SYS_SETSOCKOPT), "setsockopt", "")
	if f.noListen {
		asm.jeq(uint32(unix.SYS_LISTEN), "eacces", "")
	}
	if f.noSetns {
		asm.jeq(uint32(unix.SYS_SETNS), "eperm", "")
	}
	if f.noMeta {
		for _, nr := range metaCalls {
			asm.jeq(nr, "eperm", "")
		}
		for _, nr := range a.metaLegacy {
			asm.jeq(nr, "eperm", "")
		}
		asm.jeq(uint32(unix.SYS_IOCTL), "ioctl", "")
	}
	asm.ret(retAllow)

	asm.label("flags3")
	asm.load(offArg3)
	asm.jset(unix.MSG_FASTOPEN, "eopnotsupp", "allow")
	asm.label("flags2")
	asm.load(offArg2)
	asm.jset(unix.MSG_FASTOPEN, "eopnotsupp", "allow")

	asm.label("setsockopt")
	asm.load(offArg1)
	asm.jeq(unix.IPPROTO_TCP, "", "allow")
	asm.load(offArg2)
	for _, opt := range tcpFastOpenOpts {
		asm.jeq(opt, "eopnotsupp", "")
	}
	asm.ret(retAllow)

	if f.noMeta {
		asm.label("ioctl")
		asm.load(offArg1)
		for _, req := range setFlagsIoctls {
			asm.jeq(req, "eperm", "")
		}
		asm.ret(retAllow)
	}

	asm.label("socketpair")
	asm.load(offArg0)
	asm.jeq(unix.AF_UNIX, "allow", "kill")

	asm.label("socket")
	asm.load(offArg0)
	asm.jeq(unix.AF_UNIX, pick(f.unix, "allow", "eacces"), "")
	asm.jeq(unix.AF_NETLINK, "eafnosupport", "")
	if f.tcp || f.udp {
		asm.jeq(unix.AF_INET, "inet", "")
		asm.jeq(unix.AF_INET6, "inet", "kill")

		asm.label("inet")
		asm.load(offArg1)
		asm.and(0xf) // SOCK_TYPE_MASK: drop SOCK_NONBLOCK, SOCK_CLOEXEC
		asm.jeq(unix.SOCK_STREAM, "stream", "")
		asm.jeq(unix.SOCK_DGRAM, "dgram", "eperm")

		asm.label("stream")
		asm.load(offArg2)
		asm.jeq(0, "tcp", "")
		asm.jeq(unix.IPPROTO_TCP, "tcp", "eprotonosupport")
		asm.label("tcp")
		asm.ret(pick(f.tcp, retAllow, retErrno(unix.EPERM)))

		asm.label("dgram")
		asm.load(offArg2)
		asm.jeq(0, "udp", "")
		asm.jeq(unix.IPPROTO_UDP, "udp", "eperm")
		asm.label("udp")
		asm.ret(pick(f.udp, retAllow, retErrno(unix.EPERM)))

		asm.label("eprotonosupport")
		asm.ret(retErrno(unix.EPROTONOSUPPORT))
	}
	asm.label("kill")
	asm.ret(retKill)
	asm.label("allow")
	asm.ret(retAllow)
	asm.label("enosys")
	asm.ret(retErrno(unix.ENOSYS))
	asm.label("eafnosupport")
	asm.ret(retErrno(unix.EAFNOSUPPORT))
	asm.label("eperm")
	asm.ret(retErrno(unix.EPERM))
	asm.label("eacces")
	asm.ret(retErrno(unix.EACCES))
	asm.label("eopnotsupp")
	asm.ret(retErrno(unix.EOPNOTSUPP))
	return asm.assemble()
}

func pick[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// assembler builds a classic BPF program with forward jumps to labels
// ("" is the next instruction). Not goroutine-safe; for one program.
type assembler struct {
	ins    []unix.SockFilter
	jumps  []jump
	labels map[string]int
}

type jump struct {
	at     int
	jt, jf string
}

func (a *assembler) emit(code uint16, k uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: code, K: k})
}

func (a *assembler) load(off uint32) { a.emit(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
func (a *assembler) and(k uint32)    { a.emit(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, k) }
func (a *assembler) ret(k uint32)    { a.emit(unix.BPF_RET|unix.BPF_K, k) }

func (a *assembler) jeq(k uint32, jt, jf string) {
	a.jmp(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, k, jt, jf)
}
func (a *assembler) jset(k uint32, jt, jf string) {
	a.jmp(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, k, jt, jf)
}
func (a *assembler) jge(k uint32, jt, jf string) {
	a.jmp(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, k, jt, jf)
}

func (a *assembler) jmp(code uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, jump{len(a.ins), jt, jf})
	a.emit(code, k)
}

func (a *assembler) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

// assemble resolves the jumps. A backward, unknown or too long jump is a
// bug in program, not bad input: it panics.
func (a *assembler) assemble() []unix.SockFilter {
	off := func(from int, name string) uint8 {
		if name == "" {
			return 0
		}
		to, ok := a.labels[name]
		d := to - from - 1
		if !ok || d < 0 || d > 255 {
			panic("confine: bad jump to " + name)
		}
		return uint8(d)
	}
	for _, j := range a.jumps {
		a.ins[j.at].Jt = off(j.at, j.jt)
		a.ins[j.at].Jf = off(j.at, j.jf)
	}
	return a.ins
}
