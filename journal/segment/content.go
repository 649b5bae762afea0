package segment

import (
	"bytes"
	"io"
	"time"
)

// MaxUnsynced bounds the content written over pre-zeroed space and not yet
// synced: a write that would pass it syncs first (a write longer than it
// goes in pieces). At strict and reply the journal syncs far more often;
// the bound is for a flood of intents at reply, or one huge group. It is
// what lets Open tell a hole a power loss left from the content before
// it (readTail).
const MaxUnsynced = 1 << 20

// ContentEnd returns where the content of a log file of size bytes ends:
// after its last byte that is not NUL. It reads backwards in blocks and
// passes over a block of NULs with one comparison, so that a file that
// is not a log, such as a large sparse file, is told apart quickly.
func ContentEnd(r io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, len(nulBlock))
	for pos := size; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := r.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return 0, err
		}
		if bytes.Equal(buf[:n], nulBlock[:n]) {
			continue
		}
		return pos + int64(lastNonNUL(buf[:n])) + 1, nil
	}
	return 0, nil
}

// nulBlock is ContentEnd's block, all NULs, to compare with.
var nulBlock [64 << 10]byte

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

// NulTail passes its reader's bytes through but for a run of NULs that
// reaches the end: Verify reads any io.Reader, a pipe as well as a file.
// It holds a NUL run by its length alone, so a long one costs no memory,
// and reads into the caller's buffer: only NULs followed by more bytes (a
// hole, which verify judges) make it copy.
type NulTail struct {
	r    io.Reader
	rest []byte // bytes to pass, after pre NULs
	pre  int64  // NULs to pass before rest
	held int64  // NULs read after what was passed, passed only if more than NULs follow
	err  error
}

func (t *NulTail) Read(p []byte) (int, error) {
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

// NewNulTail returns a NulTail of r.
func NewNulTail(r io.Reader) *NulTail { return &NulTail{r: r} }
