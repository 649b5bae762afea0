//go:build linux

package copystep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal/record"
)

// The two relay steps that BenchmarkCopyStep compares, and the descriptors
// they run on. Both move whole lines from src to dst, compute the digest of
// every line in user space, and issue their own syscalls through the
// runtime poller (RawConn), so that both pay the same Go-side overhead and
// the syscalls each issues can be counted exactly.

var errStepBuffer = errors.New("copy step: line longer than the step's buffer")

// pollFD is a descriptor held by an *os.File registered with the runtime
// poller. fd is taken once with Control: File.Fd would put it in blocking
// mode and take it out of the poller.
type pollFD struct {
	rc syscall.RawConn
	fd int
}

func newPollFD(f *os.File) (pollFD, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return pollFD{}, err
	}
	p := pollFD{rc: rc}
	if err := rc.Control(func(fd uintptr) { p.fd = int(fd) }); err != nil {
		return pollFD{}, err
	}
	return p, nil
}

// stepStats is what both steps count, and the syscalls they share. calls
// is every syscall the step issues itself, EAGAIN answers included; the
// runtime's epoll_wait and futex calls while a step is parked are not in it.
//
// A func literal handed to RawConn.Read escapes and is allocated on every
// call; the poller callbacks are method values bound once (bind), taking
// their arguments and leaving their results in op.
type stepStats struct {
	frames    int
	calls     int
	spliced   int // bytes moved to dst by splice
	written   int // bytes moved to dst by write
	fallbacks int // lines too long to hold in a pipe: relayed by read/write
	onLine    func(record.Digest)

	op         sysOp
	readFn     func(uintptr) bool
	writeFn    func(uintptr) bool
	spliceToFn func(uintptr) bool // splice op.rfd -> fd
}

// sysOp is the argument and result of one poller callback.
type sysOp struct {
	p    []byte
	rfd  int
	len  int
	n    int
	err  error
	full bool
}

func (s *stepStats) bind(onLine func(record.Digest)) {
	s.onLine = onLine
	s.readFn, s.writeFn, s.spliceToFn = s.doRead, s.doWrite, s.doSpliceTo
}

// lines hashes every line of chunk, which ends in '\n'. It walks the chunk
// as recordRequests does and hashes as the relay does (digest).
func (s *stepStats) lines(chunk []byte) {
	for len(chunk) > 0 {
		var line []byte
		line, chunk = frame.NextLine(chunk)
		s.onLine(digest(line))
		s.frames++
	}
}

// again reports whether a poller callback should park: EAGAIN.
func again(err error) bool { return err == unix.EAGAIN }

func (s *stepStats) doRead(fd uintptr) bool {
	for {
		s.op.n, s.op.err = unix.Read(int(fd), s.op.p)
		s.calls++
		if s.op.err != unix.EINTR {
			return !again(s.op.err)
		}
	}
}

func (s *stepStats) doWrite(fd uintptr) bool {
	for {
		s.op.n, s.op.err = unix.Write(int(fd), s.op.p)
		s.calls++
		if s.op.err != unix.EINTR {
			return !again(s.op.err)
		}
	}
}

func (s *stepStats) doSpliceTo(fd uintptr) bool {
	s.op.n, s.op.err = s.splice(s.op.rfd, int(fd), s.op.len)
	return !again(s.op.err)
}

// read reads once into p, parking in the poller on EAGAIN. (0, nil) is EOF.
func (s *stepStats) read(src pollFD, p []byte) (int, error) {
	s.op.p = p
	err := src.rc.Read(s.readFn)
	s.op.p = nil
	if err != nil {
		return 0, err
	}
	if s.op.err != nil {
		return 0, fmt.Errorf("read: %w", s.op.err)
	}
	return s.op.n, nil
}

// writeAll writes p to dst, parking in the poller while dst is full.
func (s *stepStats) writeAll(dst pollFD, p []byte) error {
	for len(p) > 0 {
		s.op.p = p
		err := dst.rc.Write(s.writeFn)
		s.op.p = nil
		if err != nil {
			return err
		}
		if s.op.err != nil {
			return fmt.Errorf("write: %w", s.op.err)
		}
		p = p[s.op.n:]
		s.written += s.op.n
	}
	return nil
}

// splice moves up to n bytes from rfd to wfd (one is a pipe), without
// waiting.
func (s *stepStats) splice(rfd, wfd, n int) (int, error) {
	for {
		m, err := unix.Splice(rfd, nil, wfd, nil, n, unix.SPLICE_F_NONBLOCK)
		s.calls++
		if err != unix.EINTR {
			return int(m), err
		}
	}
}

// tee duplicates up to n bytes from the head of the pipe rfd into the pipe
// wfd, consuming nothing, without waiting.
func (s *stepStats) tee(rfd, wfd, n int) (int, error) {
	for {
		m, err := unix.Tee(rfd, wfd, n, unix.SPLICE_F_NONBLOCK)
		s.calls++
		if err != unix.EINTR {
			return int(m), err
		}
	}
}

// rwStep is the current approach (frame.Reader, then dst.Write): read into
// a user buffer, find the lines, hash them, write the run of whole lines.
// buf is sized as frame.Reader would have grown it for the longest line.
type rwStep struct {
	stepStats
	src, dst            pollFD
	buf                 []byte
	start, end, scanned int
}

func (s *rwStep) relay(want int) error {
	for s.frames < want {
		if err := s.step(); err != nil {
			return err
		}
	}
	return nil
}

// step reads once, then scans, hashes and writes the whole lines buffered.
func (s *rwStep) step() error {
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	if s.end == len(s.buf) {
		return errStepBuffer
	}
	n, err := s.read(s.src, s.buf[s.end:])
	if err != nil {
		return err
	}
	if n == 0 {
		return io.ErrUnexpectedEOF
	}
	s.end += n
	stop := lastLineEnd(s.buf[:s.end], s.start+s.scanned)
	if stop < 0 {
		s.scanned = s.end - s.start
		return nil
	}
	s.lines(s.buf[s.start:stop])
	if err := s.writeAll(s.dst, s.buf[s.start:stop]); err != nil {
		return err
	}
	s.start, s.scanned = stop, s.end-stop
	return nil
}

// lastLineEnd is the offset just past the last '\n' of b, searching from
// from, or -1; like frame.Reader.Next, it probes forward with the
// vectorised IndexByte before searching back from the end.
func lastLineEnd(b []byte, from int) int {
	k := bytes.IndexByte(b[from:], '\n')
	if k < 0 {
		return -1
	}
	from += k + 1
	return from + bytes.LastIndexByte(b[from:], '\n') + 1
}

// teeStep is the zero-copy candidate. The bytes of the lines not yet
// forwarded stay in a pipe, hold, until the step has seen and hashed them
// whole. Each step tees hold into scratch, reads scratch into buf to find
// and hash the lines, and splices the whole lines from hold to dst: tee and
// splice copy no bytes, they take references to the pipe's pages; the read
// from scratch is the one copy.
//
// hold is a pipe of the step's own, filled by splice(src→hold) (tee(2)
// takes pipes only, so this is the only way for a socket src). With direct
// (pipe src only) hold is src itself, one syscall fewer per step — but
// unsafe: a reader cannot wait for "more than the pipe holds" (a non-empty
// pipe is readable; the edge-triggered poller helps, as a polled pipe wakes
// its readers on every write since Linux 5.16), and cannot tell a line
// still arriving from a writer blocked on a full pipe. A pipe's capacity
// counts pages, and pages are often partly filled (pipe_write merges a
// write's sub-page remainder into the last page only if it fits there, and
// otherwise starts a page), so "full" cannot be told from the byte count:
// TestPipeFullBelowCapacity fills a 64 KiB pipe with 32 KiB. The byte
// threshold direct uses (cap-page) holds only for writers that write whole
// lines in one write each, and so direct is tested with those only; with
// lines written in odd pieces it deadlocks (parked for good with 1041958
// bytes in a full 1 MiB pipe, in an earlier version of this test).
// With an own hold pipe "full" is decidable: splice says EAGAIN while src
// still has bytes (FIONREAD).
//
// A line can be held only if it fits in hold. When hold is full and has no
// '\n' the step falls back to read/write for that line: it has the held
// bytes in buf already, drops them from hold (splice to /dev/null) and
// reads the rest of the line from src, until buf holds no partial line.
type teeStep struct {
	// The read/write fallback mode is rwStep's step, on the same buffer;
	// rwStep also carries the stats and the two ends.
	rwStep
	direct   bool // hold is src (a pipe)
	hold     int  // read end of the pipe of unforwarded bytes
	holdW    int  // !direct: write end of hold
	hb       int  // !direct: bytes in hold
	scR, scW int  // scratch pipe
	null     int  // /dev/null
	cap      int  // hold's capacity in bytes (F_GETPIPE_SZ)
	holdMax  int  // !direct: most bytes hold may take (see doFillHold)
	page     int
	held     int // buf[:held] is hold's head, scanned: no '\n' in it

	reading bool // in the fallback mode

	teeNewFn   func(uintptr) bool
	fillHoldFn func(uintptr) bool
}

// skipMin: below it, held bytes are read again from scratch (one copy of a
// few bytes); from it up, they are dropped from scratch with a splice to
// /dev/null so that a line arriving in many pieces is not copied
// quadratically.
const skipMin = 4096

func (s *teeStep) relay(want int) error {
	for s.frames < want {
		if s.reading {
			if err := s.readMode(); err != nil {
				return err
			}
			continue
		}
		n, full, err := s.teeNew()
		if err != nil {
			return err
		}
		if !full {
			if err := s.readScratch(n); err != nil {
				return err
			}
		}
		stop := -1
		if n > s.held {
			stop = lastLineEnd(s.buf[:n], s.held)
		}
		if stop >= 0 {
			s.lines(s.buf[:stop])
			if err := s.spliceOut(stop); err != nil {
				return err
			}
			s.held = copy(s.buf, s.buf[stop:n])
		} else {
			s.held = n
		}
		// hold is full (direct: may be, see teeStep) and its remaining
		// bytes hold no '\n': the line cannot be held. (Splicing out the
		// lines before it may have freed no page: the last one shares its
		// page with this line's first bytes.)
		if full || s.direct && s.held >= s.cap-s.page {
			if err := s.fallback(s.held); err != nil {
				return err
			}
		}
	}
	return nil
}

// teeNew waits until hold has more than held bytes and tees them all into
// scratch (which is empty), returning how many. full reports (!direct)
// that hold is full, src has more and nothing new was teed.
func (s *teeStep) teeNew() (n int, full bool, err error) {
	if s.direct {
		n, err = s.teePipe()
		return n, false, err
	}
	if s.hb == s.held {
		if full, err = s.fillHold(); err != nil || full {
			return s.held, full, err
		}
	}
	n, err = s.tee(s.hold, s.scW, s.hb)
	if err != nil {
		return 0, false, fmt.Errorf("tee: %w", err)
	}
	if n != s.hb {
		return 0, false, fmt.Errorf("tee: %d of %d bytes held: scratch smaller than hold", n, s.hb)
	}
	return n, false, nil
}

// teePipe (direct) tees src into scratch; a tee that brings nothing new
// drops its copy and parks until the writer's next write.
func (s *teeStep) teePipe() (int, error) {
	if err := s.src.rc.Read(s.teeNewFn); err != nil {
		return 0, err
	}
	if s.op.err != nil {
		return 0, fmt.Errorf("tee: %w", s.op.err)
	}
	if s.op.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	return s.op.n, nil
}

func (s *teeStep) doTeeNew(fd uintptr) bool {
	n, err := s.tee(int(fd), s.scW, s.cap)
	s.op.n, s.op.err = n, err
	switch {
	case again(err):
		return false
	case err != nil || n == 0:
		return true
	case n <= s.held:
		s.op.err = s.discard(s.scR, n)
		return s.op.err != nil
	}
	return true
}

// fillHold splices what src has into hold, parking while it has nothing.
// EAGAIN is ambiguous (src empty, or hold full): FIONREAD on src tells.
func (s *teeStep) fillHold() (full bool, err error) {
	if err := s.src.rc.Read(s.fillHoldFn); err != nil {
		return false, err
	}
	if s.op.err != nil {
		return false, fmt.Errorf("splice src to hold: %w", s.op.err)
	}
	if s.op.full {
		return true, nil
	}
	if s.op.n == 0 {
		return false, io.ErrUnexpectedEOF
	}
	s.hb += s.op.n
	return false, nil
}

func (s *teeStep) doFillHold(fd uintptr) bool {
	// hold counts pages, not bytes: spliced from a socket, a page may be
	// a 32 KiB skb fragment, so a 1 MiB hold takes about 4 MiB from a
	// UNIX socket. holdMax (at most len(buf), which must take them all)
	// bounds it.
	room := s.holdMax - s.hb
	s.op.n, s.op.err, s.op.full = 0, nil, room <= 0
	if s.op.full {
		return true
	}
	s.op.n, s.op.err = s.splice(int(fd), s.holdW, room)
	if !again(s.op.err) {
		return true
	}
	s.op.err = nil
	if s.hb == 0 {
		return false // hold is empty, so src is
	}
	q, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD: pipes and sockets alike
	s.calls++
	if err != nil {
		s.op.err = err
		return true
	}
	s.op.full = q > 0
	return s.op.full
}

// readScratch brings hold's first n bytes, now in scratch, into buf[:n].
func (s *teeStep) readScratch(n int) error {
	from := 0
	if s.held >= skipMin {
		if err := s.discard(s.scR, s.held); err != nil {
			return err
		}
		from = s.held
	}
	for from < n {
		m, err := unix.Read(s.scR, s.buf[from:n])
		s.calls++
		if err == unix.EINTR {
			continue
		}
		if err != nil || m == 0 {
			return fmt.Errorf("read scratch: %d, %v", m, err)
		}
		from += m
	}
	return nil
}

// discard drops n bytes from the pipe rfd.
func (s *teeStep) discard(rfd, n int) error {
	for n > 0 {
		m, err := s.splice(rfd, s.null, n)
		if err != nil || m == 0 {
			return fmt.Errorf("splice to /dev/null: %d, %v", m, err)
		}
		n -= m
	}
	return nil
}

// spliceOut moves hold's first n bytes to dst, parking while dst is full.
func (s *teeStep) spliceOut(n int) error {
	for n > 0 {
		s.op.rfd, s.op.len = s.hold, n
		if err := s.dst.rc.Write(s.spliceToFn); err != nil {
			return err
		}
		m := s.op.n
		if s.op.err != nil || m == 0 {
			return fmt.Errorf("splice to dst: %d, %v", m, s.op.err)
		}
		n -= m
		s.spliced += m
		if !s.direct {
			s.hb -= m
		}
	}
	return nil
}

// fallback switches to read/write for a line that hold cannot keep whole;
// buf[:n] are its first bytes, still in hold.
func (s *teeStep) fallback(n int) error {
	s.fallbacks++
	if err := s.discard(s.hold, n); err != nil {
		return err
	}
	if !s.direct {
		s.hb -= n
	}
	s.held = 0
	s.reading, s.start, s.end, s.scanned = true, 0, n, n
	return nil
}

// readMode is one rwStep step; it returns to tee mode as soon as buf
// holds no partial line, so that the next line can be held again.
func (s *teeStep) readMode() error {
	if err := s.step(); err != nil {
		return err
	}
	if s.start == s.end {
		s.reading = false
	}
	return nil
}

// ends are the four descriptors of one run: the producer writes srcW, the
// step reads srcR and writes dstW, the consumer reads dstR. Each side is a
// pipe or a UNIX stream socketpair; pipes get pipeSize if it is not 0.
type ends struct {
	srcW, srcR, dstW, dstR *os.File
}

func newEnds(srcSock, dstSock bool, pipeSize int) (*ends, error) {
	e := &ends{}
	var err error
	if e.srcR, e.srcW, err = newLink(srcSock, pipeSize); err != nil {
		return nil, err
	}
	if e.dstR, e.dstW, err = newLink(dstSock, pipeSize); err != nil {
		e.srcR.Close()
		e.srcW.Close()
		return nil, err
	}
	return e, nil
}

// newLink returns a pipe or a nonblocking socketpair, both in the poller.
func newLink(sock bool, pipeSize int) (r, w *os.File, err error) {
	if sock {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("socketpair: %w", err)
		}
		return os.NewFile(uintptr(fds[0]), "sock-r"), os.NewFile(uintptr(fds[1]), "sock-w"), nil
	}
	if r, w, err = os.Pipe(); err != nil {
		return nil, nil, err
	}
	if pipeSize > 0 {
		if err := setPipeSize(r, pipeSize); err != nil {
			r.Close()
			w.Close()
			return nil, nil, err
		}
	}
	return r, w, nil
}

func setPipeSize(f *os.File, size int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { _, serr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("F_SETPIPE_SZ %d: %w", size, serr)
	}
	return nil
}

// closeRelaySide closes what the step holds, so that a producer or
// consumer blocked on the other end returns.
func (e *ends) closeRelaySide() {
	e.srcR.Close()
	e.dstW.Close()
}

func (e *ends) closePeers() {
	e.srcW.Close()
	e.dstR.Close()
}

// teeRes are a teeStep's own descriptors: scratch, hold (unless direct)
// and /dev/null. pipeSize 0 leaves the pipes at the default size.
type teeRes struct {
	scR, scW, holdR, holdW, null int
}

func newTeeRes(direct bool, pipeSize int) (*teeRes, error) {
	t := &teeRes{holdR: -1, holdW: -1, null: -1}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	t.scR, t.scW = p[0], p[1]
	if !direct {
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.close()
			return nil, err
		}
		t.holdR, t.holdW = p[0], p[1]
	}
	for _, fd := range []int{t.scR, t.holdR} {
		if fd >= 0 && pipeSize > 0 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, pipeSize); err != nil {
				t.close()
				return nil, fmt.Errorf("F_SETPIPE_SZ %d: %w", pipeSize, err)
			}
		}
	}
	null, err := unix.Open(os.DevNull, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.close()
		return nil, err
	}
	t.null = null
	return t, nil
}

func (t *teeRes) close() {
	for _, fd := range []int{t.scR, t.scW, t.holdR, t.holdW, t.null} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// newStep returns the step to run between e's srcR and dstW. buf is the
// step's buffer; a teeStep needs it at least as long as its hold pipe.
func newStep(e *ends, tee, direct bool, t *teeRes, buf []byte, onLine func(record.Digest)) (interface {
	relay(int) error
	stats() *stepStats
}, error) {
	src, err := newPollFD(e.srcR)
	if err != nil {
		return nil, err
	}
	dst, err := newPollFD(e.dstW)
	if err != nil {
		return nil, err
	}
	if !tee {
		s := &rwStep{src: src, dst: dst, buf: buf}
		s.bind(onLine)
		return s, nil
	}
	s := &teeStep{rwStep: rwStep{src: src, dst: dst, buf: buf}, direct: direct, scR: t.scR, scW: t.scW, null: t.null, page: os.Getpagesize()}
	s.bind(onLine)
	s.teeNewFn, s.fillHoldFn = s.doTeeNew, s.doFillHold
	s.hold = src.fd
	if !direct {
		s.hold, s.holdW = t.holdR, t.holdW
	}
	c, err := unix.FcntlInt(uintptr(s.hold), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		return nil, fmt.Errorf("F_GETPIPE_SZ: %w", err)
	}
	sc, err := unix.FcntlInt(uintptr(s.scR), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		return nil, fmt.Errorf("F_GETPIPE_SZ: %w", err)
	}
	if sc < c || len(buf) < c {
		return nil, fmt.Errorf("scratch (%d) or buffer (%d) smaller than hold (%d)", sc, len(buf), c)
	}
	s.cap, s.holdMax = c, len(buf)
	return s, nil
}

func (s *rwStep) stats() *stepStats  { return &s.stepStats }
func (s *teeStep) stats() *stepStats { return &s.stepStats }
