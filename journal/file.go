package journal

import (
	"errors"
	"path/filepath"

	"github.com/aegisrelay/aegis/internal/vfs"
)

// logFS is the file system the journal writes and reads through
// (Options.FS), with the journal's operations on audit files on top of it.
// Every file the journal opens, reads, writes, renames or removes goes
// through it, so that a test wrapping Options.FS (package errorfs) can
// fail any of them.
type logFS struct{ fs vfs.FS }

// file is an audit file as the journal uses it: appended to at its
// content end (before any pre-zeroed space, prezero.go) and read at
// offsets.
type file struct {
	f    vfs.File
	path string
	z    *zeroer // nil for files opened only to read
	// wrote: Write has been called. Set and read by the one goroutine
	// that writes, then closes, the file.
	wrote bool
}

// OpenAppend opens path for appending and reading, creating it (mode
// 0600, with a sync of its directory so the new entry survives a crash)
// if needed, and takes an exclusive lock on it (ErrLocked if held).
func (d logFS) OpenAppend(path string) (*file, error) {
	f, created, err := d.fs.OpenLocked(path, vfs.OpenOrCreate)
	if err != nil {
		return nil, lockErr(err)
	}
	if created {
		err = d.fs.SyncDir(filepath.Dir(path))
	}
	var z *zeroer
	if err == nil {
		z, err = newZeroer(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &file{f: f, path: path, z: z}, nil
}

// CreateLocked creates path (mode 0600; fs.ErrExist if it exists) for
// appending and reading, locked as OpenAppend locks, but without syncing
// its directory: the caller syncs it once for this and more.
func (d logFS) CreateLocked(path string) (*file, error) {
	f, _, err := d.fs.OpenLocked(path, vfs.CreateNew)
	if err != nil {
		return nil, lockErr(err)
	}
	return &file{f: f, path: path, z: newZeroerAt(f, 0, 0)}, nil
}

// lockErr is err, as ErrLocked if the lock was held.
func lockErr(err error) error {
	if errors.Is(err, vfs.ErrLocked) {
		return ErrLocked
	}
	return err
}

// OpenRead opens an existing file for reading only; its Write fails.
func (d logFS) OpenRead(path string) (*file, error) {
	f, err := d.fs.Open(path)
	if err != nil {
		return nil, err
	}
	return &file{f: f, path: path}, nil
}

// Create creates or truncates path (mode 0600) for writing: the temporary
// files of compression and of the head file. No lock, no sync of the
// directory (the rename that publishes the file does that).
func (d logFS) Create(path string) (*file, error) {
	f, err := d.fs.Create(path)
	if err != nil {
		return nil, err
	}
	return &file{f: f, path: path, z: newZeroerAt(f, 0, 0)}, nil
}

// Rename renames oldpath to newpath in the way mode says.
func (d logFS) Rename(oldpath, newpath string, mode vfs.RenameMode) error {
	return d.fs.Rename(oldpath, newpath, mode)
}

// Remove removes a file.
func (d logFS) Remove(path string) error { return d.fs.Remove(path) }

// SyncDir fsyncs a directory.
func (d logFS) SyncDir(dir string) error { return d.fs.SyncDir(dir) }

// ReadDir returns the names of the entries of dir (a segment.Lister).
func (d logFS) ReadDir(dir string) ([]string, error) { return d.fs.ReadDir(dir) }

func (f *file) Write(p []byte) (int, error) {
	if f.z == nil {
		return 0, errors.New("journal: file opened for reading only")
	}
	f.wrote = true
	return f.z.write(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Close truncates the pre-zeroed space away, but only from a file this
// process wrote to: a file Open refuses, or one it opened and never wrote,
// is closed exactly as it was found.
func (f *file) Close() error {
	var err error
	if f.z != nil && f.wrote {
		_, err = f.z.trim()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *file) preZero(chunk int64) {
	if f.z != nil {
		f.z.preZero(chunk)
	}
}

func (f *file) trim() (bool, error) {
	if f.z == nil {
		return false, nil
	}
	return f.z.trim()
}

// RawSize is the file's size on disk, pre-zeroed space included.
func (f *file) RawSize() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Size is where the file's content ends: for a log opened to append to,
// before any pre-zeroed space (see preZero).
func (f *file) Size() (int64, error) {
	if f.z != nil {
		return f.z.content(), nil
	}
	return f.RawSize()
}

// Sync uses fdatasync: the file's data and the size that reaches it, not
// its timestamps. Retrying after EINTR is safe; after any other error the
// journal never calls Sync again. A failed sync of pre-zeroing is
// returned here too: it may have consumed the error of the records'
// pages.
func (f *file) Sync() error {
	if f.z != nil {
		return f.z.syncContent()
	}
	return f.f.Sync()
}
