package clientconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

var testTime = time.Date(2026, 12, 1, 16, 30, 5, 0, time.FixedZone("CET", 3600))

// TestWriteFile: the backup holds the original bytes with the original's
// mode, the file holds the new bytes with its mode, and nothing else is
// left in the folder.
func TestWriteFile(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o644, 0o640} {
		dir := t.TempDir()
		path := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(path, []byte("old"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode) // past the umask
		f, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		backup, err := WriteFile(f, []byte("new"), testTime)
		if err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		if want := path + ".aegis-backup-20261201T153005Z"; backup != want {
			t.Errorf("backup = %s; want %s", backup, want)
		}
		checkFile(t, path, "new", mode)
		checkFile(t, backup, "old", mode)
		if names := dirNames(t, dir); !slices.Equal(names, []string{"mcp.json", "mcp.json.aegis-backup-20261201T153005Z"}) {
			t.Errorf("folder holds %v; want the file and its backup", names)
		}
		// A second write in the same second keeps both backups.
		f2, _ := ReadFile(path)
		backup2, err := WriteFile(f2, []byte("newer"), testTime)
		if err != nil || backup2 != backup+"-2" {
			t.Errorf("second WriteFile = %s, %v; want %s-2", backup2, err, backup)
		}
		checkFile(t, backup, "old", mode)
		checkFile(t, backup2, "new", mode)
	}
}

// TestWriteFileSymlink: the file a symlink names is rewritten; the link
// stays a link.
func TestWriteFileSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "mcp.json")
	os.Mkdir(filepath.Dir(real), 0o755)
	os.WriteFile(real, []byte("old"), 0o600)
	link := filepath.Join(dir, "mcp.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(link)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != real {
		t.Errorf("ReadFile(link).Path = %s; want %s", f.Path, real)
	}
	if _, err := WriteFile(f, []byte("new"), testTime); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a symlink: %v, %v", fi, err)
	}
	checkFile(t, real, "new", 0o600)
}

// TestWriteFileChanged: a file its client rewrote since it was read is
// left as the client wrote it.
func TestWriteFileChanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	os.WriteFile(path, []byte("old"), 0o600)
	f, _ := ReadFile(path)
	os.WriteFile(path, []byte("client's"), 0o600)
	_, err := WriteFile(f, []byte("new"), testTime)
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("WriteFile = %v; want ErrChanged", err)
	}
	checkFile(t, path, "client's", 0o600)
	for _, n := range dirNames(t, dir) {
		if n != "mcp.json" && n != "mcp.json.aegis-backup-20261201T153005Z" {
			t.Errorf("WriteFile left %s behind", n)
		}
	}
}

// TestWriteFileUnwritable: a folder aegis cannot write leaves the file as
// it was and reports the error.
func TestWriteFileUnwritable(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes anywhere: make the folder unwritable by making
		// its backup name a directory instead.
		dir := t.TempDir()
		path := filepath.Join(dir, "mcp.json")
		os.WriteFile(path, []byte("old"), 0o600)
		f, _ := ReadFile(path)
		for i := 1; i <= 100; i++ {
			name := BackupName(path, testTime)
			if i > 1 {
				name += fmt.Sprintf("-%d", i)
			}
			os.Mkdir(name, 0o700)
		}
		if _, err := WriteFile(f, []byte("new"), testTime); err == nil {
			t.Fatal("WriteFile with every backup name taken succeeded")
		}
		checkFile(t, path, "old", 0o600)
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	os.WriteFile(path, []byte("old"), 0o600)
	f, _ := ReadFile(path)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	if _, err := WriteFile(f, []byte("new"), testTime); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("WriteFile in a read-only folder = %v; want a permission error", err)
	}
	checkFile(t, path, "old", 0o600)
}

// TestReadFileRefuses: only regular files are read.
func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, fifo} {
		if _, err := ReadFile(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%s) = %v; want ErrNotRegular", p, err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v; want ErrNotExist", err)
	}
}

func checkFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || string(data) != content {
		t.Errorf("%s holds %q, %v; want %q", path, data, err, content)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
		t.Errorf("%s mode = %v, %v; want %v", path, fi.Mode().Perm(), err, mode)
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

// TestLocations holds each client's well-known files on Linux and macOS.
func TestLocations(t *testing.T) {
	tests := []struct {
		name string
		env  Env
		want []string
	}{
		{"linux", Env{Home: "/h", Dir: "/p", GOOS: "linux"}, []string{
			"Claude Desktop /h/.config/Claude/claude_desktop_config.json",
			"Cursor /h/.cursor/mcp.json",
			"VS Code /h/.config/Code/User/mcp.json",
			"Claude Code /h/.claude.json",
			"Claude Code /p/.mcp.json",
			"Cursor /p/.cursor/mcp.json",
			"VS Code /p/.vscode/mcp.json",
		}},
		{"linux XDG", Env{Home: "/h", XDGConfigHome: "/x", GOOS: "linux"}, []string{
			"Claude Desktop /x/Claude/claude_desktop_config.json",
			"Cursor /h/.cursor/mcp.json",
			"VS Code /x/Code/User/mcp.json",
			"Claude Code /h/.claude.json",
		}},
		{"linux relative XDG ignored", Env{Home: "/h", XDGConfigHome: "x", GOOS: "linux"}, []string{
			"Claude Desktop /h/.config/Claude/claude_desktop_config.json",
			"Cursor /h/.cursor/mcp.json",
			"VS Code /h/.config/Code/User/mcp.json",
			"Claude Code /h/.claude.json",
		}},
		{"darwin", Env{Home: "/Users/me", XDGConfigHome: "/x", GOOS: "darwin"}, []string{
			"Claude Desktop /Users/me/Library/Application Support/Claude/claude_desktop_config.json",
			"Cursor /Users/me/.cursor/mcp.json",
			"VS Code /Users/me/Library/Application Support/Code/User/mcp.json",
			"Claude Code /Users/me/.claude.json",
		}},
		{"no home", Env{Dir: "/p", GOOS: "linux"}, []string{
			"Claude Code /p/.mcp.json",
			"Cursor /p/.cursor/mcp.json",
			"VS Code /p/.vscode/mcp.json",
		}},
	}
	for _, tt := range tests {
		var got []string
		for _, l := range Locations(tt.env) {
			got = append(got, l.Client+" "+l.Path)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Locations(%+v) =\n%v\nwant\n%v", tt.name, tt.env, got, tt.want)
		}
	}
}

// TestWriteFileOwner: the file and its backup keep the original's owner
// (as root, a file of another user's; otherwise one's own).
func TestWriteFileOwner(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	os.WriteFile(path, []byte("old"), 0o600)
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		uid, gid = 65534, 65534
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	backup, err := WriteFile(f, []byte("new"), testTime)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, backup} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if u, g, ok := owner(st); !ok || u != uid || g != gid {
			t.Errorf("%s owner = %d:%d (%v); want %d:%d", p, u, g, ok, uid, gid)
		}
	}
	checkFile(t, path, "new", 0o600)
}
