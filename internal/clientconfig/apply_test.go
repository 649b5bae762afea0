package clientconfig

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestApply: List and a dry run write nothing; a refused file is a
// RefusedError naming its real path; a wrap writes the file and one
// backup of the original, under the backups folder and not beside it.
func TestApply(t *testing.T) {
	const in = `{"mcpServers": {"a": {"command": "s"}}}`
	const wrapped = `{"mcpServers": {"a": {"args": ["wrap", "-name=a", "--client=cursor", "s"], "command": "/bin/aegis"}}}`
	tests := []struct {
		name    string
		in      string
		act     Action
		dryRun  bool
		want    string // the file after
		written bool
		err     error
	}{
		{"list", in, List, false, in, false, nil},
		{"dry run", in, DoWrap, true, in, false, nil},
		{"wrap", in, DoWrap, false, wrapped, true, nil},
		{"unwrap", wrapped, DoUnwrap, false, in, true, nil},
		{"nothing to unwrap", in, DoUnwrap, false, in, false, nil},
		{"refused", `{"mcpServers": {"a": {"command": 1}}}`, DoWrap, false, `{"mcpServers": {"a": {"command": 1}}}`, false, ErrShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mcp.json")
			if err := os.WriteFile(path, []byte(tt.in), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "link.json")
			if err := os.Symlink("mcp.json", link); err != nil {
				t.Fatal(err)
			}
			backups := filepath.Join(t.TempDir(), "backups")
			a, err := Apply(link, tt.act, Options{Aegis: "/bin/aegis", Client: "cursor"}, tt.dryRun, backups)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Apply = %v; want %v", err, tt.err)
			}
			var refused *RefusedError
			switch {
			case tt.err != nil && (a != nil || !errors.As(err, &refused) || refused.Path != path):
				t.Errorf("Apply = %+v, %v; want nil and a RefusedError naming %s", a, err, path)
			case tt.err == nil && (a.Path != path || a.Written != tt.written):
				t.Errorf("Apply = %+v; want path %s, written %v", a, path, tt.written)
			}
			got := readBytes(t, path)
			if string(got) != tt.want {
				t.Errorf("the file holds %s; want %s", got, tt.want)
			}
			if names := dirNames(t, dir); !slices.Equal(names, []string{"link.json", "mcp.json"}) {
				t.Errorf("the file's folder holds %v; want the file and the link only", names)
			}
			want := BackupPath(backups, path)
			kept, err := os.ReadFile(want)
			if tt.written != (err == nil) || tt.written && string(kept) != tt.in {
				t.Errorf("backup %s holds %q (%v); want the original only if written (%v)", want, kept, err, tt.written)
			}
			if tt.written && a.Backup != want {
				t.Errorf("Applied.Backup = %s; want %s", a.Backup, want)
			}
		})
	}
	if a, err := Apply(filepath.Join(t.TempDir(), "none.json"), DoWrap, Options{Client: "c"}, false, ""); a != nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Apply of a missing file = %v, %v; want nil, not exist", a, err)
	}
}

// TestExisting: only files that exist are found, a file reached by two
// listed paths once, and every path looked at is listed.
func TestExisting(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	e := Env{Home: home, Dir: project, GOOS: "linux"}
	for _, p := range []string{filepath.Join(home, ".cursor", "mcp.json"), filepath.Join(project, ".mcp.json")} {
		check(t, os.MkdirAll(filepath.Dir(p), 0o700))
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The project's Cursor file is the user's, through a symlink.
	check(t, os.Symlink(filepath.Join(home, ".cursor"), filepath.Join(project, ".cursor")))
	found, looked := Existing(e)
	var got []string
	for _, l := range found {
		got = append(got, l.Client+" "+l.Path)
	}
	want := []string{"Cursor " + filepath.Join(home, ".cursor", "mcp.json"), "Claude Code " + filepath.Join(project, ".mcp.json")}
	if !slices.Equal(got, want) {
		t.Errorf("Existing found %q; want %q", got, want)
	}
	if len(looked) != len(Locations(e)) {
		t.Errorf("Existing looked at %d paths; want all %d", len(looked), len(Locations(e)))
	}
}
