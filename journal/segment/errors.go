package segment

import (
	"errors"
	"fmt"
)

// Errors of the package. Classify with errors.Is; I/O failures are
// *IOError and also match ErrIO. Package journal exports the same values
// under the same names.
var (
	// ErrIO matches every *IOError: a read, write or sync of a log file
	// failed.
	ErrIO = errors.New("journal: audit I/O failed")
	// ErrNotLog means a file is not an aegis audit log (it does not begin
	// with a record, its last intact line is not one, or its end is more
	// than a torn write leaves).
	ErrNotLog = errors.New("journal: existing file is not an aegis audit log")
	// ErrCorruptSegment matches the error of reading a compressed segment
	// that does not decode (Open).
	ErrCorruptSegment = errors.New("journal: compressed segment does not decode")
)

// IOError records a failed operation on a log file. Err is the underlying
// error, usually a syscall.Errno (EIO, ENOSPC, …).
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
