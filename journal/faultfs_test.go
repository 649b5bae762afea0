package journal

import (
	"errors"
	"os"
	"sync"
	"syscall"
)

// faultFS wraps OSFS and fails chosen operations, in the manner of pebble's
// errorfs: the Nth write (1-based) or the Nth sync fails with err; a short
// write writes half of its bytes first. The Nth rename and the Nth
// directory sync (rotation) fail likewise. With failPreZeroSync every sync
// of pre-zeroed space (which File.Sync does not cover) fails with it, and
// the other faults do not apply: a wrapped file is not pre-zeroed.
// Every error-path test of the journal's file I/O uses it.
type faultFS struct {
	OSFS
	mu              sync.Mutex
	failPreZeroSync error // fail every sync of pre-zeroing; nil: never
	failWrite       int   // fail the Nth write; 0: never
	failSync        int   // fail the Nth sync; 0: never
	failRename      int   // fail the Nth rename; 0: never
	failSyncDir     int   // fail the Nth directory sync; 0: never
	noExchange      bool
	short           bool
	err             error
	writes          int
	syncs           int
	renames         int
	syncDirs        int
}

func (fs *faultFS) Rename(oldpath, newpath string, mode RenameMode) error {
	fs.mu.Lock()
	fs.renames++
	fail := fs.renames == fs.failRename
	noExchange := fs.noExchange
	fs.mu.Unlock()
	if fail {
		return fs.err
	}
	if noExchange && mode == RenameExchange {
		return errors.ErrUnsupported
	}
	return fs.OSFS.Rename(oldpath, newpath, mode)
}

func (fs *faultFS) SyncDir(dir string) error {
	fs.mu.Lock()
	fs.syncDirs++
	fail := fs.syncDirs == fs.failSyncDir
	fs.mu.Unlock()
	if fail {
		return fs.err
	}
	return fs.OSFS.SyncDir(dir)
}

type faultFile struct {
	File
	fs *faultFS
}

func (fs *faultFS) OpenAppend(path string) (File, error) {
	f, err := OSFS{}.OpenAppend(path)
	if err != nil {
		return nil, err
	}
	if err := fs.failPreZeroSync; err != nil {
		// Unwrapped: pre-zeroing runs only on the OS's own files.
		f.(*osFile).z.zeroSync = func(*os.File) error { return err }
		return f, nil
	}
	return &faultFile{File: f, fs: fs}, nil
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes++
	fail := f.fs.writes == f.fs.failWrite
	short, err := f.fs.short, f.fs.err
	f.fs.mu.Unlock()
	if !fail {
		return f.File.Write(p)
	}
	if short {
		n, _ := f.File.Write(p[:len(p)/2])
		if err == nil {
			return n, nil // a short write that reports no error
		}
		return n, err
	}
	return 0, err
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.syncs++
	fail := f.fs.syncs == f.fs.failSync
	err := f.fs.err
	f.fs.mu.Unlock()
	if fail {
		return err
	}
	return f.File.Sync()
}

func (fs *faultFS) counts() (writes, syncs int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.writes, fs.syncs
}

var (
	eio    error = syscall.EIO
	enospc error = syscall.ENOSPC
)
