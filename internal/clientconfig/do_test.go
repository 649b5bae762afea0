package clientconfig

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestDo: the client is told by the file's path, or by a symlink's
// target; a wrap whose client nothing tells is refused only when there
// is a stdio entry to wrap, and writes nothing either way.
func TestDo(t *testing.T) {
	const stdio = `{"mcpServers": {"a": {"command": "s"}}}`
	const remote = `{"mcpServers": {"a": {"url": "https://example.com/mcp"}}}`
	tests := []struct {
		name, file, link, in string
		client               string // Options.Client
		err                  error
		want                 string // the client written, "" for the file unchanged
	}{
		{"by path", ".cursor/mcp.json", "", stdio, "", nil, "cursor"},
		{"by the symlink's target", ".cursor/mcp.json", "dotfiles.json", stdio, "", nil, "cursor"},
		{"named", "other.json", "", stdio, "inspector", nil, "inspector"},
		{"named over the path", ".cursor/mcp.json", "", stdio, "inspector", nil, "inspector"},
		{"none", "other.json", "", stdio, "", ErrNoClient, ""},
		{"none needed", "other.json", "", remote, "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.in), 0o600); err != nil {
				t.Fatal(err)
			}
			target := path
			if tt.link != "" {
				target = filepath.Join(dir, tt.link)
				if err := os.Symlink(path, target); err != nil {
					t.Fatal(err)
				}
			}
			a, err := Do(target, DoWrap, Options{Aegis: "/bin/aegis", Client: tt.client}, false, "")
			if !errors.Is(err, tt.err) {
				t.Fatalf("Do = %v; want %v", err, tt.err)
			}
			if a == nil || a.Path != path || len(a.Result.Entries) != 1 {
				t.Fatalf("Do = %+v; want the one entry of %s", a, path)
			}
			want := tt.in
			if tt.want != "" {
				want = `{"mcpServers": {"a": {"args": ["wrap", "-name=a", "--client=` + tt.want + `", "s"], "command": "/bin/aegis"}}}`
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want {
				t.Errorf("the file holds %s; want %s", got, want)
			}
		})
	}
}
