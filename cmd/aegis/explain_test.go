package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/confine"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal/record"
)

// wrapExplains reports whether runWrap calls explainEnd, which decides
// whether wrap's stderr must hold the sentence supervise.Ending.Sentence
// gives.
func wrapExplains(t *testing.T) bool {
	src, err := os.ReadFile("wrap.go")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(src, []byte("explainEnd("))
}

// wrapErr is wrap's error line in stderr, as the error wrap printed
// (nil: none): the sentence after it does not repeat what it says.
func wrapErr(stderr string) error {
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "aegis: wrap: "); ok && !strings.HasPrefix(rest, "warning: ") {
			return errors.New(rest)
		}
	}
	return nil
}

// endRun is one wrap session run to its end through the real binary: its
// exit status, its stderr, the last session_end and what aegis log says.
type endRun struct {
	exit   int
	stderr string
	end    *record.SessionEnd
	sid    string
	log    string
}

// runEnd runs aegis wrap with flags around argv, stdin as the client's
// input and env added to the environment, and reads the log it wrote.
func runEnd(t *testing.T, f *fixture, flags []string, env []string, stdin string, argv ...string) endRun {
	t.Helper()
	return runEndWith(t, aegisBin, f, flags, env, stdin, argv...)
}

func runEndWith(t *testing.T, bin string, f *fixture, flags []string, env []string, stdin string, argv ...string) endRun {
	t.Helper()
	cmd := f.wrapCmd(flags, argv...)
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runBounded(t, cmd, 60*time.Second)
	r := endRun{exit: cmd.ProcessState.ExitCode(), stderr: stderr.String()}
	recs := f.records(t)
	last := recs[len(recs)-1]
	end, ok := last.Body.(*record.SessionEnd)
	if !ok {
		t.Fatalf("wrap %v: last record is %v; want session_end\n%s", argv, last.Kind, r.stderr)
	}
	r.end, r.sid = end, hex.EncodeToString(last.SID[:])
	code, out, errOut := runLogCmd(t, f.audit)
	if code != 0 {
		t.Fatalf("aegis log = exit %d\n%s", code, errOut)
	}
	r.log = out
	return r
}

// TestExplainEnds drives the real binary to each kind of end and checks
// the sentence endSentence gives for the session_end and exit status it
// produced (and, once runWrap calls explainEnd, that wrap printed it), and
// the session lines aegis log shows for it.
func TestExplainEnds(t *testing.T) {
	// The child's "socket" mode (testdata/child) reads one line, then
	// opens a TCP socket.
	self := childBin
	confineArgs := []string{"--confine", "--allow-exec-support"}
	call := toolsCall("1", "echo") + "\n"
	tests := []struct {
		name    string
		flags   []string
		env     []string
		stdin   string
		argv    []string
		exit    int
		seccomp bool
		// phrases the sentence holds (none: no sentence) and the log's
		// end line holds
		sentence, logEnd []string
	}{
		{name: "normal end", stdin: call, argv: child("echo"), exit: 0,
			logEnd: []string{"client_eof, exit 0; 1 call"}},
		{name: "seccomp kill", flags: append(confineArgs, "--allow-read", filepath.Dir(self)),
			env: []string{"AEGIS_EXPLAIN_CHILD=socket"}, stdin: call, argv: []string{self}, exit: 159, seccomp: true,
			sentence: []string{"killed by --confine's seccomp filter (SIGSYS, exit 159), leaving 1 call unanswered", "network socket", "--allow-net"},
			logEnd:   []string{"killed by SIGSYS (exit 159), a seccomp kill", "1 call, 1 unanswered"}},
		{name: "not found", argv: []string{"aegis-explain-no-such-command"}, exit: 127,
			sentence: []string{`"aegis-explain-no-such-command" could not be started (exit 127)`, "check the command's spelling and PATH"},
			logEnd:   []string{"child_start_failed, exit 127: ", "not found"}},
		{name: "not found under --confine", flags: confineArgs, argv: []string{"/nonexistent/aegis-explain"}, exit: 127,
			sentence: []string{"could not be started (exit 127)", "check the command's spelling and PATH"},
			logEnd:   []string{"child_start_failed, exit 127"}},
		{name: "not executable under --confine", flags: []string{"--confine"}, argv: []string{"/bin/true"}, exit: 126,
			sentence: []string{"could not be started under --confine", "--allow-exec-support"},
			logEnd:   []string{"child_start_failed, exit 126"}},
		{name: "crash", stdin: call, argv: []string{"sh", "-c", "read l; kill -SEGV $$"}, exit: 139,
			sentence: []string{`"sh" crashed with SIGSEGV (exit 139), leaving 1 call unanswered`},
			logEnd:   []string{"killed by SIGSEGV (exit 139)", "1 unanswered"}},
		{name: "killed", stdin: call, argv: []string{"sh", "-c", "read l; kill -KILL $$"}, exit: 137,
			sentence: []string{"killed by SIGKILL (exit 137)"},
			logEnd:   []string{"killed by SIGKILL (exit 137)"}},
		{name: "killed under a shell", stdin: call, argv: []string{"sh", "-c", `read l; sh -c 'kill -KILL $$'; exit $?`}, exit: 137,
			sentence: []string{`"sh" exited with status 137 `, "leaving 1 call unanswered", "137 is 128+9", "SIGKILL", "aegis saw an exit status, not the signal", "dmesg"},
			logEnd:   []string{"exit 137 (128+9, as a shell reports a process SIGKILL killed); 1 call, 1 unanswered"}},
		{name: "non-zero exit", stdin: call, argv: []string{"sh", "-c", "read l; exit 3"}, exit: 3,
			sentence: []string{`"sh" exited with status 3`, "leaving 1 call unanswered", "stderr above"},
			logEnd:   []string{", exit 3; 1 call, 1 unanswered"}},
		{name: "permission denied under --confine", flags: confineArgs, stdin: call,
			argv: []string{"sh", "-c", `read l; echo x > "$0"`, filepath.Join(t.TempDir(), "out")}, exit: 2,
			sentence: []string{"exited with status 2", "under --confine", "Permission denied", "--allow-write"},
			logEnd:   []string{"exit 2"}},
		{name: "frame too large", flags: []string{"--max-frame", "1KiB"}, stdin: toolsCall("1", strings.Repeat("x", 2048)) + "\n",
			argv: child("echo"), exit: 65,
			sentence: []string{"longer than --max-frame", "exit 65"},
			logEnd:   []string{"frame_too_large", "wrap exit 65"}},
	}
	explains := wrapExplains(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			r := runEnd(t, f, tt.flags, tt.env, tt.stdin, tt.argv...)
			if r.exit != tt.exit {
				t.Fatalf("wrap = exit %d; want %d\n%s", r.exit, tt.exit, r.stderr)
			}
			if r.end.SeccompKilled != tt.seccomp {
				t.Errorf("session_end seccomp_killed = %v; want %v", r.end.SeccompKilled, tt.seccomp)
			}
			var prof *confine.Profile
			if len(tt.flags) > 0 && tt.flags[0] == "--confine" {
				prof = &confine.Profile{ExecSupport: len(tt.flags) > 1}
			}
			got := supervise.Ending{Result: supervise.Result{End: *r.end, Exit: r.exit, Err: wrapErr(r.stderr)}, Argv: tt.argv, Confine: prof.Request(), Audit: f.audit}.Sentence()
			// The sentence says no more of the cause than wrap's error
			// line above it.
			if d := r.end.Detail; d != "" && strings.Count(r.stderr, d) > 1 {
				t.Errorf("wrap's stderr says %q %d times:\n%s", d, strings.Count(r.stderr, d), r.stderr)
			}
			rest := got
			for _, w := range tt.sentence {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Errorf("endSentence = %q; want %q in it (in order)", got, w)
					break
				}
				rest = rest[i+len(w):]
			}
			if len(tt.sentence) == 0 && got != "" {
				t.Errorf("endSentence = %q; want none", got)
			}
			if explains && got != "" && !strings.Contains(r.stderr, "aegis: "+got+"\n") {
				t.Errorf("wrap's stderr lacks the sentence %q:\n%s", got, r.stderr)
			}

			// aegis log: the session's start, then its end, whatever the calls.
			sid := r.sid[:8]
			start := strings.Index(r.log, "session "+sid+" started ")
			end := strings.Index(r.log, "session "+sid+" ended ")
			if start < 0 || end < start {
				t.Fatalf("aegis log lacks the session's start and end lines, in that order:\n%s", r.log)
			}
			endLine, _, _ := strings.Cut(r.log[end:], "\n")
			if !strings.HasPrefix(endLine, "session "+sid+" ended ") || !strings.Contains(endLine, ": "+r.end.Reason) {
				t.Errorf("log end line %q; want the reason %q", endLine, r.end.Reason)
			}
			for _, w := range tt.logEnd {
				if !strings.Contains(endLine, w) {
					t.Errorf("log end line %q; want %q in it", endLine, w)
				}
			}
			f.mustVerify(t, exitcode.OK)
		})
	}
}

// TestExplainConfinementRefused: a kernel that cannot enforce the whole
// profile (ABI 3, simulated with the confine package's test hook, and
// --allow-net) refuses: exit 69, the sentence names the cause and the ways
// on, and aegis log shows the session and why it never ran.
func TestExplainConfinementRefused(t *testing.T) {
	t.Parallel()
	capped := cappedAegis(t, 3)
	f := newFixture(t)
	flags := []string{"--confine", "--allow-net", "127.0.0.1:9"}
	r := runEndWith(t, capped, f, flags, nil, "", "true")
	if r.exit != exitcode.Confinement || r.end.Reason != record.EndConfinementRefused {
		t.Fatalf("wrap on ABI 3 with --allow-net = exit %d, %s; want 69, confinement_refused\n%s", r.exit, r.end.Reason, r.stderr)
	}
	got := supervise.Ending{Result: supervise.Result{End: *r.end, Exit: r.exit, Err: wrapErr(r.stderr)}, Argv: []string{"true"}, Confine: &record.ConfineRequest{Net: []string{"127.0.0.1:9"}}}.Sentence()
	if n := strings.Count(r.stderr, "landlock ABI 3 < 4"); n != 1 {
		t.Errorf("wrap's stderr names the cause %d times; want once:\n%s", n, r.stderr)
	}
	for _, w := range []string{"--confine cannot be enforced on this system, so", `"true" was not started (exit 69)`, "--best-effort"} {
		if !strings.Contains(got, w) {
			t.Errorf("endSentence = %q; want %q in it", got, w)
		}
	}
	if wrapExplains(t) && !strings.Contains(r.stderr, "aegis: "+got+"\n") {
		t.Errorf("wrap's stderr lacks the sentence %q:\n%s", got, r.stderr)
	}
	want := "session " + r.sid[:8] + " ended "
	if !strings.Contains(r.log, want) || !strings.Contains(r.log, "confinement_refused, exit 69: tcp ports of --allow-net") {
		t.Errorf("aegis log lacks the refused session's end:\n%s", r.log)
	}
}

// TestExplainInterrupted: a signal to wrap is passed to the child; the
// session's end says so, and log shows reason signal and the child's
// death.
func TestExplainInterrupted(t *testing.T) {
	f := newFixture(t)
	cmd := f.wrapCmd(nil, child("echo")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// An answer read means the child runs: the signal reaches it.
	fmt.Fprintln(stdin, toolsCall("1", "echo"))
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("no answer: %v\n%s", err, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("wrap still runs 30s after SIGTERM")
	}
	stdin.Close()
	code := cmd.ProcessState.ExitCode()
	end := f.sessionEnd(t)
	if code != 128+int(syscall.SIGTERM) || end.Reason != record.EndSignal || end.ExitSignal != "SIGTERM" {
		t.Fatalf("wrap after SIGTERM = exit %d, session_end %+v; want 143, reason signal, SIGTERM\n%s", code, end, stderr.String())
	}
	got := supervise.Ending{Result: supervise.Result{End: *end, Exit: code}, Argv: child("echo")}.Sentence()
	if want := `the session was interrupted: aegis received a signal and passed it on, and the child "env" died of SIGTERM (exit 143)`; !strings.HasPrefix(got, want) {
		t.Errorf("endSentence = %q; want it to begin %q", got, want)
	}
	if wrapExplains(t) && !strings.Contains(stderr.String(), "aegis: "+got+"\n") {
		t.Errorf("wrap's stderr lacks the sentence %q:\n%s", got, stderr.String())
	}
	_, out, _ := runLogCmd(t, f.audit)
	if !strings.Contains(out, ": signal, killed by SIGTERM (exit 143); 1 call") {
		t.Errorf("aegis log lacks the interrupted session's end:\n%s", out)
	}
}

// TestExplainClientGone: a client that closes its end of wrap's stdout
// and its input is told apart from one that closes its input and waits,
// once runWrap calls explainEnd (supervise.ClientGone itself:
// supervise's TestClientGone).
func TestExplainClientGone(t *testing.T) {
	if !wrapExplains(t) {
		// Only wrap can see its stdout; the sentence's part is in
		// supervise's TestEndSentence and TestClientGone.
		return
	}
	f := newFixture(t)
	cmd := f.wrapCmd(nil, child("echo")...)
	stdin, _ := cmd.StdinPipe()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fmt.Fprintln(stdin, toolsCall("1", "echo"))
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	r.Close()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wrap: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "aegis: the client went away") {
		t.Errorf("wrap's stderr lacks the client gone away:\n%s", stderr.String())
	}
}

// TestLogHelpFlags: log --help writes the one-letter -f with one dash.
func TestLogHelpFlags(t *testing.T) {
	code, out, _ := runLogCmd(t, "--help")
	if code != 0 || !strings.Contains(out, "\n  -f\n") || strings.Contains(out, "--f\n") {
		t.Errorf("aegis log --help = exit %d:\n%s\nwant -f, not --f", code, out)
	}
	for _, w := range []string{"  --json\n", "  --tool NAME\n", "pass-through\nmeans no --policy was given"} {
		if !strings.Contains(out, w) {
			t.Errorf("aegis log --help lacks %q:\n%s", w, out)
		}
	}
}
