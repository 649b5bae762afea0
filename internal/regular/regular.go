// Package regular refuses paths that do not name regular files and reads
// small regular files (keys, head files) whole. A FIFO would block the
// reader, a device may never end, a directory cannot be renamed over: the
// journal's writer and readers, and the policy loader, refuse them before
// opening, naming what the path is (Describe).
package regular

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Errors of the package. The journal re-exports them under the same names.
var (
	// ErrNotRegular means a path that must name a regular file (an audit
	// log, a key, a head file) names a directory, a FIFO, a device or a
	// socket; aegis neither opens nor reads it.
	ErrNotRegular = errors.New("journal: not a regular file")
	// ErrTooLarge means a file that aegis reads whole (a key, a head file)
	// is larger than any such file can be; it is not read.
	ErrTooLarge = errors.New("journal: file too large")
)

// Check returns ErrNotRegular, naming what path is, unless path (or
// the open file f, if not nil) is a regular file. Symbolic links are
// followed: a link to a regular file is one.
func Check(path string, f *os.File) error {
	var st os.FileInfo
	var err error
	if f != nil {
		st, err = f.Stat()
	} else {
		st, err = os.Stat(path)
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is %s", ErrNotRegular, path, Describe(st.Mode()))
	}
	return nil
}

// Describe says what a file that is not regular is.
func Describe(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

// ReadFile reads the regular file at path whole: a key or a head file,
// never more than limit bytes. Anything else is refused before it is
// opened (ErrNotRegular: a FIFO would block, /dev/zero never ends), and a
// file larger than limit before it is read (ErrTooLarge, naming the file
// and the limit: a sparse file can claim gigabytes). what names the kind
// of file in the error. The FileInfo is that of the file read.
func ReadFile(path, what string, limit int64) ([]byte, os.FileInfo, error) {
	if err := Check(path, nil); errors.Is(err, ErrNotRegular) {
		return nil, nil, fmt.Errorf("%w; %s must be a regular file", err, what)
	} else if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: %s is %s; %s must be a regular file", ErrNotRegular, path, Describe(st.Mode()), what)
	}
	tooLarge := func(n int64) error {
		return fmt.Errorf("%w: %s holds %d bytes or more; %s is at most %d bytes", ErrTooLarge, path, n, what, limit)
	}
	if st.Size() > limit {
		return nil, nil, tooLarge(st.Size())
	}
	// The file may grow after the Stat: read one byte past the limit to
	// know.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > limit {
		return nil, nil, tooLarge(int64(len(data)))
	}
	return data, st, nil
}

// SyncDir makes the entries of dir durable: a file created or renamed
// there survives a power loss only once its directory is synced too. The
// journal and the configuration rewriter replace files by rename.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
