package segment

import (
	"bufio"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/aegisrelay/aegis/journal/record"
)

// ErrLongLine is matched (errors.Is) by LineReader's error for a line
// longer than record.MaxLine, which it has read past: no record is that
// long, so the line is not one.
var ErrLongLine = fmt.Errorf("%w: line longer than %d bytes", record.ErrRecord, record.MaxLine)

// LongLineError is LineReader's error for a line too long to be a record.
type LongLineError struct {
	N int64 // the line's length, without its '\n'
}

func (e *LongLineError) Error() string {
	return fmt.Sprintf("%v (%d bytes)", ErrLongLine, e.N)
}

// Is makes every LongLineError match ErrLongLine.
func (e *LongLineError) Is(target error) bool { return target == ErrLongLine }

// LineReader reads the '\n'-terminated lines of a log, from a file that
// is complete or from one still being written. It is the one line reader
// of the log's readers (verify, log, tails, follow). A LineReader is not
// safe for concurrent use.
type LineReader struct {
	br      *bufio.Reader
	partial []byte // a line not ended at the last io.EOF
	long    int64  // > 0: the bytes read so far of a line too long to keep
	lh      hash.Hash
}

// NewLineReader returns a LineReader of r with a 64 KiB buffer.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next line without its '\n', valid until the next call.
//
// Where r has no more to give it returns io.EOF (or r's error) and keeps
// the bytes of a line not ended yet: Partial returns them, and a later
// Next, once r has more, continues the line. A line longer than
// record.MaxLine is neither kept nor returned: once its '\n' is read, Next
// answers it with a *LongLineError (matching ErrLongLine), and the next
// call reads on after it.
func (l *LineReader) Next() ([]byte, error) {
	for {
		line, err := l.br.ReadSlice('\n')
		n := len(l.partial) + len(line) // the line's length so far, without '\n'
		if err == nil {
			n--
		}
		if l.long > 0 || n > record.MaxLine {
			if l.lh != nil {
				if l.long == 0 {
					l.lh.Reset()
				}
				l.lh.Write(l.partial)
				if err == nil {
					l.lh.Write(line[:len(line)-1])
				} else {
					l.lh.Write(line)
				}
			}
			l.long += int64(len(l.partial) + len(line))
			l.partial = l.partial[:0]
			if err == nil {
				n := l.long - 1
				l.long = 0
				return nil, &LongLineError{N: n}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			continue
		}
		if err == nil {
			if len(l.partial) > 0 {
				line = append(l.partial, line...)
				l.partial = l.partial[:0]
			}
			return line[:len(line)-1], nil
		}
		l.partial = append(l.partial, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// HashLongLines makes Next write the bytes of every line too long to be a
// record (without its '\n') to h, which it resets where such a line
// begins: once Next has answered the line with a *LongLineError, h holds
// all of it, so that a reader can check the chain across a line it does
// not hold (the next record's prev is the line's SHA-256). Call it before
// the first Next; nil (the default) hashes nothing.
func (l *LineReader) HashLongLines(h hash.Hash) { l.lh = h }

// Partial returns the bytes of a line not ended at the last io.EOF, valid
// until the next call to Next.
func (l *LineReader) Partial() []byte { return l.partial }

// Long reports whether the last io.EOF came within a line too long to be
// a record.
func (l *LineReader) Long() bool { return l.long > 0 }

// LongLen is the count of bytes read so far of a line too long to be a
// record, not yet ended: 0 unless Long.
func (l *LineReader) LongLen() int64 { return l.long }

// Rest returns the line not ended and all that is left to read of r.
func (l *LineReader) Rest() ([]byte, error) {
	rest, err := io.ReadAll(l.br)
	return append(l.partial, rest...), err
}
