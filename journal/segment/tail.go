package segment

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"

	"github.com/aegisrelay/aegis/journal/record"
)

// Tail describes the end of a log file (ReadTail, StreamTail): its last
// intact line and what follows it.
type Tail struct {
	Intact     bool          // there is a last intact line
	Seq        uint64        // its seq
	Hash       record.Digest // its SHA-256
	TornBytes  int64         // bytes after the last intact line
	TornDigest record.Digest
	// TornEnded says the torn bytes are followed by a '\n' (not counted in
	// tornBytes): a hole left lines after it (see readTail).
	TornEnded bool
}

// ReadTail finds the last intact line of f and any torn bytes after it,
// reading backwards from the end: the cost does not grow with the file.
//
// Torn bytes are what follows the last '\n', or, where a NUL byte lies in
// the last maxUnsynced bytes of content, everything from the start of its
// line: a power loss during a write over pre-zeroed space may keep a later
// page of it and lose an earlier one, which reads as NULs (a hole). No
// record holds a NUL, and no more than maxUnsynced bytes of content are
// ever unsynced (prezero.go), so the first such NUL is where what reached
// the disk for certain ends. Only where a file is to be continued need it
// look for holes (holes): sealed segments have none.
//
// A file to be continued (holes) must also be a log, or ErrNotLog: aegis
// never writes to a file that it did not write (checkStart, checkTorn).
// The checks read the file's first bytes and its torn bytes, nothing else.
func ReadTail(f File, path string, holes bool) (Tail, error) {
	var t Tail
	size, err := f.Size()
	if err != nil {
		return t, &IOError{Op: "stat", Path: path, Err: err}
	}
	if size, err = ContentEnd(f, size); err != nil {
		return t, &IOError{Op: "read", Path: path, Err: err}
	}
	if holes {
		if err := checkStart(f, path, size); err != nil {
			return t, err
		}
	}
	if size == 0 {
		return t, nil
	}
	end := size // where the intact lines end, at the latest
	hole := int64(-1)
	if holes {
		if hole, err = firstNUL(f, max(0, size-MaxUnsynced), size); err != nil {
			return t, &IOError{Op: "read", Path: path, Err: err}
		}
	}
	if hole >= 0 {
		end = hole
	}
	// lastNL is the offset of the last '\n' before end (-1 if none).
	lastNL, err := lastIndexNL(f, path, size, end, record.MaxLine)
	if err != nil {
		return t, err
	}
	tornEnd := size
	if hole >= 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return t, &IOError{Op: "read", Path: path, Err: err}
		}
		if t.TornEnded = last[0] == '\n'; t.TornEnded {
			tornEnd--
		}
	}
	t.TornBytes = tornEnd - lastNL - 1
	if t.TornBytes > 0 {
		h := sha256.New()
		tc := &tornCheck{w: h}
		if _, err := io.Copy(tc, io.NewSectionReader(f, lastNL+1, t.TornBytes)); err != nil {
			return t, &IOError{Op: "read", Path: path, Err: err}
		}
		if holes && tc.bad != "" {
			return t, fmt.Errorf("%w: %s: the %d bytes after its last complete line are not what a torn write leaves: %s", ErrNotLog, path, t.TornBytes, tc.bad)
		}
		h.Sum(t.TornDigest[:0])
	}
	if lastNL < 0 {
		return t, nil // nothing but a torn line: the chain starts afresh
	}
	start, err := lastIndexNL(f, path, size, lastNL, record.MaxLine)
	if err != nil {
		return t, err
	}
	start++
	if lastNL-start > record.MaxLine {
		return t, fmt.Errorf("%w: %s: last line is longer than %d bytes", ErrNotLog, path, record.MaxLine)
	}
	line := make([]byte, lastNL-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return t, &IOError{Op: "read", Path: path, Err: err}
	}
	var d record.Decoder
	r, err := d.Decode(line)
	if err != nil {
		return t, fmt.Errorf("%w: %s: last line: %v", ErrNotLog, path, err)
	}
	t.Intact, t.Seq, t.Hash = true, r.Seq, sha256.Sum256(line)
	return t, nil
}

// firstNUL returns the offset of the first NUL byte in [from, to) of f, or
// -1.
func firstNUL(f io.ReaderAt, from, to int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for pos := from; pos < to; {
		n := min(int64(len(buf)), to-pos)
		if _, err := f.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return pos + int64(i), nil
		}
		pos += n
	}
	return -1, nil
}

// lastIndexNL returns the offset of the last '\n' before end, or -1,
// looking back at most limit bytes (beyond that: ErrNotLog).
func lastIndexNL(f File, path string, size, end, limit int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for pos := end; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return 0, &IOError{Op: "read", Path: path, Err: err}
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i), nil
		}
		if end-pos > limit {
			return 0, fmt.Errorf("%w: %s: no line end in the last %d bytes", ErrNotLog, path, limit)
		}
	}
	return -1, nil
}

// checkStart refuses (ErrNotLog) a file whose content, which ends at
// content, cannot be the start of a log: one that begins with anything but
// a record (record.LineStart), and one that holds nothing but NULs. A log's
// first line is a record, or a torn one (a prefix of a record), or, after
// a power loss over pre-zeroed space, a hole: NULs, which are torn bytes
// only within the last maxUnsynced bytes of content (readTail). A file of
// NULs alone is none of these: aegis writes its first record before it
// pre-zeroes a byte, and syncs it with the zeros.
func checkStart(f File, path string, content int64) error {
	if content == 0 {
		raw, err := rawSize(f)
		if err != nil {
			return &IOError{Op: "stat", Path: path, Err: err}
		}
		if raw > 0 {
			return fmt.Errorf("%w: %s holds nothing but %d NUL bytes, and no record to continue", ErrNotLog, path, raw)
		}
		return nil
	}
	head := make([]byte, min(content, int64(len(record.LineStart))))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return &IOError{Op: "read", Path: path, Err: err}
	}
	if head[0] == 0 {
		if content > MaxUnsynced {
			return fmt.Errorf("%w: %s begins with NUL bytes, further from its end than a torn write reaches", ErrNotLog, path)
		}
		return nil
	}
	if !strings.HasPrefix(record.LineStart, string(head)) {
		return fmt.Errorf("%w: %s does not begin with a record (%s…)", ErrNotLog, path, record.LineStart)
	}
	return nil
}

// rawSize returns the size of f on disk, pre-zeroed space included, where
// f can tell it (a journal file), else its Size.
func rawSize(f File) (int64, error) {
	if r, ok := f.(interface{ RawSize() (int64, error) }); ok {
		return r.RawSize()
	}
	return f.Size()
}

// tornCheck passes torn bytes on to w and notes in bad why they cannot be
// what a torn write leaves: the start of a line that is no prefix of a
// record, or a byte that no line of the journal holds (the encoder
// escapes every byte below 0x20; NULs are a hole, '\n' ends the lines
// written after one).
type tornCheck struct {
	w    io.Writer
	head []byte // the first bytes, up to len(record.LineStart)
	n    int64
	bad  string
}

func (c *tornCheck) Write(p []byte) (int, error) {
	if c.bad == "" {
		if k := len(record.LineStart) - len(c.head); k > 0 {
			c.head = append(c.head, p[:min(k, len(p))]...)
			if h := c.head; h[0] != 0 && !strings.HasPrefix(record.LineStart, string(h)) {
				c.bad = "they do not begin as a record does (" + record.LineStart + "…)"
			}
		}
		for i, b := range p {
			if b < 0x20 && b != 0 && b != '\n' {
				c.bad = fmt.Sprintf("byte %d is 0x%02x, which no record holds", c.n+int64(i), b)
				break
			}
		}
	}
	c.n += int64(len(p))
	return c.w.Write(p)
}
