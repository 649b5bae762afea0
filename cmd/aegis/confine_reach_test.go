package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestConfineReach: README's --confine example run as pasted, an
// interpreter given a script from a folder no grant covers (the working
// folder), is refused before the child starts, naming the one grant
// missing (--allow-read of the script's folder): wrap exits 69 with
// session_end confinement_refused and says so, and --print-profile shows
// the profile, flags the script and exits 69. With that grant both
// succeed and the session runs.
func TestConfineReach(t *testing.T) {
	if why := kernelCannotConfine(); why != "" {
		t.Skip(why)
	}
	f := newFixture(t)
	dir, data := filepath.Join(f.dir, "server"), filepath.Join(f.dir, "data")
	for _, d := range []string{dir, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A server that reads its input to the end with the shell's builtins.
	if err := os.WriteFile(filepath.Join(dir, "server.sh"), []byte("while read -r l; do :; done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"sh", "./server.sh", data}
	flags := []string{"--confine", "--allow-exec-support", "--allow-write", data}
	script := filepath.Join(dir, "server.sh")
	grant := "--allow-read " + dir
	run := func(extra ...string) (*exec.Cmd, string, string) {
		cmd := f.wrapCmd(append(append([]string(nil), flags...), extra...), argv...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(toolsCall("1", "echo") + "\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runBounded(t, cmd, 60*time.Second)
		return cmd, stdout.String(), stderr.String()
	}

	cmd, out, errOut := run("--print-profile")
	if code := cmd.ProcessState.ExitCode(); code != exitcode.Confinement {
		t.Errorf("--print-profile without the script's folder = exit %d; want %d\n%s%s", code, exitcode.Confinement, out, errOut)
	}
	for _, w := range []string{"files (Landlock ABI", "  outside every grant: sh's script " + script + " (add " + grant + ")\n",
		"wrap would refuse to start it (exit 69): add " + grant + ".\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("--print-profile's output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "--allow-udp") {
		t.Errorf("--print-profile lists every grant flag, not the one missing:\n%s", out)
	}
	if want := "aegis: wrap: --print-profile: a file the command needs is outside every grant: add " + grant + "\n"; errOut != want {
		t.Errorf("--print-profile's stderr = %q; want %q", errOut, want)
	}
	if _, err := os.Stat(f.audit); err == nil {
		t.Errorf("--print-profile wrote %s; it runs nothing", f.audit)
	}

	cmd, _, errOut = run()
	if code := cmd.ProcessState.ExitCode(); code != exitcode.Confinement {
		t.Fatalf("wrap without the script's folder = exit %d; want %d\n%s", code, exitcode.Confinement, errOut)
	}
	for _, w := range []string{"sh's script " + script + " is outside every grant (add " + grant + ")",
		`"sh" was not started (exit 69): it needs files to start that --confine's grants do not cover; add ` + grant} {
		if strings.Count(errOut, w) != 1 {
			t.Errorf("wrap's stderr says %q %d times; want once:\n%s", w, strings.Count(errOut, w), errOut)
		}
	}
	var kinds []record.Kind
	for _, r := range f.records(t) {
		kinds = append(kinds, r.Kind)
	}
	if len(kinds) != 2 || kinds[0] != record.KindSessionStart || kinds[1] != record.KindSessionEnd {
		t.Fatalf("records %v; want session_start, session_end (nothing started, nothing enforced)", kinds)
	}
	if end := f.sessionEnd(t); end.Reason != record.EndConfinementRefused || !strings.Contains(end.Detail, grant) {
		t.Errorf("session_end = %+v; want %s naming %s", end, record.EndConfinementRefused, grant)
	}

	flags = append(flags, "--allow-read", dir)
	if cmd, out, errOut := run("--print-profile"); cmd.ProcessState.ExitCode() != 0 || strings.Contains(out, "outside every grant") {
		t.Errorf("--print-profile with %s = exit %d; want 0 and nothing outside every grant\n%s%s", grant, cmd.ProcessState.ExitCode(), out, errOut)
	}
	if cmd, _, errOut := run(); cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("wrap with %s = exit %d; want 0\n%s", grant, cmd.ProcessState.ExitCode(), errOut)
	}
	if end := f.sessionEnd(t); end.Reason != record.EndClientEOF || end.ExitCode != 0 {
		t.Errorf("session_end with %s = %+v; want client_eof, exit 0", grant, end)
	}
	f.mustVerify(t, 0)
}
