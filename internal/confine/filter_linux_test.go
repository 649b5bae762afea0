//go:build linux && amd64

package confine

import (
	"testing"

	"golang.org/x/sys/unix"
)

// seccompData is struct seccomp_data as the filter sees it. The tests use
// amd64's system call numbers, its legacy metadata calls included.
type seccompData struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// word is the 32-bit load at off, little-endian as on amd64 and arm64.
func (d *seccompData) word(t *testing.T, off uint32) uint32 {
	switch {
	case off == offNr:
		return d.nr
	case off == offArch:
		return d.arch
	case off >= 16 && off < 64 && off%4 == 0:
		a := d.args[(off-16)/8]
		if (off-16)%8 == 0 {
			return uint32(a)
		}
		return uint32(a >> 32)
	}
	t.Fatalf("load at offset %d", off)
	return 0
}

// evaluate runs a seccomp program on d as the kernel's classic BPF
// interpreter does, for the instructions the assembler emits.
func evaluate(t *testing.T, prog []unix.SockFilter, d seccompData) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = d.word(t, in.K)
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			if acc&in.K != 0 {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			if acc >= in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

func TestFilter(t *testing.T) {
	amd64 := native
	const hi = 1 << 32 // garbage in the high half of an int argument
	kill, allow := uint32(retKill), uint32(retAllow)
	eperm, enosys := retErrno(unix.EPERM), retErrno(unix.ENOSYS)
	eafnosupport, eprotonosupport := retErrno(unix.EAFNOSUPPORT), retErrno(unix.EPROTONOSUPPORT)
	eacces, eopnotsupp := retErrno(unix.EACCES), retErrno(unix.EOPNOTSUPP)
	const fastOpen = unix.MSG_FASTOPEN
	sock := func(a ...uint64) seccompData {
		d := seccompData{nr: unix.SYS_SOCKET, arch: amd64.audit}
		copy(d.args[:], a)
		return d
	}
	call := func(nr uint32, a ...uint64) seccompData {
		d := seccompData{nr: nr, arch: amd64.audit}
		copy(d.args[:], a)
		return d
	}
	stream := uint64(unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK)
	tests := []struct {
		name           string
		d              seccompData
		deny, tcp, udp uint32 // the verdict with no network, --allow-net, --allow-udp
	}{
		{"read", call(unix.SYS_READ, 0), allow, allow, allow},
		{"execve", call(unix.SYS_EXECVE), allow, allow, allow},
		{"i386 entry point", seccompData{nr: 359, arch: unix.AUDIT_ARCH_I386, args: [6]uint64{unix.AF_INET}}, kill, kill, kill},
		{"x32 socket", call(unix.SYS_SOCKET|x32SyscallBit, unix.AF_INET, unix.SOCK_STREAM), kill, kill, kill},
		{"x32 read", call(unix.SYS_READ | x32SyscallBit), kill, kill, kill},
		// Unix sockets are refused without --allow-unix (TestFilterUnix),
		// in every type; a pair is not.
		{"unix stream", sock(unix.AF_UNIX, stream), eacces, eacces, eacces},
		{"unix datagram", sock(unix.AF_UNIX, unix.SOCK_DGRAM), eacces, eacces, eacces},
		{"unix seqpacket", sock(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC), eacces, eacces, eacces},
		{"unix, high half set", sock(hi|unix.AF_UNIX, unix.SOCK_DGRAM), eacces, eacces, eacces},
		{"inet, high half set", sock(hi|unix.AF_INET, unix.SOCK_STREAM), kill, allow, eperm},
		{"tcp", sock(unix.AF_INET, stream, 0), kill, allow, eperm},
		{"tcp6 IPPROTO_TCP", sock(unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP), kill, allow, eperm},
		{"tcp, protocol high half set", sock(unix.AF_INET, unix.SOCK_STREAM, hi|unix.IPPROTO_TCP), kill, allow, eperm},
		{"mptcp", sock(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), kill, eprotonosupport, eprotonosupport},
		{"sctp stream", sock(unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_SCTP), kill, eprotonosupport, eprotonosupport},
		{"udp", sock(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0), kill, eperm, allow},
		{"udp6 IPPROTO_UDP", sock(unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP), kill, eperm, allow},
		{"icmp ping socket", sock(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), kill, eperm, eperm},
		{"raw", sock(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), kill, eperm, eperm},
		{"seqpacket inet", sock(unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP), kill, eperm, eperm},
		{"packet", sock(unix.AF_PACKET, unix.SOCK_RAW, 0x300), kill, kill, kill},
		{"vsock", sock(unix.AF_VSOCK, unix.SOCK_STREAM), kill, kill, kill},
		{"bluetooth", sock(unix.AF_BLUETOOTH, unix.SOCK_STREAM), kill, kill, kill},
		{"netlink", sock(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), eafnosupport, eafnosupport, eafnosupport},
		{"socketpair unix", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), allow, allow, allow},
		{"socketpair inet", call(unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM), kill, kill, kill},
		{"io_uring_setup", call(unix.SYS_IO_URING_SETUP, 8), enosys, enosys, enosys},
		{"io_uring_enter", call(unix.SYS_IO_URING_ENTER), enosys, enosys, enosys},
		{"io_uring_register", call(unix.SYS_IO_URING_REGISTER), enosys, enosys, enosys},
		{"sendto", call(unix.SYS_SENDTO, 3, 0, 1, unix.MSG_NOSIGNAL), allow, allow, allow},
		{"sendto MSG_FASTOPEN", call(unix.SYS_SENDTO, 3, 0, 1, fastOpen|unix.MSG_NOSIGNAL), eopnotsupp, eopnotsupp, eopnotsupp},
		{"sendto MSG_FASTOPEN, high half set", call(unix.SYS_SENDTO, 3, 0, 1, hi|fastOpen), eopnotsupp, eopnotsupp, eopnotsupp},
		{"sendto, flag in the high half only", call(unix.SYS_SENDTO, 3, 0, 1, fastOpen<<32), allow, allow, allow},
		{"sendmsg", call(unix.SYS_SENDMSG, 3, 0, unix.MSG_DONTWAIT), allow, allow, allow},
		{"sendmsg MSG_FASTOPEN", call(unix.SYS_SENDMSG, 3, 0, fastOpen), eopnotsupp, eopnotsupp, eopnotsupp},
		{"sendmmsg", call(unix.SYS_SENDMMSG, 3, 0, 2, 0), allow, allow, allow},
		{"sendmmsg MSG_FASTOPEN", call(unix.SYS_SENDMMSG, 3, 0, 2, fastOpen), eopnotsupp, eopnotsupp, eopnotsupp},
		{"setsockopt TCP_NODELAY", call(unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, unix.TCP_NODELAY), allow, allow, allow},
		{"setsockopt TCP_FASTOPEN", call(unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, unix.TCP_FASTOPEN), eopnotsupp, eopnotsupp, eopnotsupp},
		{"setsockopt TCP_FASTOPEN_CONNECT", call(unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_CONNECT), eopnotsupp, eopnotsupp, eopnotsupp},
		{"setsockopt TCP_FASTOPEN_CONNECT, high halves set", call(unix.SYS_SETSOCKOPT, 3, hi|unix.IPPROTO_TCP, hi|unix.TCP_FASTOPEN_CONNECT), eopnotsupp, eopnotsupp, eopnotsupp},
		{"setsockopt TCP_FASTOPEN_NO_COOKIE", call(unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_NO_COOKIE), eopnotsupp, eopnotsupp, eopnotsupp},
		{"setsockopt TCP_FASTOPEN_KEY", call(unix.SYS_SETSOCKOPT, 3, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_KEY), eopnotsupp, eopnotsupp, eopnotsupp},
		{"setsockopt SO_REUSEADDR (23 at another level)", call(unix.SYS_SETSOCKOPT, 3, unix.SOL_SOCKET, 23), allow, allow, allow},
		{"listen", call(unix.SYS_LISTEN, 3, 128), allow, eacces, allow},
		{"accept4", call(unix.SYS_ACCEPT4, 3), allow, allow, allow},
		{"chmod", call(unix.SYS_CHMOD), eperm, allow, allow},
		{"fchmod", call(unix.SYS_FCHMOD), eperm, allow, allow},
		{"fchmodat2", call(unix.SYS_FCHMODAT2), eperm, allow, allow},
		{"lchown", call(unix.SYS_LCHOWN), eperm, allow, allow},
		{"fchownat", call(unix.SYS_FCHOWNAT), eperm, allow, allow},
		{"lsetxattr", call(unix.SYS_LSETXATTR), eperm, allow, allow},
		{"setxattrat", call(unix.SYS_SETXATTRAT), eperm, allow, allow},
		{"fremovexattr", call(unix.SYS_FREMOVEXATTR), eperm, allow, allow},
		{"removexattrat", call(unix.SYS_REMOVEXATTRAT), eperm, allow, allow},
		{"utime", call(unix.SYS_UTIME), eperm, allow, allow},
		{"utimes", call(unix.SYS_UTIMES), eperm, allow, allow},
		{"futimesat", call(unix.SYS_FUTIMESAT), eperm, allow, allow},
		{"utimensat", call(unix.SYS_UTIMENSAT), eperm, allow, allow},
		{"file_setattr", call(unix.SYS_FILE_SETATTR), eperm, allow, allow},
		{"ioctl FS_IOC_SETFLAGS", call(unix.SYS_IOCTL, 3, unix.FS_IOC_SETFLAGS), eperm, allow, allow},
		{"ioctl FS_IOC_FSSETXATTR", call(unix.SYS_IOCTL, 3, 0x401c5820), eperm, allow, allow},
		{"ioctl FS_IOC_GETFLAGS", call(unix.SYS_IOCTL, 3, unix.FS_IOC_GETFLAGS), allow, allow, allow},
		{"ioctl TCGETS", call(unix.SYS_IOCTL, 0, unix.TCGETS), allow, allow, allow},
		{"getxattr", call(unix.SYS_GETXATTR), allow, allow, allow},
	}
	progs := []struct {
		mode string
		prog []unix.SockFilter
	}{
		// As makePlan configures them: a bare --confine, and the two
		// network profiles with a write grant.
		{"deny", netFilter{noMeta: true}.program(amd64)},
		{"tcp", netFilter{tcp: true, noListen: true}.program(amd64)},
		{"udp", netFilter{udp: true}.program(amd64)},
	}
	for _, tt := range tests {
		for i, want := range []uint32{tt.deny, tt.tcp, tt.udp} {
			if got := evaluate(t, progs[i].prog, tt.d); got != want {
				t.Errorf("%s filter on %s (nr %d, args %#x) = %#x; want %#x", progs[i].mode, tt.name, tt.d.nr, tt.d.args[:3], got, want)
			}
		}
	}
	// arm64 has no x32: numbers with that bit are not special there (and
	// are not system calls at all).
	arm := netFilter{}.program(arch{audit: unix.AUDIT_ARCH_AARCH64})
	if got := evaluate(t, arm, seccompData{nr: 198, arch: unix.AUDIT_ARCH_X86_64}); got != kill {
		t.Errorf("arm64 filter on an amd64 call = %#x; want kill", got)
	}
}

// TestFilterUnix: with --allow-unix (netFilter.unix) unix sockets of every
// type are allowed in every network mode, and nothing else changes.
func TestFilterUnix(t *testing.T) {
	amd64 := arch{audit: unix.AUDIT_ARCH_X86_64, x32: true}
	allow, kill := uint32(retAllow), uint32(retKill)
	for _, f := range []netFilter{{unix: true, noMeta: true}, {unix: true, tcp: true, noListen: true}, {unix: true, udp: true}} {
		prog := f.program(amd64)
		for _, tt := range []struct {
			name string
			d    seccompData
			want uint32
		}{
			{"unix stream", seccompData{nr: unix.SYS_SOCKET, arch: amd64.audit, args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, allow},
			{"unix datagram", seccompData{nr: unix.SYS_SOCKET, arch: amd64.audit, args: [6]uint64{unix.AF_UNIX, unix.SOCK_DGRAM}}, allow},
			{"unix seqpacket", seccompData{nr: unix.SYS_SOCKET, arch: amd64.audit, args: [6]uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}}, allow},
			{"socketpair unix", seccompData{nr: unix.SYS_SOCKETPAIR, arch: amd64.audit, args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, allow},
			{"packet", seccompData{nr: unix.SYS_SOCKET, arch: amd64.audit, args: [6]uint64{unix.AF_PACKET, unix.SOCK_RAW}}, kill},
		} {
			if got := evaluate(t, prog, tt.d); got != tt.want {
				t.Errorf("%+v filter on %s = %#x; want %#x", f, tt.name, got, tt.want)
			}
		}
	}
}
