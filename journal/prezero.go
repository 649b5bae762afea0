package journal

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"
)

// Pre-zeroed space (SPEC §4: "preallocated or pre-zeroed segments").
//
// An fdatasync after an append must also commit the file's new size (on
// ext4 a journal commit); after a write over blocks already written and
// synced it only writes the data back. On this project's machine the
// first cost 138 µs and the second 103 µs in one harness run, measured
// side by side (BENCHMARKS.md). So at
// strict and reply, where a sync is on every call's path, a log keeps
// preZeroChunk..2×preZeroChunk bytes of zeros, written and synced by a
// background goroutine, ahead of its content, and records overwrite them.
//
// The content of a log file ends at its last byte that is not NUL: no
// record holds a NUL byte (JSON escapes it), so a run of NULs at the end
// of a file is space not yet used. Readers skip it (ContentReader,
// readTail); Open writes over it; Close and sealing truncate it away.

// preZeroChunk is how much the zeroer writes at a time, once less than
// half of it is left ahead of the content.
const preZeroChunk = 1 << 20

// maxUnsynced bounds the content written over pre-zeroed space and not yet
// synced: a write that would pass it syncs first (a write longer than it
// goes in pieces). At strict and reply the journal syncs far more often;
// the bound is for a flood of intents at reply, or one huge group. It is
// what lets Open tell a hole a power loss left from the content before
// it (readTail).
const maxUnsynced = 1 << 20

var zeros [64 << 10]byte

// minPreZeroChunk is the least the zeroer writes at a time.
const minPreZeroChunk = 64 << 10

// preZeroOn turns pre-zeroing on for f, if f can (an OSFS file: test
// files that wrap one cannot), in chunks of chunk bytes.
func preZeroOn(f File, chunk int64) {
	if z, ok := f.(interface{ preZero(int64) }); ok {
		z.preZero(chunk)
	}
}

// preZeroChunkFor is the chunk for a log rotated at maxSize (0: never):
// a segment smaller than a MiB gets no more zeros than it will hold.
func preZeroChunkFor(maxSize int64) int64 {
	if maxSize <= 0 {
		return preZeroChunk
	}
	return min(preZeroChunk, max(minPreZeroChunk, maxSize))
}

// trimToContent truncates the pre-zeroed space off f before it is sealed,
// and syncs f if that changed it (or if synced is false).
func trimToContent(f File, synced bool) error {
	if t, ok := f.(interface{ trim() (bool, error) }); ok {
		trimmed, err := t.trim()
		if err != nil {
			return err
		}
		synced = synced && !trimmed
	}
	if synced {
		return nil
	}
	return f.Sync()
}

// zeroer appends to a file at its content end, and keeps pre-zeroed space
// ahead of it once preZero is called. One goroutine writes at a time (the
// journal's leader); the zeroer's own goroutine extends the space.
type zeroer struct {
	f        *os.File
	zeroSync func(*os.File) error // the extensions' fdatasync; tests fail it

	mu     sync.Mutex
	cond   sync.Cond
	end    int64 // content end: where the next write goes
	synced int64 // content below it is synced (as far as pre-zeroing tracks it)
	zeroed int64 // [end, zeroed) holds zeros
	chunk  int64 // 0: no (more) pre-zeroing
	// bounded: content has been written over pre-zeroed space, so no more
	// than maxUnsynced bytes of it may be unsynced; set by preZero, kept
	// when pre-zeroing stops (the space written so far stays).
	bounded bool
	busy    bool  // an extension is being written, from zeroed on
	err     error // its fdatasync failed: every later Sync fails
}

// newZeroer returns the zeroer of a log file opened to append to, its
// content end found past any NUL run at the end.
func newZeroer(f *os.File) (*zeroer, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end, err := contentEnd(f, st.Size())
	if err != nil {
		return nil, err
	}
	return newZeroerAt(f, end, st.Size()), nil
}

// newZeroerAt returns the zeroer of f, whose content ends at end and which
// holds zeros from there to size.
func newZeroerAt(f *os.File, end, size int64) *zeroer {
	z := &zeroer{f: f, zeroSync: fdatasync, end: end, synced: end, zeroed: size}
	z.cond.L = &z.mu
	return z
}

func (z *zeroer) content() int64 {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.end
}

// write writes p at the content end; with pre-zeroing on, it keeps no more
// than maxUnsynced bytes unsynced.
func (z *zeroer) write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		z.mu.Lock()
		on, unsynced := z.bounded, z.end-z.synced
		z.mu.Unlock()
		n := len(p)
		if on {
			if unsynced >= maxUnsynced {
				if err := z.syncContent(); err != nil {
					return written, err
				}
				unsynced = 0
			}
			n = int(min(int64(n), maxUnsynced-unsynced))
		}
		k, err := z.writeAt(p[:n])
		written += k
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// syncContent fdatasyncs the file and notes the content it made durable.
// Only the one goroutine that writes calls it (through write or Sync).
func (z *zeroer) syncContent() error {
	z.mu.Lock()
	end, err := z.end, z.err
	z.mu.Unlock()
	if err != nil {
		return err
	}
	if err := fdatasync(z.f); err != nil {
		return err
	}
	z.mu.Lock()
	z.synced = max(z.synced, end)
	z.mu.Unlock()
	return nil
}

// writeAt writes p at the content end. It waits only if p reaches into an
// extension being written.
func (z *zeroer) writeAt(p []byte) (int, error) {
	z.mu.Lock()
	for z.busy && z.end+int64(len(p)) > z.zeroed {
		z.cond.Wait()
	}
	off := z.end
	z.mu.Unlock()
	n, err := z.f.WriteAt(p, off)
	z.mu.Lock()
	z.end += int64(n)
	z.zeroed = max(z.zeroed, z.end)
	if err == nil && z.chunk > 0 && !z.busy && z.zeroed-z.end < z.chunk/2 {
		z.busy = true
		go z.extend(z.zeroed, z.chunk)
	}
	z.mu.Unlock()
	return n, err
}

// preZero turns pre-zeroing on: the next write starts an extension.
func (z *zeroer) preZero(chunk int64) {
	z.mu.Lock()
	z.chunk, z.bounded = chunk, true
	z.mu.Unlock()
}

// extend writes n zeros at from and syncs them. A failed write only ends
// pre-zeroing: the records are appended as before. A failed sync fails
// every later Sync: it may have taken the error of a record's page with
// it (the kernel reports a writeback error once per open file).
func (z *zeroer) extend(from, n int64) {
	var err error
	done := int64(0)
	for done < n && err == nil {
		var k int
		k, err = z.f.WriteAt(zeros[:min(int64(len(zeros)), n-done)], from+done)
		done += int64(k)
	}
	var serr error
	if err == nil {
		serr = z.zeroSync(z.f)
	}
	z.mu.Lock()
	z.busy = false
	z.zeroed = max(z.zeroed, from+done)
	if err != nil || serr != nil {
		z.chunk = 0
	}
	if serr != nil && z.err == nil {
		z.err = serr
	}
	z.cond.Broadcast()
	z.mu.Unlock()
}

// trim ends pre-zeroing and truncates the file to its content; trimmed
// says whether it changed the file's size (which a sync must then make
// durable before the file is sealed).
func (z *zeroer) trim() (trimmed bool, err error) {
	z.mu.Lock()
	z.chunk = 0
	for z.busy {
		z.cond.Wait()
	}
	end := z.end
	z.mu.Unlock()
	st, err := z.f.Stat()
	if err != nil || st.Size() <= end {
		return false, err
	}
	return true, z.f.Truncate(end)
}

// contentEnd returns where the content of a log file of size bytes ends:
// after its last byte that is not NUL.
func contentEnd(r io.ReaderAt, size int64) (int64, error) {
	var buf [4 << 10]byte
	for pos := size; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := r.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return 0, err
		}
		if i := lastNonNUL(buf[:n]); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}

func lastNonNUL(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// ContentReader reads a log file from its start to the end of its content:
// a run of NUL bytes that reaches the end of the file is not read (it is
// space pre-zeroed for records not yet written). NULs followed by other
// bytes are read as they are, for verify to judge. At the end it returns
// io.EOF without moving past the NULs, so reading again once more is
// written goes on where it stopped (aegis log -f).
//
// NULs followed by other bytes are what a power loss can leave (a hole),
// but also what a reader sees when a write of several pages over
// pre-zeroed space overtakes it: the page it read was not written yet,
// the next one was. Such a write ends within microseconds, so the first
// time a hole is met at an offset, the reader reads it again after
// settleHole; only a hole that is still there is read as NULs.
type ContentReader struct {
	r      io.ReaderAt
	off    int64
	buf    []byte // for looking past a NUL run
	holeAt int64  // the offset of the last hole waited for
}

// settleHole is how long a ContentReader waits before it reads a hole
// again.
const settleHole = time.Millisecond

// NewContentReader returns a ContentReader of r from its start.
func NewContentReader(r io.ReaderAt) *ContentReader { return &ContentReader{r: r, holeAt: -1} }

func (c *ContentReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := c.r.ReadAt(p, c.off)
	if n == 0 {
		return 0, err
	}
	i := bytes.IndexByte(p[:n], 0)
	if i < 0 {
		c.off += int64(n)
		return n, nil
	}
	if i > 0 {
		c.off += int64(i)
		return i, nil
	}
	// p starts with a NUL run: read it only if something follows it.
	run, err := c.nulRun()
	if run == 0 && err == nil {
		return c.Read(p) // filled since it was read: a write in progress
	}
	if run == 0 {
		return 0, err
	}
	if c.holeAt != c.off {
		c.holeAt = c.off
		time.Sleep(settleHole)
		return c.Read(p)
	}
	k := int(min(run, int64(n)))
	clear(p[:k])
	c.off += int64(k)
	return k, nil
}

// nulRun returns the length of the NUL run at off if bytes other than NUL
// follow it, or 0 and io.EOF (or a read error) if it reaches the end.
func (c *ContentReader) nulRun() (int64, error) {
	if c.buf == nil {
		c.buf = make([]byte, 64<<10)
	}
	for pos := c.off; ; {
		n, err := c.r.ReadAt(c.buf, pos)
		for _, b := range c.buf[:n] {
			if b != 0 {
				return pos - c.off, nil
			}
			pos++
		}
		if err != nil {
			return 0, err
		}
	}
}

// nulTail passes its reader's bytes through but for a run of NULs that
// reaches the end: Verify reads any io.Reader, a pipe as well as a file.
// It holds a NUL run by its length alone, so a long one costs no memory,
// and reads into the caller's buffer: only NULs followed by more bytes (a
// hole, which verify judges) make it copy.
type nulTail struct {
	r    io.Reader
	rest []byte // bytes to pass, after pre NULs
	pre  int64  // NULs to pass before rest
	held int64  // NULs read after what was passed, passed only if more than NULs follow
	err  error
}

func (t *nulTail) Read(p []byte) (int, error) {
	for {
		if t.pre > 0 {
			k := int(min(t.pre, int64(len(p))))
			clear(p[:k])
			t.pre -= int64(k)
			return k, nil
		}
		if len(t.rest) > 0 {
			n := copy(p, t.rest)
			t.rest = t.rest[n:]
			return n, nil
		}
		if t.err != nil {
			return 0, t.err // NULs still held reach the end: not content
		}
		n, err := t.r.Read(p)
		t.err = err
		j := lastNonNUL(p[:n])
		switch {
		case j < 0:
			t.held += int64(n)
		case t.held == 0:
			t.held = int64(n - j - 1)
			return j + 1, nil
		default:
			t.rest = append(t.rest[:0], p[:j+1]...)
			t.pre, t.held = t.held, int64(n-j-1)
		}
	}
}
