package errorfs

import (
	"io/fs"

	"github.com/aegisrelay/aegis/internal/vfs"
)

// Wrap returns fsys with the faults in decides injected into it and into
// every file it opens.
func Wrap(fsys vfs.FS, in *Injector) vfs.FS { return &errFS{fs: fsys, in: in} }

type errFS struct {
	fs vfs.FS
	in *Injector
}

// inject asks the Injector about kind on path.
func (e *errFS) inject(kind OpKind, path string) (Fault, bool) {
	return e.in.Inject(Op{Kind: kind, Path: path})
}

// check returns the error to fail kind on path with, if any.
func (e *errFS) check(kind OpKind, path string) error {
	if f, ok := e.inject(kind, path); ok && f.Err != nil {
		return f.Err
	}
	return nil
}

func (e *errFS) wrap(f vfs.File, path string) vfs.File { return &errFile{f: f, fs: e, path: path} }

func (e *errFS) Open(path string) (vfs.File, error) {
	if err := e.check(OpOpen, path); err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f, err := e.fs.Open(path)
	if err != nil {
		return nil, err
	}
	return e.wrap(f, path), nil
}

func (e *errFS) OpenLocked(path string, mode vfs.OpenMode) (vfs.File, bool, error) {
	kind := OpOpen
	if mode == vfs.CreateNew {
		kind = OpCreate
	}
	if err := e.check(kind, path); err != nil {
		return nil, false, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f, created, err := e.fs.OpenLocked(path, mode)
	if err != nil {
		return nil, false, err
	}
	return e.wrap(f, path), created, nil
}

func (e *errFS) Create(path string) (vfs.File, error) {
	if err := e.check(OpCreate, path); err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f, err := e.fs.Create(path)
	if err != nil {
		return nil, err
	}
	return e.wrap(f, path), nil
}

func (e *errFS) Rename(oldpath, newpath string, mode vfs.RenameMode) error {
	kind := OpRename
	switch mode {
	case vfs.RenameNoReplace:
		kind = OpRenameNoReplace
	case vfs.RenameExchange:
		kind = OpRenameExchange
	}
	if err := e.check(kind, oldpath); err != nil {
		return err
	}
	return e.fs.Rename(oldpath, newpath, mode)
}

func (e *errFS) Remove(path string) error {
	if err := e.check(OpRemove, path); err != nil {
		return err
	}
	return e.fs.Remove(path)
}

func (e *errFS) Stat(path string) (fs.FileInfo, error) {
	if err := e.check(OpStat, path); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return e.fs.Stat(path)
}

func (e *errFS) SyncDir(dir string) error {
	if err := e.check(OpSyncDir, dir); err != nil {
		return err
	}
	return e.fs.SyncDir(dir)
}

func (e *errFS) ReadDir(dir string) ([]string, error) {
	if err := e.check(OpReadDir, dir); err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return e.fs.ReadDir(dir)
}

type errFile struct {
	f    vfs.File
	fs   *errFS
	path string
}

func (f *errFile) Read(p []byte) (int, error) {
	if err := f.fs.check(OpRead, f.path); err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
	}
	return f.f.Read(p)
}

func (f *errFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.path); err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
	}
	return f.f.ReadAt(p, off)
}

// WriteAt writes what the fault lets through (Fault.Cut), then returns the
// fault's error; a torn write with no error returns its short count alone.
func (f *errFile) WriteAt(p []byte, off int64) (int, error) {
	fault, ok := f.fs.inject(OpWrite, f.path)
	if !ok {
		return f.f.WriteAt(p, off)
	}
	k := fault.Cut(len(p))
	n, err := 0, error(nil)
	if k > 0 {
		n, err = f.f.WriteAt(p[:k], off)
	}
	if err != nil {
		return n, err
	}
	return n, fault.Err
}

func (f *errFile) Stat() (fs.FileInfo, error) {
	if err := f.fs.check(OpStat, f.path); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.path, Err: err}
	}
	return f.f.Stat()
}

func (f *errFile) Sync() error {
	if err := f.fs.check(OpSync, f.path); err != nil {
		return err
	}
	return f.f.Sync()
}

// Zero writes the zeros and syncs them as two operations, OpZero and
// OpZeroSync, each of which can fail on its own.
func (f *errFile) Zero(off, n int64) (int64, error) {
	if err := f.fs.check(OpZero, f.path); err != nil {
		return 0, err
	}
	done := int64(0)
	for done < n {
		k, err := f.f.WriteAt(zeros[:min(int64(len(zeros)), n-done)], off+done)
		done += int64(k)
		if err != nil {
			return done, err
		}
	}
	if err := f.fs.check(OpZeroSync, f.path); err != nil {
		return done, err
	}
	return done, f.f.Sync()
}

var zeros [64 << 10]byte

func (f *errFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.path); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

// Close closes the file, and then returns the injected error if any.
func (f *errFile) Close() error {
	err := f.f.Close()
	if ferr := f.fs.check(OpClose, f.path); err == nil {
		err = ferr
	}
	return err
}
