package vfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/internal/vfs"
)

// TestOpenLocked: OpenOrCreate creates a missing file (created true) and
// opens an existing one; CreateNew refuses an existing one; a second lock
// is refused with ErrLocked; a path that is not a regular file is refused
// before it is opened.
func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "log")
	f, created, err := vfs.OS.OpenLocked(p, vfs.OpenOrCreate)
	if err != nil || !created {
		t.Fatalf("OpenLocked(missing, OpenOrCreate) = %v, created %v; want it made", err, created)
	}
	if _, _, err := vfs.OS.OpenLocked(p, vfs.OpenOrCreate); !errors.Is(err, vfs.ErrLocked) {
		t.Errorf("OpenLocked(locked) = %v; want ErrLocked", err)
	}
	f.Close()
	for _, tt := range []struct {
		name    string
		path    string
		mode    vfs.OpenMode
		created bool
		want    error
	}{
		{"existing, OpenOrCreate", p, vfs.OpenOrCreate, false, nil},
		{"existing, CreateNew", p, vfs.CreateNew, false, fs.ErrExist},
		{"a directory", dir, vfs.OpenOrCreate, false, regular.ErrNotRegular},
		{"missing, CreateNew", filepath.Join(dir, "new"), vfs.CreateNew, true, nil},
	} {
		f, created, err := vfs.OS.OpenLocked(tt.path, tt.mode)
		if f != nil {
			f.Close()
		}
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) || created != tt.created {
			t.Errorf("%s: OpenLocked = %v, created %v; want %v, created %v", tt.name, err, created, tt.want, tt.created)
		}
	}
}

// TestZero: Zero writes n zeros at off, over what was there, and returns n.
func TestZero(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	f, err := vfs.OS.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("abcdef"), 0); err != nil {
		t.Fatal(err)
	}
	n := int64(200 << 10) // more than one buffer of zeros
	if got, err := f.Zero(3, n); got != n || err != nil {
		t.Fatalf("Zero(3, %d) = %d, %v; want %d, nil", n, got, err, n)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("abc"), make([]byte, n)...); !bytes.Equal(data, want) {
		t.Errorf("file after Zero holds %d bytes, %q…; want %d, \"abc\" and zeros", len(data), data[:6], len(want))
	}
}

// TestRename: each mode does what RenameMode says.
func TestRename(t *testing.T) {
	for _, tt := range []struct {
		name     string
		mode     vfs.RenameMode
		newExist bool
		want     error
		a, b     string // content of a and b after
	}{
		{"replace", vfs.RenameReplace, true, nil, "", "A"},
		{"no replace, free", vfs.RenameNoReplace, false, nil, "", "A"},
		{"no replace, taken", vfs.RenameNoReplace, true, fs.ErrExist, "A", "B"},
		{"exchange", vfs.RenameExchange, true, nil, "B", "A"},
	} {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(a, []byte("A"), 0o600)
		if tt.newExist {
			os.WriteFile(b, []byte("B"), 0o600)
		}
		err := vfs.OS.Rename(a, b, tt.mode)
		if errors.Is(err, errors.ErrUnsupported) && tt.mode == vfs.RenameExchange {
			continue // a file system without RENAME_EXCHANGE
		}
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("%s: Rename = %v; want %v", tt.name, err, tt.want)
		}
		ga, _ := os.ReadFile(a)
		gb, _ := os.ReadFile(b)
		if string(ga) != tt.a || string(gb) != tt.b {
			t.Errorf("%s: a, b = %q, %q; want %q, %q", tt.name, ga, gb, tt.a, tt.b)
		}
	}
}

// TestReadDirStat: ReadDir lists a folder; Stat and Open of a missing
// path fail as package os does.
func TestReadDirStat(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), []byte("1"), 0o600)
	names, err := vfs.OS.ReadDir(dir)
	if err != nil || len(names) != 1 || names[0] != "x" {
		t.Errorf("ReadDir = %q, %v; want [x]", names, err)
	}
	if st, err := vfs.OS.Stat(filepath.Join(dir, "x")); err != nil || st.Size() != 1 {
		t.Errorf("Stat(x) = %v, %v; want 1 byte", st, err)
	}
	if _, err := vfs.OS.Stat(filepath.Join(dir, "y")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(missing) = %v; want fs.ErrNotExist", err)
	}
	var pe *fs.PathError
	if _, err := vfs.OS.Open(filepath.Join(dir, "y")); !errors.As(err, &pe) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Open(missing) = %v; want a *fs.PathError of ENOENT", err)
	}
	if err := vfs.OS.SyncDir(dir); err != nil {
		t.Errorf("SyncDir = %v", err)
	}
}
