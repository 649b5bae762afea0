package journal

import (
	"errors"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/journal/segment"
)

// Errors of the journal. Classify with errors.Is; I/O failures are *IOError
// and also match ErrIO. ErrIO, ErrNotLog and IOError are package segment's,
// which reads the same files: an error of either matches both names.
var (
	// ErrIO matches every *IOError: a write, sync or read of the audit file
	// failed and the journal has failed closed.
	ErrIO = segment.ErrIO
	// ErrClosed is returned by Append and Wait after Close.
	ErrClosed = errors.New("journal: closed")
	// ErrLocked means another process holds the audit file open for writing.
	ErrLocked = errors.New("journal: audit file is in use by another aegis process")
	// ErrNotLog means an existing file is not an aegis audit log (it does
	// not begin with a record, its last intact line is not one, or its end
	// is more than a torn write leaves), so the chain cannot be continued;
	// aegis leaves such a file exactly as it found it.
	ErrNotLog = segment.ErrNotLog
	// ErrRolledBack means an existing log is not an extension of its
	// last checkpoint (Options.Checkpoint.File): it was cut, rolled back
	// to an older copy or rewritten. The log is refused and left as it is.
	ErrRolledBack = errors.New("journal: the log does not extend its last checkpoint")
	// ErrNotRegular means a path that must name a regular file (an audit
	// log, a key, a head file) names a directory, a FIFO, a device or a
	// socket; aegis neither opens nor reads it.
	ErrNotRegular = regular.ErrNotRegular
	// ErrTooLarge means a file that aegis reads whole (a key, a head file)
	// is larger than any such file can be; it is not read.
	ErrTooLarge = regular.ErrTooLarge
)

// IOError records a failed operation on the audit file (segment.IOError).
type IOError = segment.IOError
