package confine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestReach: the files a command needs to start that its profile does not
// grant, each with the grant that covers it, and none when the grants do.
func TestReach(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to name a real interpreter: %v", err)
	}
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mk := func(path, content string, mode os.FileMode) string {
		t.Helper()
		path = filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	srv := filepath.Join(dir, "srv")
	script := mk("srv/server.js", "process.stdin.resume()\n", 0o644)
	hook := mk("hooks/hook.js", "\n", 0o644)
	venv := mk("venv/bin/python", "not a program\n", 0o755)
	viaEnv := mk("bin/tool", "#!"+env+" node\nconsole.log(1)\n", 0o755)
	viaVenv := mk("bin/tool.py", "#!"+venv+"\nprint(1)\n", 0o755)
	if err := os.Symlink(srv, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	versioned := mk("bin/python3.99", "not a program\n", 0o755)
	t.Chdir(dir) // relative scripts are found from the working folder

	scriptMiss := Unreached{Path: script, What: "node's script", Grant: "--allow-read " + srv}
	nodeMiss := Unreached{Path: node, What: "env's program", Grant: "--allow-exec-support"}
	tests := []struct {
		name string
		p    Profile
		argv []string
		want []Unreached
	}{
		{"script outside every grant", Profile{ExecSupport: true}, []string{"node", "srv/server.js"}, []Unreached{scriptMiss}},
		{"script's folder granted", Profile{ExecSupport: true, Read: []string{srv}}, []string{"node", "srv/server.js"}, nil},
		{"a folder above granted", Profile{ExecSupport: true, Read: []string{dir}}, []string{"node", script}, nil},
		{"granted write", Profile{ExecSupport: true, Write: []string{srv}}, []string{"node", script}, nil},
		{"granted through a link", Profile{ExecSupport: true, Read: []string{filepath.Join(dir, "link")}}, []string{"node", script}, nil},
		{"past an option's value", Profile{ExecSupport: true, Read: []string{filepath.Dir(hook)}}, []string{"node", "-r", hook, "--title=x", "srv/server.js"}, []Unreached{scriptMiss}},
		{"after --", Profile{ExecSupport: true}, []string{"node", "--", "srv/server.js"}, []Unreached{scriptMiss}},
		{"inline program", Profile{ExecSupport: true}, []string{"node", "-e", "srv/server.js"}, nil},
		{"shell command", Profile{ExecSupport: true}, []string{"sh", "-c", "srv/server.js"}, nil},
		{"python module", Profile{ExecSupport: true}, []string{"python3", "-m", "srv/server.js"}, nil},
		{"a versioned python's script", Profile{ExecSupport: true}, []string{versioned, "srv/server.js"},
			[]Unreached{{Path: script, What: "python3.99's script", Grant: "--allow-read " + srv}}},
		{"a folder, not a script", Profile{ExecSupport: true}, []string{"node", "srv"}, nil},
		{"no such script", Profile{ExecSupport: true}, []string{"node", "srv/none.js"}, nil},
		{"the target is granted", Profile{}, []string{node}, nil},
		{"env's program and its script", Profile{}, []string{"env", "-u", "HOME", "NODE_ENV=production", "node", "srv/server.js"},
			[]Unreached{nodeMiss, {Path: script, What: "node's script", Grant: "--allow-read " + srv}}},
		{"env's program granted", Profile{ExecSupport: true, Read: []string{srv}}, []string{"env", "X=1", "node", "srv/server.js"}, nil},
		{"env -S", Profile{}, []string{"env", "-S", "node srv/server.js"}, nil},
		{"env - and --", Profile{ExecSupport: true}, []string{"env", "-", "--", "node", "srv/server.js"}, []Unreached{scriptMiss}},
		{"a program from stdin", Profile{ExecSupport: true}, []string{"node", "-", "srv/server.js"}, nil},
		{"-cCMD", Profile{ExecSupport: true}, []string{"sh", "-csrv/server.js"}, nil},
		{"#!/usr/bin/env node", Profile{}, []string{viaEnv}, []Unreached{
			{Path: env, What: viaEnv + "'s interpreter", Grant: "--allow-exec-support"},
			{Path: node, What: viaEnv + "'s #! program", Grant: "--allow-exec-support"}}},
		{"#!/usr/bin/env node with exec support", Profile{ExecSupport: true}, []string{viaEnv}, nil},
		{"#! an interpreter outside every grant", Profile{ExecSupport: true}, []string{viaVenv},
			[]Unreached{{Path: venv, What: viaVenv + "'s interpreter", Grant: "--allow-read " + filepath.Dir(venv)}}},
		{"#! an interpreter granted", Profile{ExecSupport: true, Read: []string{filepath.Join(dir, "venv")}}, []string{viaVenv}, nil},
		{"no command", Profile{}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Reach(tt.p, tt.argv)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Reach(%+v, %q) = %+v; want %+v", tt.p, tt.argv, got, tt.want)
			}
		})
	}
}

// TestReachError: Command's error names each missing file and its grant,
// matches ErrUnreached, and lists each grant once.
func TestReachError(t *testing.T) {
	e := &ReachError{Missing: []Unreached{
		{Path: "/usr/bin/env", What: "/x/tool's interpreter", Grant: "--allow-exec-support"},
		{Path: "/usr/bin/node", What: "env's program", Grant: "--allow-exec-support"},
		{Path: "/x/server.js", What: "node's script", Grant: "--allow-read /x"},
	}}
	var err error = e
	if !errors.Is(err, ErrUnreached) {
		t.Errorf("errors.Is(%v, ErrUnreached) = false; want true", err)
	}
	if want := "confine: the command cannot start under these grants: /x/tool's interpreter /usr/bin/env is outside every grant (add --allow-exec-support); " +
		"env's program /usr/bin/node is outside every grant (add --allow-exec-support); node's script /x/server.js is outside every grant (add --allow-read /x)"; err.Error() != want {
		t.Errorf("Error() = %q; want %q", err.Error(), want)
	}
	if got, want := e.Grants(), []string{"--allow-exec-support", "--allow-read /x"}; !slices.Equal(got, want) {
		t.Errorf("Grants() = %q; want %q", got, want)
	}
}

// TestInterpreterOf: interpreters are known by their file name, python's
// with its version.
func TestInterpreterOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"node", true}, {"/usr/bin/node", true}, {"python3.12", true}, {"python3", true}, {"bash", true},
		{"python3-config", false}, {"pythonx", false}, {"npx", false}, {"server", false},
	} {
		if _, got := interpreterOf(tt.name); got != tt.want {
			t.Errorf("interpreterOf(%q) = %v; want %v", tt.name, got, tt.want)
		}
	}
}
