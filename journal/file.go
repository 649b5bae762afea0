package journal

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/regular"
)

// File is the journal's view of the audit file. All of the journal's I/O
// goes through it, so tests can inject failures (see FS).
type File interface {
	io.Writer // appends at Size
	io.ReaderAt
	// Size is where the file's content ends: for a log opened to append
	// to, before any pre-zeroed space (see preZero).
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

// DirFS is the rest of the filesystem that rotation, compression and the
// head file use. An FS that does not implement it gets OSFS's methods for
// these (so a test FS that only counts writes need not spell them out);
// tests that inject faults into rotation embed OSFS and override.
type DirFS interface {
	FS
	// OpenRead opens an existing file for reading only; its Write fails.
	OpenRead(path string) (File, error)
	// CreateLocked creates path (mode 0600; fs.ErrExist if it exists) for
	// appending and reading, locked as OpenAppend locks, but without
	// syncing its directory: the caller syncs it once for this and more.
	CreateLocked(path string) (File, error)
	// Create creates or truncates path (mode 0600) for writing: the
	// temporary files of compression and of the head file. No lock, no
	// sync of the directory (the rename that publishes the file does that).
	Create(path string) (File, error)
	// Rename renames oldpath to newpath in the way mode says. RenameExchange
	// may fail with an error matching errors.ErrUnsupported where the
	// filesystem lacks renameat2(2)'s flags.
	Rename(oldpath, newpath string, mode RenameMode) error
	// Remove removes a file.
	Remove(path string) error
	// SyncDir fsyncs a directory, making renames, creations and removals
	// in it durable.
	SyncDir(dir string) error
	// ReadDir returns the names of the entries of dir.
	ReadDir(dir string) ([]string, error)
}

// dirFS returns fsys as a DirFS, completing it with OSFS if needed.
func dirFS(fsys FS) DirFS {
	if d, ok := fsys.(DirFS); ok {
		return d
	}
	return osDirFS{OSFS: OSFS{}, open: fsys}
}

type osDirFS struct {
	OSFS
	open FS
}

func (d osDirFS) OpenAppend(path string) (File, error) { return d.open.OpenAppend(path) }

// RenameMode says what Rename does when newpath exists.
type RenameMode uint8

const (
	// RenameReplace replaces newpath atomically (rename(2)).
	RenameReplace RenameMode = iota
	// RenameNoReplace fails with an error matching fs.ErrExist if newpath
	// exists: a sealed segment is never overwritten.
	RenameNoReplace
	// RenameExchange swaps the two names atomically; both must exist. With
	// it the live file's name is never missing, not even for an instant.
	RenameExchange
)

// OSFS is the operating system's filesystem.
type OSFS struct{}

type osFile struct {
	f *os.File
	z *zeroer // nil for files opened only to read
	// wrote: Write has been called. Set and read by the one goroutine
	// that writes, then closes, the file.
	wrote bool
}

func (f *osFile) Write(p []byte) (int, error) {
	if f.z == nil {
		return 0, errors.New("journal: file opened for reading only")
	}
	f.wrote = true
	return f.z.write(p)
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Close truncates the pre-zeroed space away, but only from a file this
// process wrote to: a file Open refuses, or one it opened and never wrote,
// is closed exactly as it was found.
func (f *osFile) Close() error {
	if f.z == nil || !f.wrote {
		return f.f.Close()
	}
	_, err := f.z.trim()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *osFile) preZero(chunk int64) {
	if f.z != nil {
		f.z.preZero(chunk)
	}
}

func (f *osFile) trim() (bool, error) {
	if f.z == nil {
		return false, nil
	}
	return f.z.trim()
}

// RawSize is the file's size on disk, pre-zeroed space included.
func (f *osFile) RawSize() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (f *osFile) Size() (int64, error) {
	if f.z != nil {
		return f.z.content(), nil
	}
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Sync uses fdatasync: the file's data and the size that reaches it, not
// its timestamps. Retrying after EINTR is safe; after any other error the
// journal never calls Sync again. A failed sync of pre-zeroing is
// returned here too: it may have consumed the error of the records'
// pages.
func (f *osFile) Sync() error {
	if f.z != nil {
		return f.z.syncContent()
	}
	return fdatasync(f.f)
}

// OpenAppend implements FS.
func (OSFS) OpenAppend(path string) (File, error) {
	return openLocked(path, true)
}

// CreateLocked implements DirFS.
func (OSFS) CreateLocked(path string) (File, error) {
	return openLocked(path, false)
}

// openLocked opens path for appending and locks it: creating it if need
// be (and syncing its directory, if syncNew), or, with !syncNew, only
// creating it.
//
// An existing path that is not a regular file is refused (ErrNotRegular)
// before it is opened: opening a device can have effects of its own.
func openLocked(path string, syncNew bool) (File, error) {
	created := true
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) && syncNew {
		created = false
		if err = regular.Check(path, nil); err == nil {
			f, err = os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
		}
		if err == nil {
			// Replaced between the check and the open: check what was opened.
			if err = regular.Check(path, f); err != nil {
				f.Close()
			}
		}
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
	if err == nil && created && syncNew {
		err = syncDir(filepath.Dir(path))
	}
	var z *zeroer
	if err == nil {
		z, err = newZeroer(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &osFile{f: f, z: z}, nil
}

// OpenRead implements FS.
func (OSFS) OpenRead(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

// Create implements FS.
func (OSFS) Create(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, z: newZeroerAt(f, 0, 0)}, nil
}

// Rename implements FS with renameat2(2). Where the filesystem refuses its
// flags (EINVAL), RenameNoReplace falls back to a check and rename(2) —
// safe because the journal holds the log's lock — and RenameExchange
// reports errors.ErrUnsupported, for the caller to fall back on.
func (OSFS) Rename(oldpath, newpath string, mode RenameMode) error {
	if mode != RenameNoReplace && mode != RenameExchange {
		return os.Rename(oldpath, newpath)
	}
	err := renameat2(oldpath, newpath, mode)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if mode == RenameExchange {
			return &os.LinkError{Op: "rename-exchange", Old: oldpath, New: newpath, Err: errors.ErrUnsupported}
		}
		if _, serr := os.Lstat(newpath); serr == nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: os.ErrExist}
		}
		return os.Rename(oldpath, newpath)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// Remove implements FS.
func (OSFS) Remove(path string) error { return os.Remove(path) }

// SyncDir implements FS.
func (OSFS) SyncDir(dir string) error { return syncDir(dir) }

// ReadDir implements FS.
func (OSFS) ReadDir(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
