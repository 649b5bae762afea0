package errorfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
)

// TestWrap: every method of the wrapped FS and of its files asks the
// Injector under its kind and path, returns the injected error in place of
// its own (around a *fs.PathError for opens, reads and stats, as package
// os does), and does nothing on disk then; with no fault it does what the
// FS under it does.
func TestWrap(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	type step struct {
		kind errorfs.OpKind
		path string
		do   func(vfs.FS) error
	}
	file := func(f func(vfs.File) error) func(vfs.FS) error {
		return func(fsys vfs.FS) error {
			fl, _, err := fsys.OpenLocked(a, vfs.OpenOrCreate)
			if err != nil {
				return err
			}
			defer fl.Close()
			return f(fl)
		}
	}
	steps := []step{
		{errorfs.OpOpen, a, func(fsys vfs.FS) error { f, err := fsys.Open(a); closeFile(f); return err }},
		{errorfs.OpOpen, a, func(fsys vfs.FS) error { f, _, err := fsys.OpenLocked(a, vfs.OpenOrCreate); closeFile(f); return err }},
		{errorfs.OpCreate, b, func(fsys vfs.FS) error { f, _, err := fsys.OpenLocked(b, vfs.CreateNew); closeFile(f); return err }},
		{errorfs.OpCreate, b, func(fsys vfs.FS) error { f, err := fsys.Create(b); closeFile(f); return err }},
		{errorfs.OpRead, a, file(func(f vfs.File) error { _, err := f.ReadAt(make([]byte, 1), 0); return err })},
		{errorfs.OpRead, a, file(func(f vfs.File) error { _, err := f.Read(make([]byte, 1)); return err })},
		{errorfs.OpWrite, a, file(func(f vfs.File) error { _, err := f.WriteAt([]byte("xy"), 0); return err })},
		{errorfs.OpSync, a, file(func(f vfs.File) error { return f.Sync() })},
		{errorfs.OpZero, a, file(func(f vfs.File) error { _, err := f.Zero(2, 4); return err })},
		{errorfs.OpZeroSync, a, file(func(f vfs.File) error { _, err := f.Zero(2, 4); return err })},
		{errorfs.OpTruncate, a, file(func(f vfs.File) error { return f.Truncate(0) })},
		{errorfs.OpStat, a, file(func(f vfs.File) error { _, err := f.Stat(); return err })},
		{errorfs.OpStat, a, func(fsys vfs.FS) error { _, err := fsys.Stat(a); return err }},
		{errorfs.OpClose, a, func(fsys vfs.FS) error {
			f, err := fsys.Open(a)
			if err != nil {
				return err
			}
			return f.Close()
		}},
		{errorfs.OpRename, a, func(fsys vfs.FS) error { return fsys.Rename(a, b, vfs.RenameReplace) }},
		{errorfs.OpRenameNoReplace, a, func(fsys vfs.FS) error { return fsys.Rename(a, b, vfs.RenameNoReplace) }},
		{errorfs.OpRenameExchange, a, func(fsys vfs.FS) error { return fsys.Rename(a, b, vfs.RenameExchange) }},
		{errorfs.OpRemove, a, func(fsys vfs.FS) error { return fsys.Remove(a) }},
		{errorfs.OpSyncDir, dir, func(fsys vfs.FS) error { return fsys.SyncDir(dir) }},
		{errorfs.OpReadDir, dir, func(fsys vfs.FS) error { _, err := fsys.ReadDir(dir); return err }},
	}
	seen := map[errorfs.OpKind]bool{}
	for _, s := range steps {
		seen[s.kind] = true
		os.Remove(b)
		if err := os.WriteFile(a, []byte("abcdef"), 0o600); err != nil {
			t.Fatal(err)
		}
		in := errorfs.New(errorfs.Fail(errorfs.And(errorfs.Kind(s.kind), errorfs.Path(s.path)), errorfs.EIO))
		err := s.do(errorfs.Wrap(vfs.OS, in))
		if !errors.Is(err, syscall.EIO) || in.Injected() != 1 {
			t.Errorf("%v: = %v, %d faults injected; want the EIO, one", s.kind, err, in.Injected())
		}
		var pe *fs.PathError
		wantPath := s.kind == errorfs.OpOpen || s.kind == errorfs.OpCreate || s.kind == errorfs.OpRead || s.kind == errorfs.OpStat || s.kind == errorfs.OpReadDir
		if errors.As(err, &pe) != wantPath {
			t.Errorf("%v: = %#v; a *fs.PathError: %v", s.kind, err, wantPath)
		}
		if data, _ := os.ReadFile(a); string(data) != "abcdef" && s.kind != errorfs.OpZeroSync {
			t.Errorf("%v: a holds %q after the fault; want it untouched", s.kind, data)
		}
	}
	for _, k := range errorfs.Kinds {
		if !seen[k] {
			t.Errorf("no step of kind %v", k)
		}
	}
}

func closeFile(f vfs.File) {
	if f != nil {
		f.Close()
	}
}

// TestTornWrite: a torn write writes the first half of its bytes, then
// returns the fault's error, or the short count alone.
func TestTornWrite(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		wantN int
	}{{"with ENOSPC", errorfs.ENOSPC, 3}, {"with no error", nil, 3}} {
		p := filepath.Join(t.TempDir(), "a")
		fsys := errorfs.Wrap(vfs.OS, errorfs.New(errorfs.ShortWrite(errorfs.Kind(errorfs.OpWrite), tt.err)))
		f, err := fsys.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		n, err := f.WriteAt([]byte("abcdef"), 0)
		f.Close()
		data, _ := os.ReadFile(p)
		if n != tt.wantN || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) || string(data) != "abc" {
			t.Errorf("%s: WriteAt = %d, %v, file %q; want %d, %v, \"abc\"", tt.name, n, err, data, tt.wantN, tt.err)
		}
	}
}

// TestZeroSyncFault: a failed sync of Zero comes after the zeros are
// written: Zero returns n and the error, which tells it from a failed
// write (fewer than n).
func TestZeroSyncFault(t *testing.T) {
	for _, tt := range []struct {
		kind  errorfs.OpKind
		wantN int64
	}{{errorfs.OpZero, 0}, {errorfs.OpZeroSync, 8}} {
		p := filepath.Join(t.TempDir(), "a")
		fsys := errorfs.Wrap(vfs.OS, errorfs.New(errorfs.Fail(errorfs.Kind(tt.kind), errorfs.EIO)))
		f, err := fsys.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		n, err := f.Zero(0, 8)
		f.Close()
		if n != tt.wantN || !errors.Is(err, syscall.EIO) {
			t.Errorf("%v: Zero(0, 8) = %d, %v; want %d, EIO", tt.kind, n, err, tt.wantN)
		}
	}
}
