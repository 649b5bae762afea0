package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runConfigCmd runs the real aegis config with args in dir, with HOME set
// to home and no XDG_CONFIG_HOME, and returns its exit status and output.
func runConfigCmd(t *testing.T, dir, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, append([]string{"config"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "XDG_CONFIG_HOME" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runBounded(t, cmd, 30*time.Second)
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// copyExample copies a client example from clientconfig/testdata to path
// with mode 0600 and returns its bytes.
func copyExample(t *testing.T, name, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "clientconfig", "testdata", name))
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

// backups returns the backups beside path.
func backups(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".aegis-backup-*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConfigWrapUnwrap drives aegis config wrap, wrap again and unwrap on
// a Claude Desktop file: every stdio server runs this aegis with its own
// command after --, the backup holds the original, the second wrap
// changes nothing, and unwrap gives back the original bytes.
func TestConfigWrapUnwrap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "claude_desktop_config.json")
	orig := copyExample(t, "claude_desktop_config.json", path)

	code, out, errOut := runConfigCmd(t, dir, dir, "wrap", path)
	if code != 0 {
		t.Fatalf("aegis config wrap = exit %d; want 0\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"wraps    mcpServers.everything: npx -y @modelcontextprotocol/server-everything", "--- " + path, "-      \"command\": \"npx\",", "written; the original is kept in " + path + ".aegis-backup-",
		"Restart the client", "There is no signing key at " + filepath.Join(dir, ".config", "aegis", "signing.key") + " yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("aegis config wrap printed\n%s\nwant it to say %q", out, want)
		}
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
		GlobalShortcut *string `json:"globalShortcut"`
	}
	wrapped, _ := os.ReadFile(path)
	if err := json.Unmarshal(wrapped, &cfg); err != nil {
		t.Fatalf("the wrapped file is not JSON: %v\n%s", err, wrapped)
	}
	self, _ := filepath.EvalSymlinks(aegisBin)
	if len(cfg.MCPServers) != 5 || cfg.GlobalShortcut == nil {
		t.Errorf("wrapped file has %d servers, globalShortcut %v; want 5 and the key kept", len(cfg.MCPServers), cfg.GlobalShortcut)
	}
	for name, s := range cfg.MCPServers {
		if s.Command != self || len(s.Args) < 3 || s.Args[0] != "wrap" || s.Args[1] != "--name="+name && s.Args[1] != "-name="+name {
			t.Errorf("%s = %s %v; want %s wrap --name=%s …", name, s.Command, s.Args, self, name)
		}
	}
	if got := cfg.MCPServers["sqlite"]; got.Env["PYTHONUNBUFFERED"] != "1" || !slices.Equal(got.Args[2:], []string{"uvx", "mcp-server-sqlite", "--db-path", `C:\Users\username\test.db`}) {
		t.Errorf("sqlite = %+v; want its env kept and uvx … after wrap's flags", got)
	}
	b := backups(t, path)
	if len(b) != 1 {
		t.Fatalf("backups %v; want one", b)
	}
	checkBytes(t, b[0], orig, 0o600)
	checkBytes(t, path, wrapped, 0o600)

	// Again: nothing to change, nothing written.
	code, out, _ = runConfigCmd(t, dir, dir, "wrap", path)
	if code != 0 || !strings.Contains(out, "nothing to change") || strings.Contains(out, "---") {
		t.Errorf("second aegis config wrap = exit %d\n%s\nwant 0, nothing to change, no diff", code, out)
	}
	checkBytes(t, path, wrapped, 0o600)
	if b := backups(t, path); len(b) != 1 {
		t.Errorf("second wrap made a backup: %v", b)
	}

	// unwrap: the original bytes, exactly.
	code, out, errOut = runConfigCmd(t, dir, dir, "unwrap", path)
	if code != 0 || !strings.Contains(out, "unwraps  mcpServers.weather") {
		t.Fatalf("aegis config unwrap = exit %d; want 0\n%s%s", code, out, errOut)
	}
	checkBytes(t, path, orig, 0o600)
	if b := backups(t, path); len(b) != 2 {
		t.Errorf("unwrap made no second backup: %v", b)
	}
}

// TestConfigDryRunAndAegisFlag: --dry-run prints the diff and writes
// nothing; --aegis names the binary written.
func TestConfigDryRunAndAegisFlag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".vscode", "mcp.json")
	orig := copyExample(t, "vscode_mcp.json", path)
	code, out, errOut := runConfigCmd(t, dir, dir, "wrap", "--dry-run", "--aegis", "/opt/aegis/bin/aegis", path)
	if code != 0 {
		t.Fatalf("aegis config wrap --dry-run = exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"+\t\t\t\"command\": \"/opt/aegis/bin/aegis\",", "+\t\t\t\"args\": [\"wrap\", \"--name=fetch\", \"uvx\", \"mcp-server-fetch\"],", "--dry-run: not written", "remote   servers.github: https://api.githubcopilot.com/mcp/"} {
		if !strings.Contains(out, want) {
			t.Errorf("aegis config wrap --dry-run printed\n%s\nwant it to say %q", out, want)
		}
	}
	checkBytes(t, path, orig, 0o600)
	if b := backups(t, path); len(b) != 0 {
		t.Errorf("--dry-run made backups %v", b)
	}
}

// TestConfigRefuses: a file aegis cannot read as a configuration is left
// byte for byte and mtime as it was, with exit 2 and the reason.
func TestConfigRefuses(t *testing.T) {
	tests := []struct{ name, content, why string }{
		{"truncated", `{"mcpServers": {"a": {"command": "npx"`, `not JSON: line 1, column 39: unexpected end of file; want , or } after the value of "command"`},
		{"args not strings", `{"mcpServers": {"a": {"command": "npx", "args": ["-y", 2]}}}`, "mcpServers.a.args[1] is not a string"},
		{"duplicate command", `{"mcpServers": {"a": {"command": "npx", "command": "rm"}}}`, "mcpServers.a.command is written twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mcp.json")
			os.WriteFile(path, []byte(tt.content), 0o644)
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			os.Chtimes(path, old, old)
			for _, sub := range []string{"wrap", "unwrap"} {
				code, out, errOut := runConfigCmd(t, dir, dir, sub, path)
				if code != 2 || !strings.Contains(errOut, "refused, left as it was") || !strings.Contains(errOut, tt.why) {
					t.Errorf("aegis config %s = exit %d, stderr %q; want 2 saying %q\n%s", sub, code, errOut, tt.why, out)
				}
			}
			checkBytes(t, path, []byte(tt.content), 0o644)
			if fi, _ := os.Stat(path); !fi.ModTime().Equal(old) {
				t.Errorf("mtime = %v; want %v", fi.ModTime(), old)
			}
			if b := backups(t, path); len(b) != 0 {
				t.Errorf("a refused file got backups %v", b)
			}
		})
	}
	code, _, errOut := runConfigCmd(t, t.TempDir(), t.TempDir(), "wrap", "/nonexistent/mcp.json")
	if code != 2 || !strings.Contains(errOut, "no such file") {
		t.Errorf("aegis config wrap of a missing file = exit %d, %q; want 2, no such file", code, errOut)
	}
}

// TestConfigFinds: with no FILE, the well-known files under $HOME and in
// the current folder are found; --list writes nothing; wrap rewrites each.
func TestConfigFinds(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	files := map[string][]byte{
		filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"): nil,
		filepath.Join(home, ".claude.json"):                                    nil,
		filepath.Join(project, ".vscode", "mcp.json"):                          nil,
		filepath.Join(project, ".mcp.json"):                                    nil,
	}
	examples := map[string]string{"claude_desktop_config.json": "claude_desktop_config.json", ".claude.json": "claude.json", "mcp.json": "vscode_mcp.json", ".mcp.json": "dot_mcp.json"}
	for p := range files {
		files[p] = copyExample(t, examples[filepath.Base(p)], p)
	}

	code, out, errOut := runConfigCmd(t, project, home, "wrap", "--list")
	if code != 0 {
		t.Fatalf("aegis config wrap --list = exit %d\n%s%s", code, out, errOut)
	}
	for p := range files {
		if !strings.Contains(out, p) {
			t.Errorf("--list did not find %s:\n%s", p, out)
		}
	}
	for _, want := range []string{"Claude Desktop", "Claude Code", "VS Code", "stdio    projects./home/me/src/webapp.mcpServers.db: /home/me/bin/db-mcp", "remote   mcpServers.sentry: https://mcp.sentry.dev/mcp"} {
		if !strings.Contains(out, want) {
			t.Errorf("--list printed\n%s\nwant it to say %q", out, want)
		}
	}
	if strings.Contains(out, ".cursor") {
		t.Errorf("--list names a Cursor file, and there is none:\n%s", out)
	}
	for p, data := range files {
		checkBytes(t, p, data, 0o600)
	}

	code, out, errOut = runConfigCmd(t, project, home, "wrap")
	if code != 0 {
		t.Fatalf("aegis config wrap = exit %d\n%s%s", code, out, errOut)
	}
	for p, data := range files {
		now, _ := os.ReadFile(p)
		if bytes.Equal(now, data) || len(backups(t, p)) != 1 {
			t.Errorf("%s was not rewritten with a backup", p)
		}
	}

	code, _, errOut = runConfigCmd(t, t.TempDir(), t.TempDir(), "wrap")
	if code != 2 || !strings.Contains(errOut, "no MCP client configuration found") || !strings.Contains(errOut, ".cursor/mcp.json") {
		t.Errorf("aegis config wrap with nothing to find = exit %d, %q; want 2 and where it looked", code, errOut)
	}
}

// TestConfigWriteFails: a file whose backup cannot be written is left as
// it was, exit 74.
func TestConfigWriteFails(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "cfg")
	path := filepath.Join(sub, "mcp.json")
	orig := copyExample(t, "cursor_mcp.json", path)
	if os.Geteuid() != 0 {
		os.Chmod(sub, 0o500)
		defer os.Chmod(sub, 0o700)
	} else {
		// root writes anywhere: take every backup name for the next
		// seconds instead.
		now := time.Now()
		for s := range 20 {
			base := path + ".aegis-backup-" + now.Add(time.Duration(s)*time.Second).UTC().Format("20060102T150405Z")
			for n := 1; n <= 100; n++ {
				name := base
				if n > 1 {
					name = fmt.Sprintf("%s-%d", base, n)
				}
				if err := os.Mkdir(name, 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	code, out, errOut := runConfigCmd(t, dir, dir, "wrap", path)
	if code != 74 || !strings.Contains(errOut, "it is left as it was") {
		t.Errorf("aegis config wrap with no backup possible = exit %d, %q; want 74\n%s", code, errOut, out)
	}
	checkBytes(t, path, orig, 0o600)
}

// TestConfigUsage: the help says what is kept; a missing or unknown
// subcommand is a usage error.
func TestConfigUsage(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := runConfigCmd(t, dir, dir, "--help")
	if code != 0 || !strings.Contains(out, "What is kept:") || !strings.Contains(out, "comments and trailing commas") {
		t.Errorf("aegis config --help = exit %d\n%s\nwant 0 and what is kept", code, out)
	}
	code, out, _ = runConfigCmd(t, dir, dir, "wrap", "--help")
	if code != 0 || !strings.Contains(out, "--dry-run") {
		t.Errorf("aegis config wrap --help = exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{}, {"rewrap"}, {"wrap", "--bogus"}} {
		if code, _, errOut := runConfigCmd(t, dir, dir, args...); code != 2 {
			t.Errorf("aegis config %v = exit %d, %q; want 2", args, code, errOut)
		}
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
	got := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, "  --") && len(f) == 1 {
			got[strings.TrimPrefix(f[0], "--")] = true
		}
	}
	if len(got) == 0 || !maps.Equal(got, wrapBoolFlags) {
		t.Errorf("aegis wrap --help lists the boolean flags %v; wrapBoolFlags (config.go) holds %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wrapBoolFlags)))
	}
}

// TestConfigUnwrapWithoutDash: an entry written by hand without --, with
// boolean and valued flags of wrap's, is left by unwrap (it carries the
// user's own flags), and unwrap --all unwraps it to the command wrap runs.
func TestConfigUnwrapWithoutDash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	in := `{"mcpServers": {"fs": {"command": "aegis", "args": ["wrap", "--confine", "--allow-read", "/srv", "--clean-env", "--durability", "reply", "node", "server.js", "--", "/srv"]}}}`
	os.WriteFile(path, []byte(in), 0o600)
	code, out, errOut := runConfigCmd(t, dir, dir, "unwrap", path)
	if code != 0 || !strings.Contains(out, "written by hand, not by config wrap; left as it is") || strings.Contains(out, "---") {
		t.Fatalf("aegis config unwrap of a wrap written by hand = exit %d\n%s%s\nwant 0, left, noted", code, out, errOut)
	}
	checkBytes(t, path, []byte(in), 0o600)
	code, out, errOut = runConfigCmd(t, dir, dir, "unwrap", "--all", path)
	if code != 0 {
		t.Fatalf("aegis config unwrap --all = exit %d\n%s%s", code, out, errOut)
	}
	want := `{"mcpServers": {"fs": {"command": "node", "args": ["server.js", "--", "/srv"]}}}`
	checkBytes(t, path, []byte(want), 0o600)
}

// TestConfigNameMadeSafe: an entry's name that wrap would not take as
// --name is written as wrap's default log name makes it.
func TestConfigNameMadeSafe(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	os.WriteFile(path, []byte(`{"mcpServers": {"Brave Search/v2": {"command": "npx"}}}`), 0o600)
	if code, out, errOut := runConfigCmd(t, dir, dir, "wrap", "--aegis", "/bin/aegis", path); code != 0 {
		t.Fatalf("aegis config wrap = exit %d\n%s%s", code, out, errOut)
	}
	want := `{"mcpServers": {"Brave Search/v2": {"args": ["wrap", "-name=Brave-Search-v2", "npx"], "command": "/bin/aegis"}}}`
	checkBytes(t, path, []byte(want), 0o600)
}

// TestConfigFilesRefused: aegis config refuses, exit 2 and the file as it
// was, what it must not read or rewrite: a FIFO (without waiting for a
// writer), a file with a second name, one over 16 MiB, and an entry
// clients read differently (a command beside a url or a non-stdio type).
func TestConfigFilesRefused(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(at("fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(at("linked.json"), []byte(`{"mcpServers": {"a": {"command": "s"}}}`), 0o600)
	os.Link(at("linked.json"), at("second-name.json"))
	big, _ := os.Create(at("big.json"))
	big.Truncate(16<<20 + 1)
	big.Close()
	os.WriteFile(at("both.json"), []byte(`{"mcpServers": {"a": {"type": "stdio", "command": "s", "url": "http://127.0.0.1:1/mcp"}}}`), 0o600)
	os.WriteFile(at("http-command.json"), []byte(`{"servers": {"a": {"type": "http", "command": "s"}}}`), 0o600)
	os.WriteFile(at("transport.json"), []byte(`{"mcpServers": {"a": {"transport": "sse", "command": "s"}}}`), 0o600)
	tests := []struct{ file, why string }{
		{"fifo.json", "is a FIFO"},
		{"linked.json", "has 2 names (hard links)"},
		{"big.json", "over 16 MiB"},
		{"both.json", `mcpServers.a has a "command" and a "url": clients differ`},
		{"http-command.json", `servers.a has a "command" and "type": "http"`},
		{"transport.json", `"transport": "sse"`},
	}
	for _, tt := range tests {
		for _, sub := range []string{"wrap", "unwrap"} {
			before, _ := os.Lstat(at(tt.file))
			code, out, errOut := runConfigCmd(t, dir, dir, sub, at(tt.file))
			if code != 2 || !strings.Contains(errOut, tt.why) || !strings.Contains(errOut, "left as it was") {
				t.Errorf("aegis config %s %s = exit %d, %q; want 2 saying %q\n%s", sub, tt.file, code, errOut, tt.why, out)
			}
			if after, _ := os.Lstat(at(tt.file)); !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
				t.Errorf("aegis config %s changed %s", sub, tt.file)
			}
		}
	}
	if b, _ := filepath.Glob(at("*aegis*")); len(b) != 0 {
		t.Errorf("refused files left %v", b)
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
			code, out, errOut := runConfigCmd(t, base, base, "wrap", "--aegis", "/bin/aegis", filepath.Join(link, "mcp.json"))
			if code != 0 {
				t.Fatalf("aegis config wrap = exit %d\n%s%s", code, out, errOut)
			}
			wantUID := uint32(0)
			if tt.kept {
				wantUID = 1000
			}
			names, _ := filepath.Glob(filepath.Join(folder, "*"))
			if len(names) != 2 {
				t.Errorf("the folder holds %v; want the file and its backup", names)
			}
			for _, p := range names {
				fi, err := os.Lstat(p)
				if err != nil {
					t.Fatal(err)
				}
				if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != wantUID {
					t.Errorf("%s is uid %d's; want %d's", p, uid, wantUID)
				}
			}
			if noted := strings.Contains(out, "owner: uid 1000 owns mcp.json but cannot write "+folder); noted == tt.kept {
				t.Errorf("aegis config wrap printed\n%s\nwant the owner note %v", out, !tt.kept)
			}
		})
	}
}

// TestConfigRoundTrip: on a CRLF file with a wrap written by hand, wrap
// adds CRLF lines and leaves the hand-written wrap; unwrap gives back
// the file's bytes exactly.
func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	orig := "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"s\",\r\n      \"args\": [\r\n        \"-v\"\r\n      ]\r\n    },\r\n" +
		"    \"b\": {\r\n      \"command\": \"aegis\",\r\n      \"args\": [\"wrap\", \"--name\", \"b\", \"--policy\", \"p.yaml\", \"t\"]\r\n    },\r\n" +
		"    \"c\": {\r\n      \"command\": \"u\"\r\n    }\r\n  }\r\n}\r\n"
	os.WriteFile(path, []byte(orig), 0o600)
	if code, out, errOut := runConfigCmd(t, dir, dir, "wrap", "--aegis", "/bin/aegis", path); code != 0 {
		t.Fatalf("aegis config wrap = exit %d\n%s%s", code, out, errOut)
	}
	wrapped, _ := os.ReadFile(path)
	if bytes.Count(wrapped, []byte("\r\n")) != bytes.Count(wrapped, []byte("\n")) || !bytes.Contains(wrapped, []byte("\"--name=a\",\r\n")) {
		t.Errorf("wrapped file %q; want a wrapped, every line ending in CRLF", wrapped)
	}
	code, out, errOut := runConfigCmd(t, dir, dir, "unwrap", path)
	if code != 0 || !strings.Contains(out, "wrapped  mcpServers.b") || !strings.Contains(out, "(written by hand, not by config wrap; left as it is)") {
		t.Fatalf("aegis config unwrap = exit %d\n%s%s\nwant b left as it is, noted", code, out, errOut)
	}
	checkBytes(t, path, []byte(orig), 0o600)
}
