package vfs

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/regular"
)

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

// zeros is what Zero writes from.
var zeros [64 << 10]byte

func (f osFile) Sync() error { return fdatasync(f.File) }

func (f osFile) Zero(off, n int64) (int64, error) {
	done := int64(0)
	for done < n {
		k, err := f.WriteAt(zeros[:min(int64(len(zeros)), n-done)], off+done)
		done += int64(k)
		if err != nil {
			return done, err
		}
	}
	return done, fdatasync(f.File)
}

func (osFS) Open(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenLocked(path string, mode OpenMode) (File, bool, error) {
	created := true
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) && mode == OpenOrCreate {
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
		return nil, false, err
	}
	sc, err := f.SyscallConn()
	if err == nil {
		var lerr error
		err = sc.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) })
		if err == nil && lerr != nil {
			err = &fs.PathError{Op: "flock", Path: path, Err: lerr}
			if errors.Is(lerr, unix.EWOULDBLOCK) {
				err = &fs.PathError{Op: "flock", Path: path, Err: ErrLocked}
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return osFile{f}, created, nil
}

func (osFS) Create(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Rename uses renameat2(2). Where the file system refuses its flags
// (EINVAL, ENOSYS), RenameNoReplace falls back to a check and rename(2)
// (safe for a caller that holds the log's lock) and RenameExchange
// reports errors.ErrUnsupported, for the caller to fall back on.
func (osFS) Rename(oldpath, newpath string, mode RenameMode) error {
	if mode != RenameNoReplace && mode != RenameExchange {
		return os.Rename(oldpath, newpath)
	}
	err := renameat2(oldpath, newpath, mode)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if mode == RenameExchange {
			return &os.LinkError{Op: "rename-exchange", Old: oldpath, New: newpath, Err: errors.ErrUnsupported}
		}
		if _, serr := os.Lstat(newpath); serr == nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
		}
		return os.Rename(oldpath, newpath)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

func (osFS) Remove(path string) error { return os.Remove(path) }

func (osFS) Stat(path string) (fs.FileInfo, error) { return os.Stat(path) }

func (osFS) SyncDir(dir string) error { return regular.SyncDir(dir) }

func (osFS) ReadDir(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
