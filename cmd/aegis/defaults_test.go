package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/logview"
	"github.com/aegisrelay/aegis/journal/record"
)

// freshHome returns the environment of a new account: HOME in a new
// temporary folder that does not exist yet, and no XDG variables.
func freshHome(t *testing.T) []string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && !strings.HasPrefix(k, "XDG_") {
			env = append(env, kv)
		}
	}
	return env
}

func homeOf(env []string) string {
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			return h
		}
	}
	return ""
}

// TestFirstHour is a new account's first steps with the defaults: keygen
// with no flag, wrap with no flag but the child (no --), log and verify.
func TestFirstHour(t *testing.T) {
	env := freshHome(t)
	home := homeOf(env)

	kg := exec.Command(aegisBin, "keygen")
	kg.Env = env
	var kgErr bytes.Buffer
	kg.Stderr = &kgErr
	out, err := kg.Output()
	if err != nil {
		t.Fatalf("keygen on a fresh account: %v\n%s", err, kgErr.String())
	}
	key := filepath.Join(home, ".config", "aegis", "signing.key")
	for _, d := range []string{home, filepath.Join(home, ".config"), filepath.Dir(key)} {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, mode %v; want a folder of mode 0700", d, err, st.Mode().Perm())
		}
		if !strings.Contains(kgErr.String(), "created folder "+d+" ") {
			t.Errorf("keygen's stderr does not name the folder it created, %s:\n%s", d, kgErr.String())
		}
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("default key %s: %v", key, err)
	}
	pub := strings.TrimSpace(string(out))
	if _, err := record.ParsePublicKey(pub); err != nil {
		t.Fatalf("keygen stdout %q: %v", out, err)
	}

	// No --: the first argument that is not a flag of wrap starts the
	// child, and the child's own flags (--help, --, -x) are its own.
	argv := append(child("echo"), "--help", "--", "-x")
	wrap := exec.Command(aegisBin, append([]string{"wrap", "--grace", "5s"}, argv...)...)
	wrap.Env = env
	wrap.Stdin = strings.NewReader(call("1", "read_file") + "\n")
	var stdout, stderr bytes.Buffer
	wrap.Stdout, wrap.Stderr = &stdout, &stderr
	runBounded(t, wrap, 30*time.Second)
	if code := wrap.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("wrap: exit %d\n%s", code, stderr.String())
	}
	// Named after the program env runs (the test child), past env and
	// its assignments.
	audit := filepath.Join(home, ".local", "state", "aegis", filepath.Base(childBin)+".jsonl")
	if !strings.Contains(stderr.String(), "recording "+logview.ShortArgv(argv)+" to "+audit+"\n") {
		t.Errorf("wrap's stderr does not say where it records (%s):\n%s", audit, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"id":1`) {
		t.Errorf("the call was not answered through wrap: %q", stdout.String())
	}
	recs := (&fixture{audit: audit}).records(t)
	start, ok := recs[0].Body.(*record.SessionStart)
	if !ok || !slices.Equal(start.Argv, argv) {
		t.Fatalf("session_start argv = %+v; want %q", recs[0].Body, argv)
	}

	for _, args := range [][]string{{"log", audit}, {"verify", "--key", pub, audit}} {
		c := exec.Command(aegisBin, args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("aegis %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// --name names the log; a second wrap on a log in use is told how to
	// get its own.
	named := exec.Command(aegisBin, append([]string{"wrap", "--name", "notes", "--"}, child("echo")...)...)
	named.Env = env
	named.Stdin = strings.NewReader("")
	runBounded(t, named, 30*time.Second)
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "aegis", "notes.jsonl")); err != nil {
		t.Errorf("wrap --name notes: %v", err)
	}
	bad := exec.Command(aegisBin, "wrap", "--name", "../x", "cat")
	bad.Env = env
	if out, _ := bad.CombinedOutput(); bad.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "--name") {
		t.Errorf("wrap --name ../x: exit %d %s; want 2", bad.ProcessState.ExitCode(), out)
	}
}

// TestWrapLogInUse: two wraps of one server share a default log name; the
// second is refused as a setup mistake, and told what to do.
func TestWrapLogInUse(t *testing.T) {
	f := newFixture(t)
	first := f.wrapCmd(nil, child("echo")...)
	end := startRecording(t, first)
	second := f.wrapCmd(nil, "cat")
	second.Stdin = strings.NewReader("")
	out, _ := second.CombinedOutput()
	if code := second.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "--name NAME") {
		t.Errorf("second wrap on a log in use: exit %d %s; want 2 and a hint at --name", code, out)
	}
	if err := end(); err != nil {
		t.Errorf("first wrap: %v", err)
	}
	f.mustVerify(t, 0)
}

// TestPrintProfile: --print-profile shows the rules a profile gives on
// this kernel and runs nothing; a grant of a missing path is refused.
func TestPrintProfile(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	cmd := exec.Command(aegisBin, "wrap", "--confine", "--allow-exec-support", "--allow-write", dir,
		"--allow-net", "localhost:8443", "--print-profile", "--", "sh", "-c", "touch "+marker)
	cmd.Env = freshHome(t) // no key anywhere: nothing but the profile is needed
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("--print-profile: %v\n%s", err, out)
	}
	for _, want := range []string{dir + "  ", "write_file", "tcp: connect only to port(s) [8443]", "udp: denied", "--allow-read"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--print-profile output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("--print-profile ran the child")
	}
	missing := exec.Command(aegisBin, "wrap", "--confine", "--allow-read", filepath.Join(dir, "nope"), "--print-profile", "--", "sh")
	if out, _ := missing.CombinedOutput(); missing.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "nope") {
		t.Errorf("--print-profile of a grant on a missing path: exit %d %s; want 2", missing.ProcessState.ExitCode(), out)
	}
}

// TestDefaultLogInUse: the same server run twice at once on the default
// log records the second session to NAME-2.jsonl, and says so.
func TestDefaultLogInUse(t *testing.T) {
	env := freshHome(t)
	kg := exec.Command(aegisBin, "keygen")
	kg.Env = env
	if out, err := kg.CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	first := exec.Command(aegisBin, append([]string{"wrap", "--name", "notes", "--grace", "5s"}, child("echo")...)...)
	first.Env = env
	end := startRecording(t, first)
	second := exec.Command(aegisBin, append([]string{"wrap", "--name", "notes"}, child("echo")...)...)
	second.Env = env
	second.Stdin = strings.NewReader(call("1", "read_file") + "\n")
	var stderr bytes.Buffer
	second.Stderr = &stderr
	runBounded(t, second, 30*time.Second)
	state := filepath.Join(homeOf(env), ".local", "state", "aegis")
	if code := second.ProcessState.ExitCode(); code != 0 || !strings.Contains(stderr.String(), "recording") || !strings.Contains(stderr.String(), filepath.Join(state, "notes-2.jsonl")) {
		t.Errorf("second wrap on a default log in use: exit %d\n%s\nwant it to record to notes-2.jsonl", code, stderr.String())
	}
	if err := end(); err != nil {
		t.Errorf("first wrap: %v", err)
	}
	for _, name := range []string{"notes.jsonl", "notes-2.jsonl"} {
		v := exec.Command(aegisBin, "verify", filepath.Join(state, name))
		v.Env = env
		if out, err := v.CombinedOutput(); err != nil {
			t.Errorf("verify %s: %v\n%s", name, err, out)
		}
	}
	// aegis log of the server, by name, shows both sessions; verify with
	// no FILE checks both logs, pinned to keygen's key.
	lg := exec.Command(aegisBin, "log", "notes")
	lg.Env = env
	if out, err := lg.CombinedOutput(); err != nil || strings.Count(string(out), " started ") != 2 || !strings.Contains(string(out), filepath.Join(state, "notes-2.jsonl")) {
		t.Errorf("log notes: %v\n%s\nwant both sessions, from notes.jsonl and notes-2.jsonl", err, out)
	}
	all := exec.Command(aegisBin, "verify")
	all.Env = env
	if out, err := all.CombinedOutput(); err != nil || strings.Count(string(out), "VALID (pinned to ed25519:") != 2 {
		t.Errorf("verify with no FILE: %v\n%s\nwant both logs valid, pinned to the default key", err, out)
	}
}

// startRecording starts wrap, its stdin held open, and returns once it
// says it is recording; end closes its stdin and waits for it to exit.
func startRecording(t *testing.T, wrap *exec.Cmd) (end func() error) {
	t.Helper()
	in, err := wrap.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := wrap.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wrap.Start(); err != nil {
		t.Fatal(err)
	}
	recording := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "recording") {
				recording <- true
			}
		}
		close(recording)
	}()
	select {
	case <-recording:
	case <-time.After(30 * time.Second):
		t.Fatal("wrap never said it was recording")
	}
	return func() error {
		in.Close()
		for range recording {
		}
		return wrap.Wait()
	}
}
