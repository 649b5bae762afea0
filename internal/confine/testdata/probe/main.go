// Command probe is the escape suite's child: a minimal MCP-style server whose
// one tool, "attempt", tries one way out of a confinement and answers what
// happened: "allowed", or "blocked ERRNO". An attempt that seccomp kills
// never answers; the session records it as seccomp_killed.
//
//	probe [target flags]            serve tools/call {"attempt": NAME} on stdin
//	probe [target flags] -direct A… run the attempts A… and print "A result" lines
//	probe -noop                     exit 0 (the binary the exec attempt runs)
//
// It is built with CGO_ENABLED=0, so that it runs under a bare --confine,
// and uses no unsafe: io_uring's parameter block lives in an anonymous
// mapping, written and read with process_vm_writev/readv.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

var (
	outside     = flag.String("outside", "", "a directory the profile does not grant, holding secret.txt and probe-copy")
	readDir     = flag.String("read", "", "a directory granted read, holding file.txt")
	writeDir    = flag.String("write", "", "a directory granted write")
	portAllowed = flag.Int("port-allowed", 0, "a loopback TCP port that is listening and allowed")
	portDenied  = flag.Int("port-denied", 0, "a loopback TCP port that is listening and not allowed")
	pid         = flag.Int("pid", 0, "a process outside the sandbox, to signal")
	abstract    = flag.String("abstract", "", "an abstract unix socket name (without @) listening outside the sandbox")
	unixDir     = flag.String("unix-dir", "", "a directory outside the sandbox holding listening pathname unix sockets stream.sock, seqpacket.sock and dgram.sock")
	direct      = flag.Bool("direct", false, "run the attempts named as arguments and print the results")
	noop        = flag.Bool("noop", false, "exit 0 at once")
)

// attempts are the ways out, by name.
var attempts = map[string]func() error{
	"read_outside":     func() error { _, err := os.ReadFile(filepath.Join(*outside, "secret.txt")); return err },
	"list_outside":     func() error { _, err := os.ReadDir(*outside); return err },
	"read_allowed":     func() error { _, err := os.ReadFile(filepath.Join(*readDir, "file.txt")); return err },
	"write_outside":    func() error { return openClose(filepath.Join(*outside, "secret.txt"), os.O_WRONLY) },
	"write_read_only":  func() error { return openClose(filepath.Join(*readDir, "file.txt"), os.O_WRONLY) },
	"create_outside":   func() error { return createRemove(*outside) },
	"create_allowed":   func() error { return createRemove(*writeDir) },
	"truncate_outside": func() error { return truncateSame(filepath.Join(*outside, "secret.txt")) },
	"rename_outside": func() error {
		from, to := filepath.Join(*outside, "secret.txt"), filepath.Join(*outside, "renamed.txt")
		if err := os.Rename(from, to); err != nil {
			return err
		}
		return os.Rename(to, from)
	},
	"rename_out_of_write": func() error {
		from, to := filepath.Join(*writeDir, "moved.txt"), filepath.Join(*outside, "moved.txt")
		if err := os.WriteFile(from, []byte("x"), 0o600); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		defer os.Remove(from)
		if err := os.Rename(from, to); err != nil {
			return err
		}
		return os.Remove(to)
	},
	"exec_outside": func() error { return exec.Command(filepath.Join(*outside, "probe-copy"), "-noop").Run() },
	"tcp_socket":   func() error { return socket(unix.AF_INET, unix.SOCK_STREAM, 0) },
	"tcp6_socket":  func() error { return socket(unix.AF_INET6, unix.SOCK_STREAM, 0) },
	"udp_socket":   func() error { return socket(unix.AF_INET, unix.SOCK_DGRAM, 0) },
	"raw_socket":   func() error { return socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP) },
	"packet_socket": func() error {
		return socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
	},
	"netlink_socket":         func() error { return socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) },
	"mptcp_socket":           func() error { return socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP) },
	"vsock_socket":           func() error { return socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0) },
	"connect_denied_port":    func() error { return connectTCP(*portDenied) },
	"connect_allowed_port":   func() error { return connectTCP(*portAllowed) },
	"io_uring_read":          ioURingRead,
	"io_uring_socket":        ioURingSocket,
	"signal_outside":         func() error { return unix.Kill(*pid, unix.SIGURG) },
	"abstract_unix_connect":  func() error { return unixConnect(unix.SOCK_STREAM, "@"+*abstract) },
	"unix_stream_connect":    func() error { return unixConnect(unix.SOCK_STREAM, filepath.Join(*unixDir, "stream.sock")) },
	"unix_seqpacket_connect": func() error { return unixConnect(unix.SOCK_SEQPACKET, filepath.Join(*unixDir, "seqpacket.sock")) },
	"unix_dgram_send": func() error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrUnix{Name: filepath.Join(*unixDir, "dgram.sock")})
	},
	// A pair is connected to itself only: it must keep working.
	"unix_socketpair": func() error {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		unix.Close(fds[0])
		return unix.Close(fds[1])
	},
	// PTRACE_SEIZE does not stop the tracee; the probe's exit detaches.
	"ptrace_parent": func() error { return unix.PtraceSeize(os.Getppid()) },
}

func main() {
	flag.Parse()
	if *noop {
		return
	}
	if *direct {
		for _, name := range flag.Args() {
			fmt.Printf("%s %s\n", name, run(name))
		}
		return
	}
	serve()
}

// run performs one attempt and says what happened.
func run(name string) string {
	f, ok := attempts[name]
	if !ok {
		return "error unknown attempt"
	}
	err := f()
	if err == nil {
		return "allowed"
	}
	var errno unix.Errno
	if errors.As(err, &errno) && !strings.HasPrefix(err.Error(), "setup:") {
		return "blocked " + unix.ErrnoName(errno)
	}
	var status errStatus
	if errors.As(err, &status) {
		return "blocked " + status.Error()
	}
	return "error " + err.Error()
}

// serve answers initialize and tools/call lines on stdin, one per line.
func serve() {
	sc := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Attempt string `json:"attempt"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "aegis-escape-probe", "version": "1"}}
		case "tools/call":
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": run(req.Params.Arguments.Attempt)}}}
		default:
			result = map[string]any{}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		out.Write(append(b, '\n'))
		out.Flush()
	}
}

func openClose(path string, flags int) error {
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

func createRemove(dir string) error {
	path := filepath.Join(dir, fmt.Sprintf("created-%d", os.Getpid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(path)
}

// truncateSame truncates path to its own length: the call is checked, the
// content survives an unconfined run.
func truncateSame(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	return unix.Truncate(path, st.Size)
}

func socket(domain, typ, proto int) error {
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func connectTCP(port int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// io_uring, by hand: the ring and its submission queue are mapped as byte
// slices; the parameter block and the read buffer, whose addresses the
// kernel needs, are anonymous mappings placed by the kernel.

const (
	ioringOpRead   = 22
	ioringOpSocket = 45
	ioringOffSQES  = 0x10000000
	ioringOffCQ    = 0x8000000
	ioringEnterGet = 1 // IORING_ENTER_GETEVENTS
)

func ioURingRead() error {
	f, err := os.Open(filepath.Join(*readDir, "file.txt"))
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer f.Close()
	buf, err := anon(4096)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	return ioURing(func(sqe []byte) {
		sqe[0] = ioringOpRead
		binary.LittleEndian.PutUint32(sqe[4:], uint32(f.Fd()))
		binary.LittleEndian.PutUint64(sqe[16:], uint64(buf))
		binary.LittleEndian.PutUint32(sqe[24:], 4096)
	})
}

func ioURingSocket() error {
	return ioURing(func(sqe []byte) {
		sqe[0] = ioringOpSocket
		binary.LittleEndian.PutUint32(sqe[4:], unix.AF_INET)
		binary.LittleEndian.PutUint64(sqe[8:], unix.SOCK_STREAM)
	})
}

// ioURing submits one SQE filled by fill and returns the CQE's error.
func ioURing(fill func(sqe []byte)) error {
	params, err := anon(120)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, params, 0)
	if errno != 0 {
		return errno
	}
	fd := int(r)
	defer unix.Close(fd)
	p := make([]byte, 120)
	if err := readOwn(params, p); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	u32 := func(b []byte, off uint32) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	sqEntries, cqEntries := u32(p, 0), u32(p, 4)
	sqOff, cqOff := p[40:80], p[80:120]
	sqHead, sqTail, sqMask, sqArray := u32(sqOff, 0), u32(sqOff, 4), u32(sqOff, 8), u32(sqOff, 24)
	cqHead, cqTail, cqMask, cqes := u32(cqOff, 0), u32(cqOff, 4), u32(cqOff, 8), u32(cqOff, 20)
	_ = sqHead
	sq, err := unix.Mmap(fd, 0, int(sqArray+4*sqEntries), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("setup: mmap sq: %w", err)
	}
	defer unix.Munmap(sq)
	cq, err := unix.Mmap(fd, ioringOffCQ, int(cqes+16*cqEntries), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("setup: mmap cq: %w", err)
	}
	defer unix.Munmap(cq)
	sqes, err := unix.Mmap(fd, ioringOffSQES, int(64*sqEntries), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("setup: mmap sqes: %w", err)
	}
	defer unix.Munmap(sqes)

	tail := u32(sq, sqTail)
	idx := tail & u32(sq, sqMask)
	sqe := sqes[64*idx : 64*idx+64]
	clear(sqe)
	fill(sqe)
	binary.LittleEndian.PutUint32(sq[sqArray+4*idx:], idx)
	binary.LittleEndian.PutUint32(sq[sqTail:], tail+1)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), 1, 1, ioringEnterGet, 0, 0); errno != 0 {
		return errno
	}
	head := u32(cq, cqHead)
	if head == u32(cq, cqTail) {
		return errors.New("no completion")
	}
	cqe := cq[cqes+16*(head&u32(cq, cqMask)):]
	res := int32(binary.LittleEndian.Uint32(cqe[8:]))
	binary.LittleEndian.PutUint32(cq[cqHead:], head+1)
	if res < 0 {
		return unix.Errno(-res)
	}
	if sqe[0] == ioringOpSocket {
		unix.Close(int(res))
	}
	return nil
}

// anon maps n zeroed bytes outside the Go heap and returns their address.
func anon(n int) (uintptr, error) {
	addr, _, errno := unix.Syscall6(unix.SYS_MMAP, 0, uintptr(n), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	if errno != 0 {
		return 0, errno
	}
	return addr, nil
}

func readOwn(addr uintptr, b []byte) error {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	n, err := unix.ProcessVMReadv(os.Getpid(), local, []unix.RemoteIovec{{Base: addr, Len: len(b)}}, 0)
	if err == nil && n != len(b) {
		err = fmt.Errorf("read %d of %d bytes", n, len(b))
	}
	return err
}

// unixConnect makes a unix socket of type typ and connects it to name
// (a leading @: abstract). Making the socket is part of the attempt:
// under --confine without --allow-unix that is what is refused.
func unixConnect(typ int, name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: name})
}
