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
// goes through it (see FS).
type File interface {
	io.Writer // appends at Size
	io.ReaderAt
	// Size is where the file's content ends: for a log opened to append
	// to, before any pre-zeroed space (see preZero).
	Size() (int64, error)
	Sync() error // fdatasync(2)
	Close() error
}

// FS opens audit files. OSFS is the real one; tests inject failures
// through its Fault hook.
type FS interface {
	// OpenAppend opens path for appending and reading, creating it (mode
	// 0600, with a sync of its directory so the new entry survives a crash)
	// if needed, and takes an exclusive lock on it (ErrLocked if held).
	OpenAppend(path string) (File, error)
}

// DirFS is the rest of the filesystem that rotation, compression and the
// head file use. An FS that does not implement it gets OSFS's methods for
// these (so an FS that only wraps OpenAppend need not spell them out).
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

// OSFS is the operating system's filesystem: the zero value is the one
// aegis uses; with Fault set, the same with failures injected.
type OSFS struct {
	// Fault, when not nil, is asked before each operation OSFS does and
	// each one the files it opens do, so that tests can fail any of them
	// (package internal/faultfs's Injector.Hook is one). It is given the
	// operation's kind, its path (a file, or a directory for readdir and
	// syncdir; the old path of a rename) and n, the length of a write (0
	// for every other kind), and returns how many of the n bytes to write
	// and the error to return in place of the operation's own; (n, nil)
	// lets the operation run. A write cut short writes its first bytes and
	// returns their count with the error, which may be nil. The kinds:
	//
	//	open              OpenAppend, OpenRead
	//	create            CreateLocked, Create
	//	read              File.ReadAt
	//	write             File.Write: records appended at the content end
	//	sync              fdatasync of the records (File.Sync, or a long
	//	                  write over pre-zeroed space bounding what is unsynced)
	//	prezero           a write of zeros ahead of the content (prezero.go)
	//	prezero-sync      the fdatasync of those zeros
	//	truncate          the pre-zeroed space trimmed off (Close, sealing)
	//	close             File.Close (the file is closed all the same)
	//	rename, rename-noreplace, rename-exchange
	//	                  Rename, by RenameMode
	//	remove, syncdir, readdir
	//
	// Nil in every use but tests: it costs a nil check per operation.
	Fault func(kind, path string, n int) (int, error)
}

// The kinds of operation OSFS names to its Fault hook.
const (
	fsOpen            = "open"
	fsCreate          = "create"
	fsRead            = "read"
	fsWrite           = "write"
	fsSync            = "sync"
	fsPreZero         = "prezero"
	fsPreZeroSync     = "prezero-sync"
	fsTruncate        = "truncate"
	fsClose           = "close"
	fsRename          = "rename"
	fsRenameNoReplace = "rename-noreplace"
	fsRenameExchange  = "rename-exchange"
	fsRemove          = "remove"
	fsSyncDir         = "syncdir"
	fsReadDir         = "readdir"
)

// faultHook is OSFS.Fault, with a check for the operations that write
// nothing.
type faultHook func(kind, path string, n int) (int, error)

func (h faultHook) check(kind, path string) error {
	if h == nil {
		return nil
	}
	_, err := h(kind, path, 0)
	return err
}

type osFile struct {
	f     *os.File
	path  string
	fault faultHook
	z     *zeroer // nil for files opened only to read
	// wrote: Write has been called. Set and read by the one goroutine
	// that writes, then closes, the file.
	wrote bool
}

func (f *osFile) Write(p []byte) (int, error) {
	if f.z == nil {
		return 0, errors.New("journal: file opened for reading only")
	}
	f.wrote = true
	if f.fault != nil {
		if k, err := f.fault(fsWrite, f.path, len(p)); k < len(p) || err != nil {
			n, werr := f.z.write(p[:max(k, 0)])
			if werr != nil {
				return n, werr
			}
			return n, err
		}
	}
	return f.z.write(p)
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fault.check(fsRead, f.path); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

// Close truncates the pre-zeroed space away, but only from a file this
// process wrote to: a file Open refuses, or one it opened and never wrote,
// is closed exactly as it was found.
func (f *osFile) Close() error {
	var err error
	if f.z != nil && f.wrote {
		_, err = f.z.trim()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if ferr := f.fault.check(fsClose, f.path); err == nil {
		err = ferr
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
	if err := f.fault.check(fsSync, f.path); err != nil {
		return err
	}
	return fdatasync(f.f)
}

// OpenAppend implements FS.
func (fs OSFS) OpenAppend(path string) (File, error) {
	if err := faultHook(fs.Fault).check(fsOpen, path); err != nil {
		return nil, err
	}
	return openLocked(path, true, fs.Fault)
}

// CreateLocked implements DirFS.
func (fs OSFS) CreateLocked(path string) (File, error) {
	if err := faultHook(fs.Fault).check(fsCreate, path); err != nil {
		return nil, err
	}
	return openLocked(path, false, fs.Fault)
}

// openLocked opens path for appending and locks it: creating it if need
// be (and syncing its directory, if syncNew), or, with !syncNew, only
// creating it.
//
// An existing path that is not a regular file is refused (ErrNotRegular)
// before it is opened: opening a device can have effects of its own.
func openLocked(path string, syncNew bool, fault faultHook) (File, error) {
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
		dir := filepath.Dir(path)
		if err = fault.check(fsSyncDir, dir); err == nil {
			err = regular.SyncDir(dir)
		}
	}
	var z *zeroer
	if err == nil {
		z, err = newZeroer(f, path, fault)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &osFile{f: f, path: path, fault: fault, z: z}, nil
}

// OpenRead implements FS.
func (fs OSFS) OpenRead(path string) (File, error) {
	if err := faultHook(fs.Fault).check(fsOpen, path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, path: path, fault: fs.Fault}, nil
}

// Create implements FS.
func (fs OSFS) Create(path string) (File, error) {
	if err := faultHook(fs.Fault).check(fsCreate, path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, path: path, fault: fs.Fault, z: newZeroerAt(f, path, fs.Fault, 0, 0)}, nil
}

// Rename implements FS with renameat2(2). Where the filesystem refuses its
// flags (EINVAL), RenameNoReplace falls back to a check and rename(2) —
// safe because the journal holds the log's lock — and RenameExchange
// reports errors.ErrUnsupported, for the caller to fall back on.
func (fs OSFS) Rename(oldpath, newpath string, mode RenameMode) error {
	kind := fsRename
	switch mode {
	case RenameNoReplace:
		kind = fsRenameNoReplace
	case RenameExchange:
		kind = fsRenameExchange
	}
	if err := faultHook(fs.Fault).check(kind, oldpath); err != nil {
		return err
	}
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
func (fs OSFS) Remove(path string) error {
	if err := faultHook(fs.Fault).check(fsRemove, path); err != nil {
		return err
	}
	return os.Remove(path)
}

// SyncDir implements FS.
func (fs OSFS) SyncDir(dir string) error {
	if err := faultHook(fs.Fault).check(fsSyncDir, dir); err != nil {
		return err
	}
	return regular.SyncDir(dir)
}

// ReadDir implements FS.
func (fs OSFS) ReadDir(dir string) ([]string, error) {
	if err := faultHook(fs.Fault).check(fsReadDir, dir); err != nil {
		return nil, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
