package clientconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

var testTime = time.Date(2026, 12, 1, 16, 30, 5, 0, time.FixedZone("CET", 3600))

// TestWriteFile: the backup holds the bytes before the last rewrite, mode
// 0600, one per file, under the backups folder at the file's path; the
// file holds the new bytes with its mode, and nothing else is left in
// its folder. Without a backups folder, no backup is made.
func TestWriteFile(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o644, 0o640} {
		dir := t.TempDir()
		backups := filepath.Join(t.TempDir(), "state", "config-backups")
		path := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(path, []byte("old"), mode); err != nil {
			t.Fatal(err)
		}
		check(t, os.Chmod(path, mode)) // past the umask
		f, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		backup, err := WriteFile(f, []byte("new"), backups)
		if err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		if want := backups + path; backup != want {
			t.Errorf("backup = %s; want %s", backup, want)
		}
		checkFile(t, path, "new", mode)
		checkFile(t, backup, "old", 0o600)
		if names := dirNames(t, dir); !slices.Equal(names, []string{"mcp.json"}) {
			t.Errorf("folder holds %v; want the file only", names)
		}
		// A second write replaces the backup: one per file.
		f2 := mustReadFile(t, path)
		backup2, err := WriteFile(f2, []byte("newer"), backups)
		if err != nil || backup2 != backup {
			t.Errorf("second WriteFile = %s, %v; want %s", backup2, err, backup)
		}
		checkFile(t, backup, "new", 0o600)
		if names := dirNames(t, filepath.Dir(backup)); !slices.Equal(names, []string{"mcp.json"}) {
			t.Errorf("backup folder holds %v; want one backup", names)
		}
		// None asked for: none made, the old one left.
		f3 := mustReadFile(t, path)
		if backup3, err := WriteFile(f3, []byte("newest"), ""); err != nil || backup3 != "" {
			t.Errorf("WriteFile without backups = %q, %v; want no backup", backup3, err)
		}
		checkFile(t, path, "newest", mode)
		checkFile(t, backup, "new", 0o600)
	}
}

// TestWriteFileBackupLink: a symlink planted in the backups folder (say,
// by the user whose state folder sudo kept) is not followed: nothing is
// written where it points, and the file is left as it was.
func TestWriteFileBackupLink(t *testing.T) {
	dir, secret := t.TempDir(), t.TempDir()
	backups := filepath.Join(t.TempDir(), "backups")
	check(t, os.Mkdir(backups, 0o700))
	path := filepath.Join(dir, "mcp.json")
	check(t, os.WriteFile(path, []byte("old"), 0o600))
	first := strings.Split(strings.TrimPrefix(dir, "/"), "/")[0]
	mustSymlink(t, secret, filepath.Join(backups, first))
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if backup, err := WriteFile(f, []byte("new"), backups); err == nil {
		t.Fatalf("WriteFile through a planted link = %s, nil; want an error", backup)
	}
	checkFile(t, path, "old", 0o600)
	if names := dirNames(t, secret); len(names) != 0 {
		t.Errorf("the link's target holds %v; want nothing", names)
	}
}

// TestWriteFileSymlink: the file a symlink names is rewritten; the link
// stays a link.
func TestWriteFileSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "mcp.json")
	check(t, os.Mkdir(filepath.Dir(real), 0o755))
	check(t, os.WriteFile(real, []byte("old"), 0o600))
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
	if _, err := WriteFile(f, []byte("new"), ""); err != nil {
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
	check(t, os.WriteFile(path, []byte("old"), 0o600))
	f := mustReadFile(t, path)
	check(t, os.WriteFile(path, []byte("client's"), 0o600))
	backups := filepath.Join(t.TempDir(), "backups")
	_, err := WriteFile(f, []byte("new"), backups)
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("WriteFile = %v; want ErrChanged", err)
	}
	checkFile(t, path, "client's", 0o600)
	if names := dirNames(t, dir); !slices.Equal(names, []string{"mcp.json"}) {
		t.Errorf("WriteFile left %v; want the file only", names)
	}
	if _, err := os.Lstat(backups); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteFile made %s (%v); want no backup of a file it did not write", backups, err)
	}
}

// TestWriteFileUnwritable: a backup that cannot be kept, or a folder
// aegis cannot write, leaves the file as it was and reports the error.
func TestWriteFileUnwritable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	check(t, os.WriteFile(path, []byte("old"), 0o600))
	f := mustReadFile(t, path)
	notDir := filepath.Join(t.TempDir(), "state")
	check(t, os.WriteFile(notDir, nil, 0o600)) // even root cannot make folders in a file
	if _, err := WriteFile(f, []byte("new"), filepath.Join(notDir, "backups")); err == nil {
		t.Fatal("WriteFile with no backup possible succeeded")
	}
	checkFile(t, path, "old", 0o600)
	makeUnwritable(t, dir)
	if _, err := WriteFile(f, []byte("new"), ""); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("WriteFile in a read-only folder = %v; want a permission error", err)
	}
	checkFile(t, path, "old", 0o600)
}

// TestReadFileRefuses: only a regular file with one name, not over
// MaxFile bytes, is read; a FIFO is refused without waiting for a
// writer, an oversized file before it is read.
func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(at("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(t, os.WriteFile(at("linked"), []byte("{}"), 0o600))
	check(t, os.Link(at("linked"), at("other-name")))
	big, err := os.Create(at("big"))
	check(t, err)
	check(t, big.Truncate(MaxFile+1)) // sparse: refused on its size, not read
	check(t, big.Close())
	edge, err := os.Create(at("at-limit"))
	check(t, err)
	check(t, edge.Truncate(MaxFile))
	check(t, edge.Close())
	check(t, os.Symlink(at("fifo"), at("to-fifo")))
	check(t, os.Mkdir(at("folder"), 0o700))
	tests := []struct {
		path string
		want error
		msg  string
	}{
		{dir, ErrNotRegular, "is a directory"},
		{at("fifo"), ErrNotRegular, "FIFO"},
		{at("to-fifo"), ErrNotRegular, "FIFO"},
		{at("linked"), ErrShape, "has 2 names (hard links)"},
		{at("big"), ErrTooLarge, "over 16 MiB"},
		{at("none"), os.ErrNotExist, ""},
		{at("folder/none"), os.ErrNotExist, ""},
	}
	for _, tt := range tests {
		f, err := ReadFile(tt.path)
		if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.msg) {
			t.Errorf("ReadFile(%s) = %v; want %v saying %q", tt.path, err, tt.want, tt.msg)
		}
		if f != nil {
			f.Close()
		}
	}
	f, err := ReadFile(at("at-limit"))
	if err != nil || len(f.Data) != MaxFile {
		t.Errorf("ReadFile of MaxFile bytes = %v; want it read", err)
	} else {
		f.Close()
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
// when that owner could have made files in the folder itself, and stay
// the writer's otherwise (as root: a user's file in a folder of root's
// gives the user no file there). Not as root, a file is one's own.
func TestWriteFileOwner(t *testing.T) {
	const uid, gid = 1000, 1000
	tests := []struct {
		name     string
		dirOwner [2]int
		dirMode  os.FileMode
		kept     bool
	}{
		{"the owner's folder", [2]int{uid, gid}, 0o700, true},
		{"the owner's folder, read-only", [2]int{uid, gid}, 0o500, true},
		{"root's folder", [2]int{0, 0}, 0o755, false},
		{"root's folder, the file's group may write", [2]int{0, gid}, 0o775, true},
		{"root's folder, another group may write", [2]int{0, 4242}, 0o775, false},
		{"anyone's folder, sticky", [2]int{0, 0}, 0o1777, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cfg")
			check(t, os.Mkdir(dir, 0o700))
			path := filepath.Join(dir, "mcp.json")
			check(t, os.WriteFile(path, []byte("old"), 0o600))
			wantUID, wantGID := os.Geteuid(), os.Getegid()
			if os.Geteuid() == 0 {
				if err := os.Chown(path, uid, gid); err != nil {
					t.Fatal(err)
				}
				check(t, os.Chown(dir, tt.dirOwner[0], tt.dirOwner[1]))
				check(t, os.Chmod(dir, tt.dirMode))
				if tt.kept {
					wantUID, wantGID = uid, gid
				}
			}
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			note := f.OwnerNote()
			backup, err := WriteFile(f, []byte("new"), filepath.Join(t.TempDir(), "backups"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if u, g := ownerOf(st); u != wantUID || g != wantGID {
				t.Errorf("%s owner = %d:%d; want %d:%d", path, u, g, wantUID, wantGID)
			}
			// The backup is in the writer's own folder, and the writer's.
			if st, err := os.Stat(backup); err != nil || func() bool { u, _ := ownerOf(st); return u != os.Geteuid() }() {
				t.Errorf("backup %s: %v; want the writer's", backup, err)
			}
			if (note == "") != (wantUID == uid || wantUID == os.Geteuid() && os.Geteuid() != 0) {
				t.Errorf("OwnerNote() = %q; want a note exactly when the owner is not kept", note)
			}
			checkFile(t, path, "new", 0o600)
		})
	}
}

// asUser makes path (a file or folder) uid 1000's, as a user's file is
// when root rewrites it with sudo; tests that need it run as root.
func asUser(t *testing.T, paths ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root): the attack is on sudo aegis config, which makes files owned by another user; run the tests as root")
	}
	for _, p := range paths {
		if err := os.Lchown(p, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteFileSwapped: a path changed between ReadFile and WriteFile
// (while the file is parsed) is never followed. A user who owns a folder
// on the path swaps it, or a folder above it, for a symlink to a folder
// of root's, or for another folder, or the file for a link: nothing is
// written anywhere, root's folder gets no file, and the error says why.
func TestWriteFileSwapped(t *testing.T) {
	tests := []struct {
		name string
		swap func(t *testing.T, home, secret string) // home/u/.cursor/mcp.json
		want error
	}{
		{"folder for a symlink", func(t *testing.T, home, secret string) {
			mustRename(t, filepath.Join(home, "u", ".cursor"), filepath.Join(home, "u", "moved"))
			mustSymlink(t, secret, filepath.Join(home, "u", ".cursor"))
		}, ErrMoved},
		{"folder above for a symlink", func(t *testing.T, home, secret string) {
			mustRename(t, filepath.Join(home, "u"), filepath.Join(home, "moved"))
			check(t, os.Mkdir(filepath.Join(secret, ".cursor"), 0o700))
			mustSymlink(t, secret, filepath.Join(home, "u"))
		}, ErrMoved},
		{"folder for another folder", func(t *testing.T, home, secret string) {
			mustRename(t, filepath.Join(home, "u", ".cursor"), filepath.Join(home, "u", "moved"))
			check(t, os.Mkdir(filepath.Join(home, "u", ".cursor"), 0o700))
			check(t, os.WriteFile(filepath.Join(home, "u", ".cursor", "mcp.json"), []byte(`{"mcpServers": {}}`), 0o600))
		}, ErrMoved},
		{"folder gone", func(t *testing.T, home, secret string) {
			mustRename(t, filepath.Join(home, "u", ".cursor"), filepath.Join(home, "u", "moved"))
		}, ErrMoved},
		{"file for a symlink", func(t *testing.T, home, secret string) {
			p := filepath.Join(home, "u", ".cursor", "mcp.json")
			check(t, os.Remove(p))
			mustSymlink(t, filepath.Join(secret, "mcp.json"), p)
		}, ErrChanged},
		{"file for a hard link to root's", func(t *testing.T, home, secret string) {
			p := filepath.Join(home, "u", ".cursor", "mcp.json")
			check(t, os.Remove(p))
			if err := os.Link(filepath.Join(secret, "mcp.json"), p); err != nil {
				t.Fatal(err)
			}
		}, ErrChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, secret := t.TempDir(), t.TempDir() // secret: root's, 0700
			check(t, os.Chmod(secret, 0o700))
			rootCfg := []byte(`{"mcpServers": {"root": {"command": "x"}}}`)
			check(t, os.WriteFile(filepath.Join(secret, "mcp.json"), rootCfg, 0o600))
			dir := filepath.Join(home, "u", ".cursor")
			check(t, os.MkdirAll(dir, 0o700))
			path := filepath.Join(dir, "mcp.json")
			userCfg := []byte(`{"mcpServers": {"evil": {"command": "the user's bytes"}}}`)
			check(t, os.WriteFile(path, userCfg, 0o600))
			asUser(t, filepath.Join(home, "u"), dir, path)
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tt.swap(t, home, secret)
			backup, err := WriteFile(f, []byte("rewritten"), filepath.Join(t.TempDir(), "backups"))
			if !errors.Is(err, tt.want) {
				t.Fatalf("WriteFile after the swap = %q, %v; want %v", backup, err, tt.want)
			}
			if names := dirNames(t, secret); !slices.Equal(names, []string{"mcp.json"}) && !slices.Equal(names, []string{".cursor", "mcp.json"}) {
				t.Errorf("root's folder holds %v; want only what it held", names)
			}
			checkFile(t, filepath.Join(secret, "mcp.json"), string(rootCfg), 0o600)
			filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && d.Type()&os.ModeSymlink == 0 {
					if data, _ := os.ReadFile(p); string(data) == "rewritten" || strings.Contains(p, "aegis") {
						t.Errorf("WriteFile left %s", p)
					}
				}
				return nil
			})
		})
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func ownerOf(fi os.FileInfo) (uid, gid int) {
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}
