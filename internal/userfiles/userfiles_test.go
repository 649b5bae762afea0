package userfiles

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestServerName: real-world command lines (README's, and those the MCP
// servers document for Claude Desktop, Claude Code, VS Code and Cursor)
// are named after the server they run, past env, launchers, interpreter
// options, scopes, versions and tags.
func TestServerName(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-memory"}, "server-memory"},
		{[]string{"npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}, "server-everything"},
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"}, "server-filesystem"},
		{[]string{"npx", "--yes", "--package", "@playwright/mcp", "mcp-server-playwright"}, "mcp-server-playwright"},
		{[]string{"npx", "@playwright/mcp@latest"}, "mcp"},
		{[]string{"npx", "-y", "--", "@upstash/context7-mcp@1.0.14"}, "context7-mcp"},
		{[]string{"env", "MEMORY_FILE_PATH=/tmp/memory.json", "npx", "-y", "@modelcontextprotocol/server-memory"}, "server-memory"},
		{[]string{"/usr/bin/env", "-u", "DEBUG", "-i", "PATH=/usr/bin", "HOME=/h", "node", "server.js"}, "server"},
		{[]string{"env", "-C", "/srv/notes", "uv", "run", "notes.py"}, "notes"},
		{[]string{"node", "-e", "process.exit(3)"}, "node"},
		{[]string{"node", "--eval=process.exit(3)"}, "node"},
		{[]string{"python3", "-c", "import sys; sys.exit(3)"}, "python3"},
		{[]string{"node", "--max-old-space-size=4096", "-r", "./otel.js", "/srv/weather/build/index.js"}, "weather"},
		{[]string{"/usr/bin/node", "/srv/weather/dist/index.js"}, "weather"},
		{[]string{"node", "./server.js"}, "server"},
		{[]string{"C:\\Program Files\\nodejs\\node.exe", "C:\\mcp\\github\\dist\\index.js"}, "github"},
		{[]string{"uvx", "mcp-server-git", "--repository", "."}, "mcp-server-git"},
		{[]string{"uvx", "mcp-server-fetch@0.6.2"}, "mcp-server-fetch"},
		{[]string{"uvx", "--from", "git+https://github.com/oraios/serena", "serena", "start-mcp-server"}, "serena"},
		{[]string{"uvx", "--python", "3.12", "mcp-server-time", "--local-timezone=Europe/Paris"}, "mcp-server-time"},
		{[]string{"uv", "run", "notes.py"}, "notes"},
		{[]string{"uv", "--directory", "/Users/me/weather", "run", "weather.py"}, "weather"},
		{[]string{"uv", "run", "--with", "mcp[cli]", "mcp", "run", "/srv/notes/notes.py"}, "notes"},
		{[]string{"pipx", "run", "mcp-server-sqlite==0.6", "--db-path", "x.db"}, "mcp-server-sqlite"},
		{[]string{"pipx", "run", "--spec", "mcp-server-time", "mcp-server-time"}, "mcp-server-time"},
		{[]string{"python3", "-m", "mcp_server_time"}, "mcp_server_time"},
		{[]string{"python3.12", "-u", "-W", "ignore", "/srv/tools/search.py"}, "search"},
		{[]string{"bunx", "@scope/pkg@1.2"}, "pkg"},
		{[]string{"pnpm", "dlx", "@scope/pkg@1.2", "--stdio"}, "pkg"},
		{[]string{"yarn", "dlx", "mcp-remote", "https://example.com/mcp"}, "mcp-remote"},
		{[]string{"deno", "run", "-A", "jsr:@scope/deno-server@0.3"}, "deno-server"},
		{[]string{"docker", "run", "-i", "mcp/fetch"}, "fetch"},
		{[]string{"docker", "run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"}, "github-mcp-server"},
		{[]string{"docker", "run", "-i", "--rm", "--mount", "type=bind,src=/Users/me,dst=/projects", "mcp/filesystem:latest", "/projects"}, "filesystem"},
		{[]string{"podman", "run", "--rm", "-i", "--name=x", "quay.io/org/srv@sha256:0123"}, "srv"},
		{[]string{"docker", "ps"}, "docker"},
		{[]string{"java", "-Xmx1g", "-jar", "/opt/mcp/weather-server-1.0.jar"}, "weather-server-1.0"},
		{[]string{"go", "run", "github.com/github/github-mcp-server/cmd/github-mcp-server@latest", "stdio"}, "github-mcp-server"},
		{[]string{"cmd", "/c", "npx", "-y", "@modelcontextprotocol/server-memory"}, "server-memory"},
		{[]string{"./bin/my server"}, "my-server"},
		{[]string{"/opt/tools/github-mcp-server", "stdio"}, "github-mcp-server"},
		{[]string{"aegis", "demo", "--serve"}, "aegis"},
		{[]string{"npx"}, "npx"},
		{[]string{"env"}, "env"},
		{[]string{"env", "A=1"}, "env"},
		{[]string{"node", "-r"}, "node"},
		{[]string{"..."}, "server"},
	} {
		if got := ServerName(tt.argv); got != tt.want {
			t.Errorf("ServerName(%q) = %q; want %q", tt.argv, got, tt.want)
		}
	}
}

// TestDirs: the XDG variables when absolute, else the folders under
// $HOME; a relative value is ignored, as the specification says.
func TestDirs(t *testing.T) {
	tests := []struct {
		name, config, state, home, wantKey, wantLog string
	}{
		{"xdg", "/c", "/s", "/h", "/c/aegis/signing.key", "/s/aegis/srv.jsonl"},
		{"home", "", "", "/h", "/h/.config/aegis/signing.key", "/h/.local/state/aegis/srv.jsonl"},
		{"relative ignored", "c", "s", "/h", "/h/.config/aegis/signing.key", "/h/.local/state/aegis/srv.jsonl"},
		{"nothing", "", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Setenv("XDG_CONFIG_HOME", tt.config)
		t.Setenv("XDG_STATE_HOME", tt.state)
		t.Setenv("HOME", tt.home)
		key, kerr := KeyPath()
		log, lerr := LogPath("srv")
		if key != tt.wantKey || log != tt.wantLog || (kerr != nil) != (tt.wantKey == "") || (lerr != nil) != (tt.wantLog == "") {
			t.Errorf("%s: KeyPath, LogPath = %q, %v, %q, %v; want %q, %q", tt.name, key, kerr, log, lerr, tt.wantKey, tt.wantLog)
		}
	}
}

// TestMkdirParents: the missing folders are made with mode 0700 and
// named outermost first; none is named when all exist.
func TestMkdirParents(t *testing.T) {
	dir := t.TempDir()
	made, err := MkdirParents(filepath.Join(dir, "a", "b", "file"))
	if want := []string{filepath.Join(dir, "a"), filepath.Join(dir, "a", "b")}; err != nil || !slices.Equal(made, want) {
		t.Fatalf("MkdirParents = %q, %v; want %q", made, err, want)
	}
	for _, d := range made {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, %v; want 0700 (no permission for group or others)", d, st.Mode().Perm(), err)
		}
	}
	if made, err := MkdirParents(filepath.Join(dir, "a", "b", "file")); err != nil || len(made) != 0 {
		t.Errorf("MkdirParents(existing) = %q, %v; want none", made, err)
	}
}

// TestWriteKey: the key pair is written, the private key 0600; an
// existing file is refused without force, and with force a path that is
// not a regular file is refused before either file is written.
func TestWriteKey(t *testing.T) {
	dir := t.TempDir()
	k, err := record.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		setup   func(path string)
		force   bool
		wantErr string
	}{
		{"new", func(string) {}, false, ""},
		{"exists", func(p string) { os.WriteFile(p, nil, 0o600) }, false, "exists; use --force"},
		{"forced over a file", func(p string) { os.WriteFile(p, nil, 0o644) }, true, ""},
		{"forced over a directory .pub", func(p string) { os.Mkdir(p+".pub", 0o700) }, true, "a directory, not a regular file"},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, string(rune('a'+i))+".key")
		tt.setup(path)
		pub, err := WriteKey(path, k, tt.force)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: WriteKey = %v; want an error with %q", tt.name, err, tt.wantErr)
			}
			if tt.force {
				if data, _ := os.ReadFile(path); len(data) != 0 {
					t.Errorf("%s: the key was written beside a refused .pub", tt.name)
				}
			}
			continue
		}
		got, err := record.ReadPrivateKeyFile(path, false)
		if err != nil || !got.Equal(k) {
			t.Errorf("%s: the key read back = %v; want the key written", tt.name, err)
		}
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v; want 0600", tt.name, st.Mode().Perm())
		}
		data, _ := os.ReadFile(path + ".pub")
		if want := record.FormatPublicKey(k.Public().(ed25519.PublicKey)); pub != want || string(data) != want+"\n" {
			t.Errorf("%s: public key %q, file %q; want %q", tt.name, pub, data, want)
		}
	}
}

// TestServers: a state folder's live files group by server: NAME-N.jsonl
// (the logs of a wrap that found NAME.jsonl in use) with NAME, in order
// of N, when NAME.jsonl is there; sealed segments, spares and other files
// are no server's; a name that ends in -N with no NAME.jsonl is its own.
func TestServers(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	state := filepath.Join(dir, "aegis")
	if s, d, err := Servers(); err != nil || len(s) != 0 || d != state {
		t.Fatalf("Servers() of a folder not made yet = %v, %q, %v; want none, %q", s, d, err, state)
	}
	if err := os.MkdirAll(filepath.Join(state, "folder.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.jsonl", "a-10.jsonl", "a-2.jsonl", "a.jsonl.0-5.jsonl", "a.jsonl.6-9.jsonl.zst", "a.jsonl.next",
		"a-2.jsonl.0-3.jsonl", "gpt-4.jsonl", "b-02.jsonl", "b.jsonl", "b-1.jsonl", "signing.key", ".jsonl"} {
		if err := os.WriteFile(filepath.Join(state, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := Servers()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range got {
		var logs []string
		for _, l := range s.Logs {
			logs = append(logs, strings.TrimPrefix(l, state+"/"))
		}
		lines = append(lines, s.Name+": "+strings.Join(logs, " "))
	}
	want := []string{"a: a.jsonl a-2.jsonl a-10.jsonl", "b: b.jsonl", "b-02: b-02.jsonl", "b-1: b-1.jsonl", "gpt-4: gpt-4.jsonl"}
	if g, w := strings.Join(lines, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("Servers() =\n%s\nwant\n%s", g, w)
	}
	if s, _, err := ServerLogs("a"); err != nil || len(s.Logs) != 3 {
		t.Errorf("ServerLogs(a) = %v, %v; want its 3 logs", s, err)
	}
	if s, _, err := ServerLogs("nope"); err != nil || len(s.Logs) != 0 {
		t.Errorf("ServerLogs(nope) = %v, %v; want none", s, err)
	}
	if p, err := InUseLogPath("a", 2); err != nil || p != filepath.Join(state, "a-2.jsonl") {
		t.Errorf("InUseLogPath(a, 2) = %q, %v; want %s", p, err, filepath.Join(state, "a-2.jsonl"))
	}
}
