package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the policy package; classify with errors.Is.
var (
	// ErrInvalid is matched by every *Error: the file was read but is not a
	// policy this package accepts.
	ErrInvalid = errors.New("policy: invalid policy file")
	// ErrTooLarge: the file is longer than MaxFileSize.
	ErrTooLarge = errors.New("policy: policy file too large")
	// ErrNotRegular: the path names a FIFO, a device, a directory or a
	// socket, which is not read (a FIFO with no writer would block).
	ErrNotRegular = errors.New("policy: policy file is not a regular file")
)

// Diagnostic is one problem in a policy file, at a 1-based line and column
// (Column 0 when the YAML parser gives only a line).
type Diagnostic struct {
	File   string
	Line   int
	Column int
	Msg    string
}

// String formats the diagnostic as compilers do: "file:line:col: message".
func (d Diagnostic) String() string {
	if d.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Column, d.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", d.File, d.Line, d.Msg)
}

// Error is a policy file that cannot be used, with every problem found in
// it, in file order. It matches ErrInvalid.
type Error struct {
	Diags []Diagnostic
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, d := range e.Diags {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
