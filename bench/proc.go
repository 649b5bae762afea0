package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Transport is what the client hands the process under test as its stdin
// and stdout.
type Transport string

const (
	// Pipes: two pipes, as Go's os/exec and Python's subprocess set up.
	Pipes Transport = "pipe"
	// Socketpairs: two UNIX stream socketpairs, as Node's child_process
	// (libuv) sets up for stdio "pipe".
	Socketpairs Transport = "socketpair"
)

// proc is a process under test with the harness as its client. Its
// methods are not safe for concurrent use, except that one goroutine may
// write (send) while another reads (readLine).
type proc struct {
	name   string
	cmd    *exec.Cmd
	w      *os.File // the process's stdin
	r      *os.File // the process's stdout
	stderr *lockedBuffer

	buf        []byte // readLine's buffer
	start, end int
	scanned    int    // buf[start:scanned] holds no '\n': each byte is searched once
	req        []byte // send's buffer
	id         int    // the last id sent
}

// lockedBuffer is the process's stderr, kept for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProc starts argv with env, its stdin and stdout connected to the
// harness over t. The process is killed when ctx is done, which ends any
// read or write of the harness's that waits on it.
func startProc(ctx context.Context, name string, t Transport, argv, env []string) (*proc, error) {
	childIn, w, err := channel(t, false)
	if err != nil {
		return nil, err
	}
	childOut, r, err := channel(t, true)
	if err != nil {
		childIn.Close()
		w.Close()
		return nil, err
	}
	p := &proc{name: name, w: w, r: r, stderr: new(lockedBuffer), buf: make([]byte, 64<<10)}
	p.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	p.cmd.Env = env
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = childIn, childOut, p.stderr
	err = p.cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// channel returns the two ends of one direction: the harness's end
// (pollable, non-blocking) and the child's (blocking, as a child expects
// its stdio). With childWrites the child writes and the harness reads.
func channel(t Transport, childWrites bool) (child, mine *os.File, err error) {
	switch t {
	case Pipes:
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		if childWrites {
			return w, r, nil
		}
		return r, w, nil
	case Socketpairs:
		fds, err := socketpair() // proc_linux.go, proc_other.go
		if err != nil {
			return nil, nil, fmt.Errorf("socketpair: %w", err)
		}
		if err := unix.SetNonblock(fds[1], true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, nil, err
		}
		return os.NewFile(uintptr(fds[0]), "child-socket"), os.NewFile(uintptr(fds[1]), "socket"), nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", t)
}

// send writes one request: prefix, the id, suffix.
func (p *proc) send(prefix string, id int, suffix string) error {
	p.req = append(strconv.AppendInt(append(p.req[:0], prefix...), int64(id), 10), suffix...)
	if _, err := p.w.Write(p.req); err != nil {
		return p.errorf("write request: %w", err)
	}
	return nil
}

// readLine returns the next line from the process, without its '\n',
// valid until the next call. The buffer grows to the longest line.
func (p *proc) readLine() ([]byte, error) {
	// A long line arrives in many reads; searching only the bytes each
	// read adds keeps a 16 MiB answer's search linear, so that the
	// client's own work is no part of the round trip it times.
	for {
		if i := bytes.IndexByte(p.buf[p.scanned:p.end], '\n'); i >= 0 {
			line := p.buf[p.start : p.scanned+i]
			p.start = p.scanned + i + 1
			p.scanned = p.start
			return line, nil
		}
		p.scanned = p.end
		if p.start > 0 {
			p.end = copy(p.buf, p.buf[p.start:p.end])
			p.scanned -= p.start
			p.start = 0
		}
		if p.end == len(p.buf) {
			p.buf = append(p.buf, make([]byte, len(p.buf))...)
		}
		n, err := p.r.Read(p.buf[p.end:])
		p.end += n
		if err != nil && n == 0 {
			return nil, p.errorf("read response: %w", err)
		}
	}
}

// expect reads the next line and checks that it answers id.
func (p *proc) expect(id int) (int, error) {
	line, err := p.readLine()
	if err != nil {
		return 0, err
	}
	got, ok := responseID(line)
	if !ok || got != id {
		return 0, p.errorf("response %.80q; want the answer to id %d", line, id)
	}
	return len(line) + 1, nil
}

// responseID reads the numeric id of an echo child's answer.
func responseID(line []byte) (int, bool) {
	const pre = `{"jsonrpc":"2.0","id":`
	if !bytes.HasPrefix(line, []byte(pre)) {
		return 0, false
	}
	v := line[len(pre):]
	i := bytes.IndexByte(v, ',')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(string(v[:i]))
	return n, err == nil
}

// hwm is the process's peak resident set (VmHWM), in bytes, read while
// it runs.
func (p *proc) hwm() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n << 10, err
			}
		}
	}
	return 0, errors.New("no VmHWM in /proc/PID/status")
}

// cpu is the CPU time the process's threads have run so far: the sum of
// /proc/PID/task/*/schedstat's first field, in ns. Unlike wall time it
// does not grow while the process waits for a CPU on a loaded machine.
// Threads that have exited are not counted; Go's runtime rarely ends one.
func (p *proc) cpu() (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, t.Name(), err)
		}
		sum += time.Duration(n)
	}
	return sum, nil
}

// cpuMeter measures a process's CPU time over the ops of a section.
type cpuMeter struct {
	p     *proc
	start time.Duration
	err   error
}

func meter(p *proc) *cpuMeter {
	m := &cpuMeter{p: p}
	m.start, m.err = p.cpu()
	return m
}

// per is the CPU time per op since meter, for ops ops, in ns; NaN when
// it could not be read.
func (m *cpuMeter) per(ops int) float64 {
	end, err := m.p.cpu()
	if m.err != nil || err != nil || ops == 0 {
		return math.NaN()
	}
	return float64(end-m.start) / float64(ops)
}

// stop closes the process's stdin and waits for it to exit; a non-zero
// exit is an error.
func (p *proc) stop() error {
	if p.w == nil {
		return nil
	}
	p.w.Close()
	p.w = nil
	err := p.cmd.Wait()
	p.r.Close()
	if err != nil {
		return p.errorf("exit: %w", err)
	}
	return nil
}

func (p *proc) errorf(format string, args ...any) error {
	err := fmt.Errorf(p.name+": "+format, args...)
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		err = fmt.Errorf("%w\n%s stderr:\n%s", err, p.name, lastLines(s, 10))
	}
	return err
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
