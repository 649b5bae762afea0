package journal

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// File is the journal's view of the audit file. All of the journal's I/O
// goes through it, so tests can inject failures (see FS).
type File interface {
	io.Writer // appends: the file is opened O_APPEND
	io.ReaderAt
	Size() (int64, error)
	Sync() error // fdatasync(2)
	Close() error
}

// FS opens audit files. OSFS is the real one; tests wrap it to fail the Nth
// write or sync.
type FS interface {
	// OpenAppend opens path for appending and reading, creating it (mode
	// 0600, with a sync of its directory so the new entry survives a crash)
	// if needed, and takes an exclusive lock on it (ErrLocked if held).
	OpenAppend(path string) (File, error)
}

// OSFS is the operating system's filesystem.
type OSFS struct{}

type osFile struct{ f *os.File }

func (f osFile) Write(p []byte) (int, error)             { return f.f.Write(p) }
func (f osFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f osFile) Close() error                            { return f.f.Close() }

func (f osFile) Size() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Sync uses fdatasync: the file's data and the size that reaches it, not
// its timestamps. Retrying after EINTR is safe; after any other error the
// journal never calls Sync again.
func (f osFile) Sync() error {
	sc, err := f.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := sc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// OpenAppend implements FS.
func (OSFS) OpenAppend(path string) (File, error) {
	created := true
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		created = false
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	}
	if err != nil {
		return nil, err
	}
	sc, err := f.SyscallConn()
	if err == nil {
		var lerr error
		err = sc.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) })
		if err == nil && lerr != nil {
			err = lerr
			if errors.Is(lerr, unix.EWOULDBLOCK) {
				err = ErrLocked
			}
		}
	}
	if err == nil && created {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return osFile{f}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
