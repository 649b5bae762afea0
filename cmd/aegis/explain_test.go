package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/confine"
	"github.com/aegisrelay/aegis/exitcode"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/relay"
	"github.com/aegisrelay/aegis/supervise"
)

// The explain tests' child is the test binary with AEGIS_EXPLAIN_CHILD
// set: "socket" reads one line, then opens a TCP socket, which
// --confine's seccomp filter kills it for when no network is granted.
func init() {
	if os.Getenv("AEGIS_EXPLAIN_CHILD") == "socket" {
		bufio.NewReader(os.Stdin).ReadString('\n')
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		fmt.Fprintf(os.Stderr, "socket: fd %d, %v\n", fd, err)
		os.Exit(0)
	}
}

// wrapExplains reports whether runWrap calls explainEnd, which decides
// whether wrap's stderr must hold the sentence endSentence gives.
func wrapExplains(t *testing.T) bool {
	src, err := os.ReadFile("wrap.go")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(src, []byte("explainEnd("))
}

// TestEndSentence: every way a session can end, as relay.Result states
// it, gets one sentence naming the cause and the next step, or nothing
// for a normal end.
func TestEndSentence(t *testing.T) {
	argv := []string{"node", "server.js"}
	confined := &confine.Profile{ExecSupport: true}
	netGranted := &confine.Profile{ExecSupport: true, Net: []string{"api.example.com:443"}}
	counts := record.Counts{Intents: 2, Outcomes: 2, Unanswered: 2}
	ioErr := fmt.Errorf("%w: write audit.jsonl: %w", journal.ErrIO, syscall.ENOSPC)
	tests := []struct {
		name string
		e    wrapEnd
		want []string // phrases, in order; none: no sentence
	}{
		{"normal end", wrapEnd{Result: supervise.Result{End: record.SessionEnd{Reason: record.EndClientEOF}}}, nil},
		{"child exits 0 on its own", wrapEnd{Result: supervise.Result{End: record.SessionEnd{Reason: record.EndChildExit}}}, nil},
		{"interrupted, child exits 0", wrapEnd{Result: supervise.Result{End: record.SessionEnd{Reason: record.EndSignal}}}, nil},
		{"seccomp kill, no network granted",
			wrapEnd{Argv: argv, Confine: confined, Result: supervise.Result{Exit: 159, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGSYS", SeccompKilled: true, Counts: counts}}},
			[]string{`"node" was killed by --confine's seccomp filter (SIGSYS, exit 159)`, "leaving 2 calls unanswered", "network socket", "--allow-net HOST:PORT or --allow-udp", "cannot say which system call"}},
		{"seccomp kill, network granted",
			wrapEnd{Argv: argv, Confine: netGranted, Result: supervise.Result{Exit: 159, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSYS", SeccompKilled: true}}},
			[]string{"seccomp filter", "neither unix, TCP nor UDP", "32-bit system call"}},
		{"SIGSYS without a filter",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 159, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSYS"}}},
			[]string{"died of SIGSYS (exit 159)", "no seccomp filter"}},
		{"not found",
			wrapEnd{Argv: []string{"nosuch"}, Result: supervise.Result{Exit: 127, End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 127, Detail: `exec: "nosuch": executable file not found in $PATH`}}},
			[]string{`"nosuch" could not be started`, "not found in $PATH (exit 127)", "check the command after --"}},
		{"not executable",
			wrapEnd{Argv: []string{"./x"}, Result: supervise.Result{Exit: 126, End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 126, Detail: "fork/exec ./x: permission denied"}}},
			[]string{`"./x" exists but could not be executed`, "(exit 126)", "chmod +x"}},
		{"confined exec refused",
			wrapEnd{Argv: []string{"/bin/true"}, Confine: &confine.Profile{}, Result: supervise.Result{Exit: 126, End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 126, Detail: "exec /usr/bin/true: permission denied"}}},
			[]string{"could not be started under --confine", "(exit 126)", "--allow-read, --allow-write, --allow-net or --allow-exec-support", "aegis wrap --help"}},
		{"confinement refused",
			wrapEnd{Argv: argv, Confine: netGranted, Result: supervise.Result{Exit: 69, End: record.SessionEnd{Reason: record.EndConfinementRefused, ExitCode: 69, Detail: "tcp ports of --allow-net: not enforced (landlock ABI 3 < 4)"}}},
			[]string{"--confine cannot be enforced on this system (tcp ports", "was not started (exit 69)", "--best-effort", "leave out --confine"}},
		{"crash",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 139, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSEGV", Counts: counts}}},
			[]string{`"node" crashed with SIGSEGV (exit 139)`, "leaving 2 calls unanswered", "not in aegis"}},
		{"crash under --confine",
			wrapEnd{Argv: argv, Confine: confined, Result: supervise.Result{Exit: 134, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGABRT"}}},
			[]string{"crashed with SIGABRT (exit 134)", "--allow-exec-support"}},
		{"killed",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 137, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGKILL"}}},
			[]string{"killed by SIGKILL (exit 137)", "out-of-memory", "dmesg"}},
		{"not stopping at stdin EOF",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 143, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGTERM"}}},
			[]string{"killed by SIGTERM (exit 143) after the client closed its input", "not exited within --grace", "give it longer with --grace"}},
		{"not stopping at SIGTERM",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 137, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGKILL"}}},
			[]string{"killed by SIGKILL (exit 137) after the client closed its input", "within --grace of SIGTERM", "out-of-memory", "dmesg"}},
		{"interrupted",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 130, End: record.SessionEnd{Reason: record.EndSignal, ExitSignal: "SIGINT"}}},
			[]string{"interrupted", "died of SIGINT (exit 130)", "on purpose"}},
		{"other signal",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 138, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGUSR1"}}},
			[]string{"killed by SIGUSR1 (exit 138)", "another process"}},
		{"non-zero exit on its own",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 3, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 3}}},
			[]string{`"node" exited with status 3 on its own`, "stderr above"}},
		{"non-zero exit after EOF",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 1, End: record.SessionEnd{Reason: record.EndClientEOF, ExitCode: 1}}},
			[]string{"exited with status 1 after the client closed its input"}},
		{"a shell's command not found",
			wrapEnd{Argv: []string{"sh"}, Result: supervise.Result{Exit: 127, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 127}}},
			[]string{"status 127", "cannot find"}},
		{"non-zero exit under --confine",
			wrapEnd{Argv: argv, Confine: confined, Result: supervise.Result{Exit: 1, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 1}}},
			[]string{"status 1", "under --confine", "Permission denied", "--allow-read, --allow-write, --allow-net or --allow-exec-support", "aegis wrap --help"}},
		{"audit I/O",
			wrapEnd{Audit: "/var/log/a.jsonl", Result: supervise.Result{Exit: 74, Err: ioErr, End: record.SessionEnd{Reason: record.EndAuditIOError}}},
			[]string{"/var/log/a.jsonl could not be written (the disk is full)", "exit 74", "aegis verify"}},
		{"audit I/O at close",
			wrapEnd{Audit: "a.jsonl", CloseErr: fmt.Errorf("%w: sync: %w", journal.ErrIO, syscall.EIO), Result: supervise.Result{End: record.SessionEnd{Reason: record.EndClientEOF}}},
			[]string{"a.jsonl could not be written (an I/O error: ", "exit 74"}},
		{"frame too large",
			wrapEnd{Argv: argv, Result: supervise.Result{Exit: 65, Err: relay.ErrFrameTooLarge, End: record.SessionEnd{Reason: record.EndFrameTooLarge, Detail: relay.ErrFrameTooLarge.Error()}}},
			[]string{"longer than --max-frame", "exit 65", "raise --max-frame"}},
		{"client gone",
			wrapEnd{Argv: argv, ClientGone: true, Result: supervise.Result{End: record.SessionEnd{Reason: record.EndClientEOF}}},
			[]string{"the client went away", "client's own log"}},
		{"client gone, child stopped",
			wrapEnd{Argv: argv, ClientGone: true, Result: supervise.Result{Exit: 143, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGTERM"}}},
			[]string{"killed by SIGTERM"}},
	}
	for _, tt := range tests {
		got := endSentence(tt.e)
		if len(tt.want) == 0 {
			if got != "" {
				t.Errorf("%s: endSentence = %q; want none", tt.name, got)
			}
			continue
		}
		rest := got
		for _, w := range tt.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: endSentence = %q; want %q in it (in order)", tt.name, got, w)
				break
			}
			rest = rest[i+len(w):]
		}
		// One sentence: no line break, and no full stop inside it.
		if strings.ContainsAny(got, "\n") || strings.Contains(got, ". ") || strings.HasSuffix(got, ".") {
			t.Errorf("%s: endSentence = %q; want one sentence on one line", tt.name, got)
		}
	}
}

// TestClientGone: the client's end of wrap's stdout is seen closed, for a
// pipe and for a socket (Node starts children on socket pairs), and not
// while the client still holds it.
func TestClientGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if clientGone(w) {
		t.Errorf("clientGone(pipe with its reader) = true; want false")
	}
	r.Close()
	if !clientGone(w) {
		t.Errorf("clientGone(pipe whose reader closed) = false; want true")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close()
	if clientGone(ours) {
		t.Errorf("clientGone(socket with its peer) = true; want false")
	}
	theirs.Close()
	if !clientGone(ours) {
		t.Errorf("clientGone(socket whose peer closed) = false; want true")
	}
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
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
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
			sentence: []string{`"aegis-explain-no-such-command" could not be started`, "(exit 127)", "check the command after --"},
			logEnd:   []string{"child_start_failed, exit 127: ", "not found"}},
		{name: "not found under --confine", flags: confineArgs, argv: []string{"/nonexistent/aegis-explain"}, exit: 127,
			sentence: []string{"could not be started", "no such file", "check the command after --"},
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
			got := endSentence(wrapEnd{Result: supervise.Result{End: *r.end, Exit: r.exit}, Argv: tt.argv, Confine: prof, Audit: f.audit})
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
	capped := cappedAegis(t, 3)
	f := newFixture(t)
	flags := []string{"--confine", "--allow-net", "127.0.0.1:9"}
	r := runEndWith(t, capped, f, flags, nil, "", "true")
	if r.exit != exitcode.Confinement || r.end.Reason != record.EndConfinementRefused {
		t.Fatalf("wrap on ABI 3 with --allow-net = exit %d, %s; want 69, confinement_refused\n%s", r.exit, r.end.Reason, r.stderr)
	}
	got := endSentence(wrapEnd{Result: supervise.Result{End: *r.end, Exit: r.exit}, Argv: []string{"true"}, Confine: &confine.Profile{Net: []string{"127.0.0.1:9"}}})
	for _, w := range []string{"--confine cannot be enforced on this system (", "landlock ABI 3 < 4", `"true" was not started (exit 69)`, "--best-effort"} {
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
	got := endSentence(wrapEnd{Result: supervise.Result{End: *end, Exit: code}, Argv: child("echo")})
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
// once runWrap calls explainEnd (clientGone itself: TestClientGone).
func TestExplainClientGone(t *testing.T) {
	if !wrapExplains(t) {
		// Only wrap can see its stdout; endSentence's part is in
		// TestEndSentence and clientGone's in TestClientGone.
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
