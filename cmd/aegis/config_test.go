package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runConfigCmd runs the real aegis config with args in dir, with HOME set
// to home and no XDG_CONFIG_HOME or XDG_STATE_HOME, and returns its exit
// status and output.
func runConfigCmd(t *testing.T, dir, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, append([]string{"config"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "XDG_CONFIG_HOME" && k != "XDG_STATE_HOME" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runBounded(t, cmd, 30*time.Second)
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// copyExample copies a client example from internal/clientconfig/testdata to path
// with mode 0600 and returns its bytes.
func copyExample(t *testing.T, name, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "clientconfig", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConfigWriteFails: a file whose backup cannot be kept is left as it
// was, exit 74, and nothing is left beside it.
func TestConfigWriteFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".cursor", "mcp.json")
	orig := copyExample(t, "cursor_mcp.json", path)
	// The state folder's parent is a file: no folder can be made there,
	// not even by root.
	os.MkdirAll(filepath.Join(dir, ".local"), 0o700)
	if err := os.WriteFile(filepath.Join(dir, ".local", "state"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runConfigCmd(t, dir, dir, "wrap", path)
	if code != 74 || !strings.Contains(errOut, "keeping a backup of "+path) || !strings.Contains(errOut, "it is left as it was") {
		t.Errorf("aegis config wrap with no backup possible = exit %d, %q; want 74\n%s", code, errOut, out)
	}
	checkBytes(t, path, orig, 0o600)
	if names, err := filepath.Glob(filepath.Join(dir, ".cursor", "*")); err != nil || len(names) != 1 {
		t.Errorf("the file's folder holds %v (%v); want the file only", names, err)
	}
}

func checkBytes(t *testing.T, path string, want []byte, mode os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s holds\n%s\n(%v); want\n%s", path, got, err, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
		t.Errorf("%s mode %v (%v); want %v", path, fi.Mode().Perm(), err, mode)
	}
}

// TestConfigWrapBoolFlags: the flags unwrap takes for booleans are
// exactly those 'aegis wrap --help' lists without a value.
func TestConfigWrapBoolFlags(t *testing.T) {
	out, err := exec.Command(aegisBin, "wrap", "--help").Output()
	if err != nil {
		t.Fatalf("aegis wrap --help: %v", err)
	}
	bools := 0
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, "  --") {
			name := strings.TrimPrefix(f[0], "--")
			bools += len(f) % 2
			if got, want := wrapBoolFlag(name), len(f) == 1; got != want {
				t.Errorf("wrapBoolFlag(%q) = %v; want %v ('aegis wrap --help' lists %q)", name, got, want, l)
			}
		}
	}
	if bools == 0 {
		t.Error("aegis wrap --help lists no boolean flag")
	}
}

// TestConfigOwnerAsRoot: with sudo, a user's file keeps its owner only
// in a folder the user could write; in root's folder (here reached
// through a symlink the user may have made) the new file and the backup
// are root's, never the user's, and the output says so.
func TestConfigOwnerAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (CI runs as root): the case is sudo aegis config, which gives files to another user; run the tests as root")
	}
	tests := []struct {
		name     string
		dirOwner int
		kept     bool
	}{
		{"the user's folder", 1000, true},
		{"root's folder", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			folder := filepath.Join(base, "folder")
			os.Mkdir(folder, 0o700)
			os.Chown(folder, tt.dirOwner, tt.dirOwner)
			path := filepath.Join(folder, "mcp.json")
			os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "s"}}}`), 0o600)
			os.Chown(path, 1000, 1000)
			link := filepath.Join(base, "link")
			os.Symlink(folder, link)
			code, out, errOut := runConfigCmd(t, base, base, "wrap", "--aegis", "/bin/aegis", "--client", "cursor", filepath.Join(link, "mcp.json"))
			if code != 0 {
				t.Fatalf("aegis config wrap = exit %d\n%s%s", code, out, errOut)
			}
			wantUID := uint32(0)
			if tt.kept {
				wantUID = 1000
			}
			names, err := filepath.Glob(filepath.Join(folder, "*"))
			if err != nil || len(names) != 1 {
				t.Errorf("the folder holds %v (%v); want the file only", names, err)
			}
			backup := filepath.Join(base, ".local", "state", "aegis", "config-backups", folder, "mcp.json")
			for p, want := range map[string]uint32{path: wantUID, backup: 0} {
				fi, err := os.Lstat(p)
				if err != nil {
					t.Fatal(err)
				}
				if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != want {
					t.Errorf("%s is uid %d's; want %d's", p, uid, want)
				}
			}
			if noted := strings.Contains(out, "owner: uid 1000 owns mcp.json but cannot write "+folder); noted == tt.kept {
				t.Errorf("aegis config wrap printed\n%s\nwant the owner note %v", out, !tt.kept)
			}
		})
	}
}
