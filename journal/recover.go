package journal

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
)

// maxLine bounds the length of a record line that Open and Verify accept.
// The journal's own records are far smaller (a session_start with a long
// argv is the largest); the bound keeps memory finite on hostile input:
// fastjson holds ~50 bytes per byte of a line of tiny values.
const maxLine = 1 << 20

// tail describes the end of an existing audit file.
type tail struct {
	intact     bool   // there is a last intact line
	seq        uint64 // its seq
	hash       Digest // its SHA-256
	tornBytes  int64  // bytes after the last '\n'
	tornDigest Digest
}

// readTail finds the last intact line of f and any torn bytes after it,
// reading backwards from the end: the cost does not grow with the file.
func readTail(f File, path string) (tail, error) {
	var t tail
	size, err := f.Size()
	if err != nil {
		return t, &IOError{Op: "stat", Path: path, Err: err}
	}
	if size, err = contentEnd(f, size); err != nil {
		return t, &IOError{Op: "read", Path: path, Err: err}
	}
	if size == 0 {
		return t, nil
	}
	// lastNL is the offset of the last '\n' (-1 if none).
	lastNL, err := lastIndexNL(f, path, size, size, maxLine)
	if err != nil {
		return t, err
	}
	t.tornBytes = size - lastNL - 1
	if t.tornBytes > 0 {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, lastNL+1, t.tornBytes)); err != nil {
			return t, &IOError{Op: "read", Path: path, Err: err}
		}
		h.Sum(t.tornDigest[:0])
	}
	if lastNL < 0 {
		return t, nil // nothing but a torn line: the chain starts afresh
	}
	start, err := lastIndexNL(f, path, size, lastNL, maxLine)
	if err != nil {
		return t, err
	}
	start++
	if lastNL-start > maxLine {
		return t, fmt.Errorf("%w: %s: last line is longer than %d bytes", ErrNotLog, path, maxLine)
	}
	line := make([]byte, lastNL-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return t, &IOError{Op: "read", Path: path, Err: err}
	}
	var d Decoder
	r, err := d.Decode(line)
	if err != nil {
		return t, fmt.Errorf("%w: %s: last line: %v", ErrNotLog, path, err)
	}
	t.intact, t.seq, t.hash = true, r.Seq, sha256.Sum256(line)
	return t, nil
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
