package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// FS is a file system for the audit log's files. Every method is safe for
// concurrent use.
type FS interface {
	// Open opens an existing file for reading only.
	Open(path string) (File, error)
	// OpenLocked opens path for reading and writing and takes an exclusive
	// flock(2) on it (ErrLocked if another open file description holds
	// it). With OpenOrCreate it creates path (mode 0600) if it is missing
	// and created says so; an existing path that is not a regular file is
	// refused (regular.ErrNotRegular) before it is opened, since opening
	// a device can have effects of its own. With CreateNew it fails with
	// an error matching fs.ErrExist if path exists. Neither syncs the
	// directory: the caller decides when a new name must be durable.
	OpenLocked(path string, mode OpenMode) (f File, created bool, err error)
	// Create creates or truncates path (mode 0600) for writing and
	// reading, with no lock.
	Create(path string) (File, error)
	// Rename renames oldpath to newpath in the way mode says.
	// RenameExchange fails with an error matching errors.ErrUnsupported
	// where the file system lacks renameat2(2)'s flags.
	Rename(oldpath, newpath string, mode RenameMode) error
	// Remove removes a file.
	Remove(path string) error
	// Stat returns what stat(2) says of path, following symbolic links.
	Stat(path string) (fs.FileInfo, error)
	// SyncDir fsyncs a directory, making the renames, creations and
	// removals in it durable.
	SyncDir(dir string) error
	// ReadDir returns the names of the entries of dir, in no set order.
	ReadDir(dir string) ([]string, error)
}

// File is an open file of an FS. Read and ReadAt may be used by one
// goroutine while another writes; Zero may run beside WriteAt at offsets
// below it.
type File interface {
	io.Reader
	io.ReaderAt
	io.WriterAt
	// Stat returns what fstat(2) says of the file.
	Stat() (fs.FileInfo, error)
	// Sync makes the file's data, and the size that reaches it, durable
	// (fdatasync(2); its timestamps need not be).
	Sync() error
	// Zero writes n zero bytes at off and makes them durable as Sync
	// does, so that later writes over them commit no new size. It
	// returns how many zeros it wrote: n with an error means the sync
	// failed (and may have taken the error of other pages of the file
	// with it); fewer, that the writing failed and nothing was synced.
	Zero(off, n int64) (int64, error)
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Close closes the file; after an error it is closed all the same.
	Close() error
}

// OpenMode says what OpenLocked does when path is missing or exists.
type OpenMode uint8

const (
	// OpenOrCreate opens path, creating it if it is missing.
	OpenOrCreate OpenMode = iota
	// CreateNew creates path and fails if it exists.
	CreateNew
)

// RenameMode says what Rename does when newpath exists.
type RenameMode uint8

const (
	// RenameReplace replaces newpath atomically (rename(2)).
	RenameReplace RenameMode = iota
	// RenameNoReplace fails with an error matching fs.ErrExist if newpath
	// exists: a sealed segment is never overwritten.
	RenameNoReplace
	// RenameExchange swaps the two names atomically; both must exist.
	RenameExchange
)

// ErrLocked is OpenLocked's error when another open file description
// holds the lock.
var ErrLocked = errors.New("file is locked by another process")

// Or returns fsys, or OS if fsys is nil: the zero value of an option that
// holds an FS.
func Or(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}
