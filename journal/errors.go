package journal

import (
	"errors"
	"fmt"
	"github.com/aegisrelay/aegis/journal/internal/regular"
)

// Errors of the journal. Classify with errors.Is; I/O failures are *IOError
// and also match ErrIO.
var (
	// ErrIO matches every *IOError: a write, sync or read of the audit file
	// failed and the journal has failed closed.
	ErrIO = errors.New("journal: audit I/O failed")
	// ErrClosed is returned by Append and Wait after Close.
	ErrClosed = errors.New("journal: closed")
	// ErrLocked means another process holds the audit file open for writing.
	ErrLocked = errors.New("journal: audit file is in use by another aegis process")
	// ErrNotLog means an existing file is not an aegis audit log (it does
	// not begin with a record, its last intact line is not one, or its end
	// is more than a torn write leaves), so the chain cannot be continued;
	// aegis leaves such a file exactly as it found it.
	ErrNotLog = errors.New("journal: existing file is not an aegis audit log")
	// ErrNotRegular means a path that must name a regular file (an audit
	// log, a key, a head file) names a directory, a FIFO, a device or a
	// socket; aegis neither opens nor reads it.
	ErrNotRegular = regular.ErrNotRegular
	// ErrTooLarge means a file that aegis reads whole (a key, a head file)
	// is larger than any such file can be; it is not read.
	ErrTooLarge = regular.ErrTooLarge
	// ErrCorruptSegment matches the error of reading a compressed segment
	// that does not decode (OpenSegment); VerifySet reports it as a problem.
	ErrCorruptSegment = errors.New("journal: compressed segment does not decode")
)

// IOError records a failed operation on the audit file. Err is the
// underlying error, usually a syscall.Errno (EIO, ENOSPC, …).
type IOError struct {
	Op   string // "open", "write", "fdatasync", "read", "close"
	Path string
	Err  error
}

func (e *IOError) Error() string {
	return fmt.Sprintf("journal: %s %s: %v", e.Op, e.Path, e.Err)
}

func (e *IOError) Unwrap() error { return e.Err }

// Is makes every IOError match ErrIO.
func (e *IOError) Is(target error) bool { return target == ErrIO }
