package frame

import (
	"bytes"
	"io"
	"slices"
	"sync"
	"weak"
)

// Defaults used by NewReader for a size or max that is not positive.
const (
	DefaultBufferSize = 64 << 10
	DefaultMaxFrame   = 64 << 20
)

// maxEmptyReads is how many (0, nil) reads in a row Next tolerates before it
// gives up with io.ErrNoProgress, as bufio does.
const maxEmptyReads = 100

// Long lines. A line that outgrows the Reader's buffer continues in a long
// buffer: a mapping of max+1 bytes (mapped.go), where the system has them
// and one of the process's few is free, which holds the line once; else
// one that another long line left in longBufs, if there is one big
// enough; if not, the line is read into blocks and then joined, once, into
// a new long buffer of its size (with an eighth to spare). Once its lines
// are consumed the long buffer goes back to longBufs and the Reader to its
// own buffer. Growing one buffer by doubling would copy as much, but would
// touch up to three times the line (the full old buffer, the new one, and
// the smaller ones before it, which the pacer is in no hurry to collect)
// and keep a buffer up to twice the line; blocks and join touch twice the
// line, once, and then a relay's two Readers take turns with one buffer.

// maxBlock caps a block: blocks double from the buffer's size up to it, so
// a 16 MiB line takes ~20 allocations, and the last block's unused part,
// which the allocator may have to zero, stays small.
const maxBlock = 1 << 20

// longBufs holds, weakly, long buffers that no Reader uses, for the next
// long line in any Reader of the process: a relay's two Readers take turns
// with one. A buffer is owned by one Reader or in longBufs, never both; the
// garbage collector frees one left in longBufs at its next cycle, so a
// process that stops reading long lines gives the memory back. (A
// sync.Pool would not do: an item Put on one P cannot be had from another
// until the next collection moves it to the victim cache.)
var longBufs struct {
	mu   sync.Mutex
	free []weak.Pointer[[]byte]
}

// maxLongBufs bounds longBufs: a relay needs two.
const maxLongBufs = 4

// getLong returns a long buffer of at least n bytes from longBufs, or nil.
func getLong(n int) *[]byte {
	longBufs.mu.Lock()
	defer longBufs.mu.Unlock()
	free := longBufs.free
	for i := len(free) - 1; i >= 0; i-- {
		p := free[i].Value()
		if p == nil || len(*p) >= n {
			free = slices.Delete(free, i, i+1)
		}
		if p != nil && len(*p) >= n {
			longBufs.free = free
			return p
		}
	}
	longBufs.free = free
	return nil
}

// putLong gives a long buffer back to longBufs; when longBufs is full it
// keeps the larger buffers.
func putLong(p *[]byte) {
	longBufs.mu.Lock()
	defer longBufs.mu.Unlock()
	// Drop what the collector has freed. A weak pointer may turn nil at
	// any time, so each is read once and only its length kept.
	free := longBufs.free[:0]
	small, smallLen := -1, 0
	for _, w := range longBufs.free {
		q := w.Value()
		if q == nil {
			continue
		}
		if small < 0 || len(*q) < smallLen {
			small, smallLen = len(free), len(*q)
		}
		free = append(free, w)
	}
	clear(longBufs.free[len(free):])
	switch {
	case len(free) < maxLongBufs:
		free = append(free, weak.Make(p))
	case smallLen < len(*p):
		free[small] = weak.Make(p)
	}
	longBufs.free = free
}

// Reader reads a byte stream and hands out runs of whole lines. It is not
// safe for concurrent use; distinct Readers may run in distinct goroutines
// (the long buffers they share pass between them under a lock).
//
// Invariants, kept between calls:
//   - buf[start:end] is buffered and not yet returned; it holds no '\n' in
//     its first scanned bytes (so a long line read in small pieces is
//     searched once, not once per read);
//   - bytes before start have been returned and may be overwritten by the
//     next read, which is why a returned slice is only valid until Next;
//   - buf is own (the buffer of NewReader's size, kept for the Reader's
//     life) or, when long is not nil, a prefix of *long, owned until it
//     goes back to longBufs;
//   - while a line is longer than buf, spill is not empty: spill[0] is
//     buf[start:end], the rest blocks read after it, every block full
//     but the last, which alone holds bytes not yet scanned for '\n'
//     (spilled-spillScanned of them, at its end); reads go into the last
//     block, and buf is not read into;
//   - end-start plus the bytes in the blocks is at most max+1: one byte
//     more than the longest line, so that a line of exactly max bytes can
//     be told from a longer one.
type Reader struct {
	rd      io.Reader
	buf     []byte
	own     []byte
	long    *[]byte
	start   int
	end     int
	scanned int
	size    int
	max     int
	err     error // sticky: the first read error, or ErrFrameTooLarge

	spill        [][]byte
	spilled      int  // bytes in spill[1:]
	spillScanned int  // of which scanned for '\n'
	mapped       bool // long is a mapping, from mappedBufs
	short        bool // the last read returned less than it had room for
}

// NewReader returns a Reader of r. size is the buffer size, max the longest
// line allowed in bytes, its '\n' included (the relay's --max-frame); a size
// or max <= 0 selects DefaultBufferSize or DefaultMaxFrame. The buffer is
// allocated on the first Next and kept. A line longer than it is read into
// a mapping of max+1 bytes of which only the pages the line touches are
// resident (mapped.go), or, where there is none free, into a long buffer
// that another long line, in any Reader of the process, left in a pool, or
// else into blocks then joined into a new long buffer; the long buffer
// goes back to its pool as soon as its lines are consumed (a heap buffer
// is freed by the next garbage collection if no long line takes it first;
// a mapping gives back its pages past its first MiB). So beyond its buffer
// a Reader holds memory only while it reads and hands out a long line:
// about the line; twice it while a heap buffer is joined.
func NewReader(r io.Reader, size, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	if size <= 0 {
		size = DefaultBufferSize
	}
	if size > max+1 {
		size = max + 1
	}
	return &Reader{rd: r, size: size, max: max}
}

// Next blocks until at least one whole line ('\n'-terminated) is buffered and
// returns all whole lines buffered, as one slice ending in '\n'. The slice
// aliases the Reader's buffer and is valid until the next call to Next.
//
// Bytes that arrived whole in one read are never copied, with one
// exception: a line longer than the buffer is copied, with the bytes that
// arrived after it in the same read, when its '\n' arrives, and its first
// bytes when it moves to a long buffer. Otherwise only an incomplete
// trailing line is moved to the front of the buffer before the next read.
// The concatenation of everything Next returns is exactly the input, byte
// for byte, up to the point where it returns an error.
//
// At EOF a final line without '\n' is returned alone, once, then (nil,
// io.EOF). A read error other than EOF is returned after the whole lines
// read before it; an incomplete line before such an error is not returned.
// A line longer than max bytes is never returned, not even in part: Next
// returns the lines before it, then ErrFrameTooLarge. Errors are sticky.
// Next allocates the buffer on its first call, and otherwise only for a
// line longer than the buffer when no long buffer in the pool holds it.
func (r *Reader) Next() ([]byte, error) {
	if r.err == ErrFrameTooLarge {
		return nil, r.err
	}
	for {
		if r.spilled > r.spillScanned {
			last := r.spill[len(r.spill)-1]
			if bytes.IndexByte(last[len(last)-(r.spilled-r.spillScanned):], '\n') >= 0 {
				r.join()
			} else {
				r.spillScanned = r.spilled
			}
		}
		if r.end-r.start > r.scanned {
			// IndexByte is vectorised and LastIndexByte is not: probe forward
			// first (a long line's new bytes hold no '\n'), then search back
			// from the end, where the last line's end usually is near.
			from := r.start + r.scanned
			if k := bytes.IndexByte(r.buf[from:r.end], '\n'); k >= 0 {
				from += k + 1
				return r.lines(from + bytes.LastIndexByte(r.buf[from:r.end], '\n') + 1)
			}
			r.scanned = r.end - r.start
		}
		pending := r.end - r.start + r.spilled
		if pending > r.max {
			r.err = ErrFrameTooLarge
			r.release()
			return nil, r.err
		}
		if r.err != nil {
			if r.err == io.EOF && pending > 0 {
				r.join()
				line := r.buf[r.start:r.end:r.end]
				r.start, r.scanned = r.end, 0
				return line, nil
			}
			r.release() // an incomplete line before an error is never returned
			return nil, r.err
		}
		r.fill()
	}
}

// Release gives back the long buffer the Reader holds, if any, for another
// Reader's long lines, and drops what it has buffered: the slices Next
// returned are no longer valid, and the Reader reads nothing more (Next
// returns ErrReleased). Call it when a stream is abandoned before Next has
// returned an error: a Reader left holding a mapping (mapped.go) keeps it
// out of the process's few until the process ends. It is safe to call
// more than once, and after Next returned an error.
func (r *Reader) Release() {
	r.release()
	r.err = ErrReleased
}

// lines returns buf[start:stop], whole lines, and consumes them.
func (r *Reader) lines(stop int) ([]byte, error) {
	chunk := r.buf[r.start:stop:stop]
	// At most max+1 bytes are buffered, so a chunk longer than max is
	// either several lines, each short enough, or one line of max+1 bytes.
	if len(chunk) > r.max && bytes.IndexByte(chunk[:len(chunk)-1], '\n') < 0 {
		r.err = ErrFrameTooLarge
		r.release()
		return nil, r.err
	}
	r.start = stop
	r.scanned = r.end - stop // buf[stop:end] follows the last '\n'
	return chunk, nil
}

// join moves a spilled line into a long buffer that holds it: one from the
// pool, or a new one.
func (r *Reader) join() {
	if len(r.spill) == 0 {
		return
	}
	n := r.end - r.start + r.spilled
	p := getLong(n)
	if p == nil {
		// An eighth to spare, so that the next line, a little longer,
		// still fits; whatever of it a line does not touch is not resident.
		b := make([]byte, min(n+n/8+r.size, r.max+1))
		p = &b
	}
	r.moveTo(p, false)
}

// moveTo moves the pending bytes, buf[start:end] and any blocks, to the
// front of the long buffer *p (a mapping if mapped), which becomes buf. A
// long buffer they leave goes back to its pool.
func (r *Reader) moveTo(p *[]byte, mapped bool) {
	b := *p
	b = b[:min(len(b), r.max+1)]
	n := copy(b, r.buf[r.start:r.end])
	for _, blk := range r.spill[min(1, len(r.spill)):] {
		n += copy(b[n:], blk)
	}
	r.scanned = r.end - r.start + r.spillScanned
	clear(r.spill)
	r.spill, r.spilled, r.spillScanned = r.spill[:0], 0, 0
	r.giveBack()
	r.buf, r.long, r.mapped, r.start, r.end = b, p, mapped, 0, n
}

// giveBack returns the long buffer, if any, to its pool; buf must no
// longer alias it.
func (r *Reader) giveBack() {
	switch {
	case r.long == nil:
	case r.mapped:
		putMapped(r.long)
	default:
		putLong(r.long)
	}
	r.long, r.mapped = nil, false
}

// release drops what a long line holds, once nothing more will be read.
func (r *Reader) release() {
	clear(r.spill)
	r.spill, r.spilled, r.spillScanned = nil, 0, 0
	r.buf, r.start, r.end, r.scanned = r.own, 0, 0, 0
	r.giveBack()
}

// fill makes room after the buffered bytes and reads once, recording any
// error in r.err.
func (r *Reader) fill() {
	if r.own == nil {
		r.own = make([]byte, r.size)
		r.buf = r.own
	}
	if len(r.spill) > 0 {
		r.readBlock()
		return
	}
	pending := r.end - r.start
	switch {
	case r.long != nil && pending < len(r.own):
		// The long line has been consumed: back to the Reader's own
		// buffer, and the long one back to the pool, for the next long
		// line in this Reader or another.
		r.end = copy(r.own, r.buf[r.start:r.end])
		r.start = 0
		r.buf = r.own
		r.giveBack()
	case r.start > 0:
		// Only the incomplete trailing line is left: move it to the front.
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		// A line longer than the buffer: continue it in a mapping, or a
		// long buffer from the pool, or in blocks.
		if m := getMapped(r.max + 1); m != nil {
			r.moveTo(m, true)
		} else if p := getLong(r.end + r.size); p != nil {
			r.moveTo(p, false)
		} else {
			r.spill = append(r.spill, r.buf[r.start:r.end])
			r.readBlock()
			return
		}
	}
	r.read(r.buf[r.end:], &r.end)
}

// readBlock reads into the last block of the spilled line, after adding
// one if it is full: twice the bytes buffered, between size and maxBlock,
// and no more than max+1 bytes in all. A mapping or a long buffer that has
// come back to its pool meanwhile (the other direction's) ends the spill
// instead.
func (r *Reader) readBlock() {
	last := r.spill[len(r.spill)-1]
	if len(r.spill) == 1 || len(last) == cap(last) {
		pending := r.end - r.start + r.spilled
		if m := getMapped(r.max + 1); m != nil {
			r.moveTo(m, true)
			r.read(r.buf[r.end:], &r.end)
			return
		}
		if p := getLong(pending + r.size); p != nil {
			r.moveTo(p, false)
			r.read(r.buf[r.end:], &r.end)
			return
		}
		n := min(max(pending, r.size), maxBlock, r.max+1-pending)
		r.spill = append(r.spill, make([]byte, 0, n))
	}
	last = r.spill[len(r.spill)-1]
	n := len(last)
	r.read(last[n:cap(last)], &n)
	r.spilled += n - len(last)
	r.spill[len(r.spill)-1] = last[:n]
}

// read reads once into p, which follows *end bytes, and adds what it read
// to *end. It records any error in r.err.
func (r *Reader) read(p []byte, end *int) {
	for range maxEmptyReads {
		n, err := r.rd.Read(p)
		if n < 0 || n > len(p) {
			r.err = ErrBadRead
			return
		}
		*end += n
		r.short = n < len(p)
		if err != nil {
			r.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.err = io.ErrNoProgress
}

// Short reports whether the last read of the source returned fewer bytes
// than the Reader had room for. A pipe or a socket returns what it holds,
// so after a short read it held nothing more at that moment; bytes may
// have arrived since.
func (r *Reader) Short() bool { return r.short }

// NextLine splits the first line off chunk: line runs up to and including
// the first '\n', or is all of chunk if it has none (a final line at EOF);
// rest is what follows. Walk a chunk from Reader.Next with
//
//	for len(chunk) > 0 {
//		line, chunk = frame.NextLine(chunk)
//		...
//	}
//
// It allocates nothing; line and rest alias chunk.
func NextLine(chunk []byte) (line, rest []byte) {
	if k := bytes.IndexByte(chunk, '\n'); k >= 0 {
		return chunk[: k+1 : k+1], chunk[k+1:]
	}
	return chunk, nil
}
