package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// fakeDir is a Dir in memory that logs each operation and fails the one
// named in fail.
type fakeDir struct {
	files map[string]string
	log   []string
	fail  string
}

type fakeFile struct {
	d    *fakeDir
	name string
	buf  []byte
}

var errInjected = errors.New("injected")

func (d *fakeDir) op(s string) error {
	d.log = append(d.log, s)
	if s == d.fail {
		return errInjected
	}
	return nil
}

func (d *fakeDir) Create(name string, _ fs.FileMode, excl bool) (File, error) {
	if err := d.op("create"); err != nil {
		return nil, err
	}
	if _, ok := d.files[name]; ok && excl {
		return nil, fs.ErrExist
	}
	d.files[name] = ""
	return &fakeFile{d: d, name: name}, nil
}

func (f *fakeFile) Write(p []byte) (int, error) {
	if err := f.d.op("write"); err != nil {
		return 0, err
	}
	f.buf = append(f.buf, p...)
	return len(p), nil
}

func (f *fakeFile) Sync() error {
	if err := f.d.op("sync"); err != nil {
		return err
	}
	f.d.files[f.name] = string(f.buf)
	return nil
}

func (f *fakeFile) Close() error { return f.d.op("close") }

func (d *fakeDir) Rename(from, to string) error {
	if err := d.op("rename"); err != nil {
		return err
	}
	d.files[to] = d.files[from]
	delete(d.files, from)
	return nil
}

func (d *fakeDir) Remove(name string) error {
	d.log = append(d.log, "remove")
	delete(d.files, name)
	return nil
}

func (d *fakeDir) Sync() error { return d.op("syncdir") }

// TestReplaceSteps: each step in order, the folder synced after the
// rename; a failure at any step is an *Error naming it, and before the
// rename leaves the file as it was and no temporary file.
func TestReplaceSteps(t *testing.T) {
	tests := []struct {
		fail    string
		wantOp  string
		wantLog string
		want    string // the file's content after
	}{
		{"", "", "create write prepare sync close check rename syncdir", "new"},
		{"create", OpCreate, "create", "old"},
		{"write", OpWrite, "create write close remove", "old"},
		{"prepare", OpWrite, "create write prepare close remove", "old"},
		{"sync", OpWrite, "create write prepare sync close remove", "old"},
		{"close", OpWrite, "create write prepare sync close remove", "old"},
		{"check", OpCheck, "create write prepare sync close check remove", "old"},
		{"rename", OpRename, "create write prepare sync close check rename remove", "old"},
		{"syncdir", OpSync, "create write prepare sync close check rename syncdir", "new"},
	}
	for _, tt := range tests {
		d := &fakeDir{files: map[string]string{"f": "old"}, fail: tt.fail}
		err := Replace(d, "f", []byte("new"), Options{
			Prepare:      func(File) error { return d.op("prepare") },
			BeforeRename: func() error { return d.op("check") },
		})
		var ae *Error
		switch {
		case tt.wantOp == "" && err != nil:
			t.Errorf("Replace failing %q = %v; want nil", tt.fail, err)
		case tt.wantOp != "" && (!errors.As(err, &ae) || ae.Op != tt.wantOp || !errors.Is(err, errInjected)):
			t.Errorf("Replace failing %q = %v; want an *Error with Op %q wrapping the injected error", tt.fail, err, tt.wantOp)
		}
		if got := strings.Join(d.log, " "); got != tt.wantLog {
			t.Errorf("Replace failing %q: steps %q; want %q", tt.fail, got, tt.wantLog)
		}
		names := make([]string, 0, len(d.files))
		for n := range d.files {
			names = append(names, n)
		}
		if d.files["f"] != tt.want || len(names) != 1 {
			t.Errorf("Replace failing %q: files %v; want only f = %q", tt.fail, d.files, tt.want)
		}
	}
}

// TestReplaceTempName: a fixed temporary name is truncated and reused
// (a crash's leftover); a random one never takes an existing file.
func TestReplaceTempName(t *testing.T) {
	d := &fakeDir{files: map[string]string{"f": "old", "f.tmp": "leftover"}}
	if err := Replace(d, "f", []byte("new"), Options{Temp: "f.tmp"}); err != nil {
		t.Fatalf("Replace with Temp f.tmp = %v; want nil", err)
	}
	if len(d.files) != 1 || d.files["f"] != "new" {
		t.Errorf("Replace with Temp f.tmp: files %v; want only f = new", d.files)
	}
}

// TestWriteFile: the file at a path replaced, mode as asked (0600 by
// default), nothing else left in the folder, an existing file's other
// names (a hard link) keeping the old bytes.
func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		perm fs.FileMode
		want fs.FileMode
	}{
		{"default", 0, 0o600},
		{"0600", 0o600, 0o600},
		{"0640", 0o640, 0o640},
	}
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, tt := range tests {
		dir := t.TempDir()
		path := filepath.Join(dir, "state")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(path, []byte("new"), tt.perm); err != nil {
			t.Fatalf("%s: WriteFile = %v; want nil", tt.name, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != "new" {
			t.Errorf("%s: WriteFile then ReadFile = %q, %v; want new", tt.name, got, err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != tt.want {
			t.Errorf("%s: mode after WriteFile = %v, %v; want %v", tt.name, fi.Mode().Perm(), err, tt.want)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"state"}) {
			t.Errorf("%s: folder after WriteFile holds %v; want [state]", tt.name, names)
		}
	}
}

// TestOSDirByDescriptor: every step is relative to the folder opened,
// not to its path: a folder renamed after OpenDir gets the file, and a
// symbolic link put at the path since leads nowhere; a symbolic link at
// a fixed temporary name is not followed.
func TestOSDirByDescriptor(t *testing.T) {
	root := t.TempDir()
	a, b, elsewhere := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "elsewhere")
	for _, p := range []string{a, elsewhere} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenDir(a)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, a); err != nil {
		t.Fatal(err)
	}
	if err := Replace(d, "f", []byte("new"), Options{}); err != nil {
		t.Fatalf("Replace in a renamed folder = %v; want nil", err)
	}
	if got, err := os.ReadFile(filepath.Join(b, "f")); err != nil || string(got) != "new" {
		t.Errorf("the renamed folder's f = %q, %v; want new", got, err)
	}
	if names := dirNames(t, elsewhere); len(names) != 0 {
		t.Errorf("the folder the symbolic link names holds %v; want nothing", names)
	}

	victim := filepath.Join(elsewhere, "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(b, "f.tmp")); err != nil {
		t.Fatal(err)
	}
	err = Replace(d, "f", []byte("newer"), Options{Temp: "f.tmp"})
	var ae *Error
	if !errors.As(err, &ae) || ae.Op != OpCreate || !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Replace through a symbolic link at its temporary name = %v; want create failing with ELOOP", err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "victim" {
		t.Errorf("the link's target after Replace = %q; want victim", got)
	}
	if got, _ := os.ReadFile(filepath.Join(b, "f")); string(got) != "new" {
		t.Errorf("f after a failed Replace = %q; want new", got)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
