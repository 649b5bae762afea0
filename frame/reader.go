package frame

import (
	"bytes"
	"io"
)

// Defaults used by NewReader for a size or max that is not positive.
const (
	DefaultBufferSize = 64 << 10
	DefaultMaxFrame   = 64 << 20
)

// maxEmptyReads is how many (0, nil) reads in a row Next tolerates before it
// gives up with io.ErrNoProgress, as bufio does.
const maxEmptyReads = 100

// Reader reads a byte stream and hands out runs of whole lines. It is not
// safe for concurrent use.
//
// Invariants, kept between calls:
//   - buf[start:end] is buffered and not yet returned; it holds no '\n' in
//     its first scanned bytes (so a long line read in small pieces is
//     searched once, not once per read);
//   - bytes before start have been returned and may be overwritten by the
//     next read, which is why a returned slice is only valid until Next;
//   - len(buf) <= max+1: one byte more than the longest line, so that a
//     line of exactly max bytes can be told from a longer one.
type Reader struct {
	rd      io.Reader
	buf     []byte
	start   int
	end     int
	scanned int
	size    int
	max     int
	err     error // sticky: the first read error, or ErrFrameTooLarge
}

// NewReader returns a Reader of r. size is the initial buffer size, max the
// longest line allowed in bytes, its '\n' included (the relay's
// --max-frame); a size or max <= 0 selects DefaultBufferSize or
// DefaultMaxFrame. The buffer is allocated on the first Next and grows,
// doubling up to max+1 bytes, only when a single line needs it; it never
// shrinks.
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
// Bytes that arrived whole in one read are never copied; only an incomplete
// trailing line is moved to the front of the buffer before the next read.
// The concatenation of everything Next returns is exactly the input, byte
// for byte, up to the point where it returns an error.
//
// At EOF a final line without '\n' is returned alone, once, then (nil,
// io.EOF). A read error other than EOF is returned after the whole lines
// read before it; an incomplete line before such an error is not returned.
// A line longer than max bytes is never returned, not even in part: Next
// returns the lines before it, then ErrFrameTooLarge. Errors are sticky.
// Next allocates only to grow the buffer.
func (r *Reader) Next() ([]byte, error) {
	if r.err == ErrFrameTooLarge {
		return nil, r.err
	}
	for {
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
		pending := r.end - r.start
		if pending > r.max {
			r.err = ErrFrameTooLarge
			return nil, r.err
		}
		if r.err != nil {
			if r.err == io.EOF && pending > 0 {
				line := r.buf[r.start:r.end:r.end]
				r.start, r.scanned = r.end, 0
				return line, nil
			}
			return nil, r.err
		}
		r.fill()
	}
}

// lines returns buf[start:stop], whole lines, and consumes them.
func (r *Reader) lines(stop int) ([]byte, error) {
	chunk := r.buf[r.start:stop:stop]
	// The buffer holds at most max+1 bytes, so a chunk longer than max is
	// either several lines, each short enough, or one line of max+1 bytes.
	if len(chunk) > r.max && bytes.IndexByte(chunk[:len(chunk)-1], '\n') < 0 {
		r.err = ErrFrameTooLarge
		return nil, r.err
	}
	r.start = stop
	r.scanned = r.end - stop // buf[stop:end] follows the last '\n'
	return chunk, nil
}

// fill makes room after the buffered bytes and reads once, recording any
// error in r.err.
func (r *Reader) fill() {
	if r.buf == nil {
		r.buf = make([]byte, r.size)
	}
	if r.start > 0 {
		// Only the incomplete trailing line is left: move it to the front.
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		n := 2 * len(r.buf)
		if n > r.max+1 {
			n = r.max + 1
		}
		nb := make([]byte, n)
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	for range maxEmptyReads {
		n, err := r.rd.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			r.err = ErrBadRead
			return
		}
		r.end += n
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
