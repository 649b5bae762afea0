//go:build linux

package copystep

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/journal/record"
)

// copySizes are the frame lengths ('\n' included). A free-running producer
// keeps src full, so the step finds many small frames per read; lockstep
// has one frame in flight at a time (the producer writes the next once the
// consumer has the previous one whole), as a client waiting for each
// answer does: latency, each frame paying the step's syscalls alone.
var copySizes = []struct {
	name     string
	n        int
	lockstep bool
}{
	{"200B", 200, false},
	{"4KiB", 4 << 10, false},
	{"60KiB", 60 << 10, false},
	{"1MiB", 1 << 20, false},
	{"16MiB", 16 << 20, false},
	{"200B-lockstep", 200, true},
	{"4KiB-lockstep", 4 << 10, true},
}

type copyTopo struct {
	name             string
	srcSock, dstSock bool
}

var copyTopos = []copyTopo{
	{"pipe-pipe", false, false},
	{"sock-pipe", true, false},
	{"pipe-sock", false, true},
}

// copyWay is how a step moves bytes; bigPipe raises every pipe to
// bigPipeSize.
type copyWay struct {
	name    string
	tee     bool
	direct  bool
	bigPipe bool
}

func copyWays(tp copyTopo) []copyWay {
	ws := []copyWay{{name: "rw"}, {name: "rw1M", bigPipe: true}}
	if !tp.srcSock && !tp.dstSock {
		ws = append(ws, copyWay{name: "tee64K", tee: true})
	}
	ws = append(ws, copyWay{name: "tee1M", tee: true, bigPipe: true})
	if !tp.srcSock {
		ws = append(ws, copyWay{name: "teeDirect1M", tee: true, direct: true, bigPipe: true})
	}
	return ws
}

// bigPipeSize is the largest pipe an unprivileged aegis may ask for:
// min(1 MiB, fs.pipe-max-size). (The benchmark may run as root, which is
// not bound by it; aegis is.)
func bigPipeSize() int {
	size := 1 << 20
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
		if m, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && m < size {
			size = m
		}
	}
	return size
}

// copyFrame is a JSON-RPC response line of exactly n bytes, '\n' included.
func copyFrame(n int) []byte {
	const head, tail = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"`, `"}]}}` + "\n"
	pad := n - len(head) - len(tail)
	if pad < 0 {
		panic("copyFrame: frame too short")
	}
	const text = "lorem ipsum dolor sit amet "
	b := make([]byte, 0, n)
	b = append(b, head...)
	b = append(b, bytes.Repeat([]byte(text), pad/len(text)+1)[:pad]...)
	return append(b, tail...)
}

// stepBufLen is the length of the step's buffer for lines up to n bytes:
// as frame.Reader grows it (readSize, doubled until the line fits), and at
// least the hold pipe's capacity for a teeStep, which reads it whole.
func stepBufLen(n, hold int) int {
	l := readSize
	for l < n {
		l *= 2
	}
	return max(l, hold)
}

// BenchmarkCopyStep is the measurement that decides whether the relay
// should move bytes with tee(2)/splice(2) instead of read(2)/write(2)
// (the open issue "tee/splice when both ends are pipes"). It measures one
// relay step — take the lines arriving on src, find them, sha256 each,
// move them to dst — with a producer goroutine writing frames into src and
// a consumer draining dst, on real kernel pipes and UNIX socketpairs:
//
//	pipe-pipe  Go and Python clients (pipes), both directions
//	sock-pipe  Node client (socketpair stdio), client→child
//	pipe-sock  Node client, child→client
//
// (the child's stdio are always pipes aegis makes, so sock-sock does not
// occur), with these ways of moving the bytes, side by side per size:
//
//	rw           the current path: read(src) into a user buffer sized as
//	             frame.Reader grows it, scan, hash, write(dst). Pipes at
//	             the default 64 KiB.
//	rw1M         the same with every pipe raised by F_SETPIPE_SZ to
//	             min(1 MiB, fs.pipe-max-size): what a bigger pipe alone
//	             buys.
//	tee1M        splice(src→hold), tee(hold→scratch), read(scratch) into
//	             the user buffer, scan, hash, splice(hold→dst) the whole
//	             lines. hold is a pipe of aegis's own: the only form that
//	             works for a socket src (tee takes pipes only) and the only
//	             safe one for a pipe src (teeStep says why). Every pipe
//	             raised to min(1 MiB, pipe-max-size).
//	tee64K       (pipe-pipe) tee1M with default pipe sizes.
//	teeDirect1M  (pipe src) hold is src itself: tee(src→scratch),
//	             read(scratch), splice(src→dst). One syscall fewer, but it
//	             can deadlock (teeStep, TestPipeFullBelowCapacity): measured
//	             as the best case tee could reach, not as a candidate.
//
// Where tee cannot apply. A recorded frame must not move before its record
// is durable, and its digest needs the whole frame, so under tee the frame
// sits unconsumed in a pipe until its '\n' has been seen: only a frame
// that fits the pipe can be held. pipe-max-size is the limit for an
// unprivileged process (1 MiB by default; a pipe's capacity counts pages,
// so a 1 MiB frame fits only if page-aligned). A longer frame falls back
// to read/write (teeStep.fallback): its teed bytes are already in the user
// buffer, its held copy is dropped with a splice to /dev/null, the rest is
// read and written. At 16 MiB, tee* therefore measures that fallback, and
// the spliced-frac metric says how much of the traffic moved by splice.
// The producer writes each 1 MiB frame page-aligned, so tee1M can hold
// them all here; a real 1 MiB line, aligned anyhow, would not fit. A hold
// pipe fed from a socket takes more bytes than its capacity (a page slot
// may hold a 32 KiB skb fragment: about 4 MiB per 1 MiB pipe on the
// machine of the first run), bounded here by the step's buffer.
//
// Syscalls per frame (the syscalls/frame metric counts them exactly, EAGAIN
// answers included, the runtime's epoll_wait/futex excluded). For a frame
// that arrives whole, one per step:
//
//	rw           read + write                                    = 2
//	tee          splice + tee + read(scratch) + splice           = 4
//	teeDirect    tee + read(scratch) + splice                    = 3
//
// plus one EAGAIN each time the step finds src empty or dst full and
// parks. A frame longer than a pipe needs about len/capacity reads and as
// many writes (or splices).
//
// Metrics: ns/op is wall ns per frame through the pipeline; MB/s from
// SetBytes; step-cpu-ns/frame is the CPU time (user+system) of the thread
// running the step, alone on it (LockOSThread) — the pipeline's wall time
// is its slowest stage's, and for small frames that is the producer's
// write per frame, so this is the figure that isolates the step;
// rw-ratio and rw-cpu-ratio are this way's wall and step-CPU over those
// of rw, run just before (<1 is better); syscalls/frame; spliced-frac, the
// share of bytes moved by splice. -count N repeats each leaf N times in a
// row, so that with N > 1 every ratio is against rw's last repetition; for
// ratios each against the rw measured seconds before it, repeat -count 1:
//
//	for i in $(seq 10); do go test -run '^$' -bench BenchmarkCopyStep -count 1 ./relay/; done
//
// A run that fails to relay every frame, or hashes a line wrongly, fails;
// TestCopyStepRelaysBytes checks the steps byte for byte on mixed sizes
// arriving in odd pieces.
func BenchmarkCopyStep(b *testing.B) {
	big := bigPipeSize()
	for _, tp := range copyTopos {
		b.Run(tp.name, func(b *testing.B) {
			for _, sz := range copySizes {
				b.Run(sz.name, func(b *testing.B) {
					fr := copyFrame(sz.n)
					buf := make([]byte, stepBufLen(sz.n, big))
					cbuf := make([]byte, 1<<20)
					var rwWall, rwCPU float64
					for _, w := range copyWays(tp) {
						b.Run(w.name, func(b *testing.B) {
							wall, cpu := runCopy(b, tp, w, big, fr, sz.lockstep, buf, cbuf)
							if w.name == "rw" {
								rwWall, rwCPU = wall, cpu
							} else if rwWall > 0 && rwCPU > 0 {
								b.ReportMetric(wall/rwWall, "rw-ratio")
								b.ReportMetric(cpu/rwCPU, "rw-cpu-ratio")
							}
						})
					}
				})
			}
		})
	}
}

// runCopy relays b.N copies of fr through one step and returns its wall
// and step-CPU ns/frame.
func runCopy(b *testing.B, tp copyTopo, w copyWay, big int, fr []byte, lockstep bool, buf, cbuf []byte) (wall, cpu float64) {
	pipeSize := 0
	if w.bigPipe {
		pipeSize = big
	}
	e, err := newEnds(tp.srcSock, tp.dstSock, pipeSize)
	if err != nil {
		b.Fatal(err)
	}
	defer e.closePeers()
	var t *teeRes
	if w.tee {
		if t, err = newTeeRes(w.direct, pipeSize); err != nil {
			e.closeRelaySide()
			b.Fatal(err)
		}
		defer t.close()
	}
	want, bad := digest(fr), 0
	st, err := newStep(e, w.tee, w.direct, t, buf, func(d record.Digest) {
		if d != want {
			bad++
		}
	})
	if err != nil {
		e.closeRelaySide()
		b.Fatal(err)
	}

	total := int64(b.N) * int64(len(fr))
	start := make(chan struct{})
	perr := make(chan error, 1)
	got := make(chan int64, 1)
	var ack chan struct{} // lockstep: the consumer has a frame whole
	if lockstep {
		ack = make(chan struct{}, 1)
	}
	go func() {
		<-start
		for range b.N {
			if _, err := e.srcW.Write(fr); err != nil {
				perr <- err
				return
			}
			if ack != nil {
				if _, ok := <-ack; !ok {
					perr <- nil
					return
				}
			}
		}
		perr <- nil
	}()
	go func() {
		if ack == nil {
			got <- drain(e.dstR, cbuf, total)
			return
		}
		var n int64
		for range b.N {
			m := drain(e.dstR, cbuf[:len(fr)], int64(len(fr)))
			n += m
			if m != int64(len(fr)) {
				break
			}
			ack <- struct{}{}
		}
		close(ack)
		got <- n
	}()

	// The step runs on a thread of its own, so that the thread's CPU
	// time is the step's: the pipeline's wall time is its slowest
	// stage's, which for small frames is the producer's write per frame.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(int64(len(fr)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := threadCPU()
	close(start)
	rerr := st.relay(b.N)
	cpu = float64(threadCPU()-cpu0) / float64(b.N)
	if rerr != nil {
		e.closeRelaySide()
		<-got
		b.Fatalf("%s relay: %v", w.name, rerr)
	}
	n := <-got
	b.StopTimer()
	wall = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	e.closeRelaySide()
	if err := <-perr; err != nil {
		b.Fatalf("producer: %v", err)
	}
	s := st.stats()
	if n != total || bad != 0 || s.frames != b.N {
		b.Fatalf("%s: consumer got %d bytes of %d, %d frames of %d, %d bad digests", w.name, n, total, s.frames, b.N, bad)
	}
	b.ReportMetric(float64(s.calls)/float64(b.N), "syscalls/frame")
	b.ReportMetric(float64(s.spliced)/float64(s.spliced+s.written), "spliced-frac")
	b.ReportMetric(cpu, "step-cpu-ns/frame")
	return wall, cpu
}

// threadCPU is the calling thread's CPU time (user and system), in ns.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// drain reads r until it has read total bytes or fails, and returns how
// many it read.
func drain(r *os.File, buf []byte, total int64) int64 {
	var n int64
	for n < total {
		m, err := r.Read(buf)
		n += int64(m)
		if err != nil {
			break
		}
	}
	return n
}

// TestCopyStepRelaysBytes checks the steps BenchmarkCopyStep measures: for
// lines of mixed sizes (some longer than any pipe, so that the tee step
// falls back and comes back) written in pieces that split lines anywhere
// (whole lines for teeDirect), dst receives exactly the bytes of src and
// every line is hashed once, whole.
func TestCopyStepRelaysBytes(t *testing.T) {
	big := bigPipeSize()
	sizes := []int{200, 4096, 61440, big, 300, 2*big + 123, 4096, big - 5000, 61440, 200, 100 << 10}
	var stream []byte
	var want []record.Digest
	for _, n := range sizes {
		fr := copyFrame(n)
		stream = append(stream, fr...)
		want = append(want, digest(fr))
	}
	pieces := []int{1, 777, 4096, 65539, 300001, big + 5}
	for _, tp := range copyTopos {
		for _, w := range copyWays(tp) {
			t.Run(tp.name+"/"+w.name, func(t *testing.T) {
				pipeSize := 0
				if w.bigPipe {
					pipeSize = big
				}
				e, err := newEnds(tp.srcSock, tp.dstSock, pipeSize)
				if err != nil {
					t.Fatal(err)
				}
				defer e.closePeers()
				defer e.closeRelaySide()
				var res *teeRes
				if w.tee {
					if res, err = newTeeRes(w.direct, pipeSize); err != nil {
						t.Fatal(err)
					}
					defer res.close()
				}
				var got []record.Digest
				st, err := newStep(e, w.tee, w.direct, res, make([]byte, stepBufLen(2*big+123, big)), func(d record.Digest) { got = append(got, d) })
				if err != nil {
					t.Fatal(err)
				}
				if ts, ok := st.(*teeStep); ok {
					// Fed by a socket, a hold pipe takes more than its
					// capacity in bytes, how much depends on the kernel:
					// bound it, so that 2*big+123 falls back everywhere.
					ts.holdMax = 2 * big
				}
				// teeDirect only gets whole lines, one write each, as in
				// the benchmark: odd pieces can deadlock it (teeStep).
				cuts := pieces
				if w.direct {
					cuts = sizes
				}
				go func() {
					for i, at := 0, 0; at < len(stream); i++ {
						end := min(at+cuts[i%len(cuts)], len(stream))
						if _, err := e.srcW.Write(stream[at:end]); err != nil {
							return
						}
						at = end
					}
				}()
				out := make(chan []byte, 1)
				go func() {
					var all bytes.Buffer
					cbuf := make([]byte, 1<<20)
					for all.Len() < len(stream) {
						m, err := e.dstR.Read(cbuf)
						all.Write(cbuf[:m])
						if err != nil {
							break
						}
					}
					out <- all.Bytes()
				}()
				done := make(chan error, 1)
				go func() { done <- st.relay(len(sizes)) }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("relay: %v", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("relay: no progress in 30s (a held line that can never complete?)")
				}
				if o := <-out; !bytes.Equal(o, stream) {
					t.Errorf("dst got %d bytes; want the %d bytes of src, identical", len(o), len(stream))
				}
				if len(got) != len(want) {
					t.Fatalf("hashed %d lines; want %d", len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("digest of line %d (%d bytes) = %x; want %x", i, sizes[i], got[i], want[i])
					}
				}
				s := st.stats()
				if w.tee && (s.spliced == 0 || s.fallbacks == 0) {
					t.Errorf("tee step spliced %d bytes with %d fallbacks; want both > 0", s.spliced, s.fallbacks)
				}
				if !w.tee && s.spliced != 0 {
					t.Errorf("rw step spliced %d bytes; want 0", s.spliced)
				}
			})
		}
	}
}

// TestPipeFullBelowCapacity shows why a reader cannot hold a line in the
// writer's pipe (teeDirect): the pipe is full — the writer blocks — with
// far fewer bytes than its capacity, because capacity counts pages and
// pages are not always filled. Writes of 1 and 4096 bytes alternate: each
// 4096-byte write takes a page of its own, each 1-byte write one more.
func TestPipeFullBelowCapacity(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var wfd int
	rc.Control(func(fd uintptr) { wfd = int(fd) })
	one, page := []byte{'x'}, make([]byte, os.Getpagesize())
	held := 0
	for i := 0; ; i++ {
		p := one
		if i%2 == 1 {
			p = page
		}
		n, err := unix.Write(wfd, p)
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		held += n
	}
	c, err := unix.FcntlInt(uintptr(wfd), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if held >= c-os.Getpagesize() {
		t.Errorf("pipe of %d bytes full at %d bytes; want a full pipe below capacity-page (%d)", c, held, c-os.Getpagesize())
	}
}
