package supervise

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestEndSentence: every way a session can end, as Result states
// it, gets one sentence naming the cause and the next step, or nothing
// for a normal end.
func TestEndSentence(t *testing.T) {
	argv := []string{"node", "server.js"}
	confined := &record.ConfineRequest{ExecSupport: true}
	netGranted := &record.ConfineRequest{ExecSupport: true, Net: []string{"api.example.com:443"}}
	counts := record.Counts{Intents: 2, Outcomes: 2, Unanswered: 2}
	ioErr := fmt.Errorf("%w: write audit.jsonl: %w", journal.ErrIO, syscall.ENOSPC)
	tests := []struct {
		name string
		e    Ending
		want []string // phrases, in order; none: no sentence
	}{
		{"normal end", Ending{Result: Result{End: record.SessionEnd{Reason: record.EndClientEOF}}}, nil},
		{"child exits 0 on its own", Ending{Result: Result{End: record.SessionEnd{Reason: record.EndChildExit}}}, nil},
		{"interrupted, child exits 0", Ending{Result: Result{End: record.SessionEnd{Reason: record.EndSignal}}}, nil},
		{"seccomp kill, no network granted",
			Ending{Argv: argv, Confine: confined, Result: Result{Exit: 159, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGSYS", SeccompKilled: true, Counts: counts}}},
			[]string{`"node" was killed by --confine's seccomp filter (SIGSYS, exit 159)`, "leaving 2 calls unanswered", "network socket", "--allow-net HOST:PORT or --allow-udp", "cannot say which system call"}},
		{"seccomp kill, network granted",
			Ending{Argv: argv, Confine: netGranted, Result: Result{Exit: 159, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSYS", SeccompKilled: true}}},
			[]string{"seccomp filter", "neither unix, TCP nor UDP", "32-bit system call"}},
		{"SIGSYS without a filter",
			Ending{Argv: argv, Result: Result{Exit: 159, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSYS"}}},
			[]string{"died of SIGSYS (exit 159)", "no seccomp filter"}},
		{"not found",
			Ending{Argv: []string{"nosuch"}, Result: Result{Exit: 127, End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 127, Detail: `exec: "nosuch": executable file not found in $PATH`}}},
			[]string{`"nosuch" could not be started (exec`, "not found in $PATH) (exit 127)", "check the command's spelling and PATH"}},
		{"not found, said above",
			Ending{Argv: []string{"nosuch"}, Result: Result{Exit: 127, Err: errors.New(`cannot start "nosuch"`), End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 127, Detail: `exec: "nosuch": executable file not found in $PATH`}}},
			[]string{`"nosuch" could not be started (exit 127), so nothing was relayed`, "check the command's spelling and PATH"}},
		{"not executable",
			Ending{Argv: []string{"./x"}, Result: Result{Exit: 126, End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 126, Detail: "fork/exec ./x: permission denied"}}},
			[]string{`"./x" exists but could not be executed`, "(exit 126)", "chmod +x"}},
		{"confined exec refused",
			Ending{Argv: []string{"/bin/true"}, Confine: &record.ConfineRequest{}, Result: Result{Exit: 126, End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 126, Detail: "exec /usr/bin/true: permission denied"}}},
			[]string{"could not be started under --confine", "(exit 126)", "--allow-read, --allow-write, --allow-net or --allow-exec-support", "aegis wrap --help"}},
		{"confinement refused",
			Ending{Argv: argv, Confine: netGranted, Result: Result{Exit: 69, End: record.SessionEnd{Reason: record.EndConfinementRefused, ExitCode: 69, Detail: "tcp ports of --allow-net: not enforced (landlock ABI 3 < 4)"}}},
			[]string{"--confine cannot be enforced on this system (tcp ports", "was not started (exit 69)", "--best-effort", "leave out --confine"}},
		{"confinement refused, said above",
			Ending{Argv: argv, Confine: netGranted, Result: Result{Exit: 69, Err: errors.New("confinement refused"), End: record.SessionEnd{Reason: record.EndConfinementRefused, ExitCode: 69, Detail: "tcp ports of --allow-net: not enforced (landlock ABI 3 < 4)"}}},
			[]string{"--confine cannot be enforced on this system, so", "was not started (exit 69)", "--best-effort", "leave out --confine"}},
		{"crash",
			Ending{Argv: argv, Result: Result{Exit: 139, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSEGV", Counts: counts}}},
			[]string{`"node" crashed with SIGSEGV (exit 139)`, "leaving 2 calls unanswered", "not in aegis"}},
		{"crash under --confine",
			Ending{Argv: argv, Confine: confined, Result: Result{Exit: 134, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGABRT"}}},
			[]string{"crashed with SIGABRT (exit 134)", "--allow-exec-support"}},
		{"killed",
			Ending{Argv: argv, Result: Result{Exit: 137, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGKILL"}}},
			[]string{"killed by SIGKILL (exit 137)", "out-of-memory", "dmesg"}},
		{"not stopping at stdin EOF",
			Ending{Argv: argv, Result: Result{Exit: 143, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGTERM"}}},
			[]string{"killed by SIGTERM (exit 143) after the client closed its input", "not exited within --grace", "give it longer with --grace"}},
		{"not stopping at SIGTERM",
			Ending{Argv: argv, Result: Result{Exit: 137, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGKILL"}}},
			[]string{"killed by SIGKILL (exit 137) after the client closed its input", "within --grace of SIGTERM", "out-of-memory", "dmesg"}},
		{"interrupted",
			Ending{Argv: argv, Result: Result{Exit: 130, End: record.SessionEnd{Reason: record.EndSignal, ExitSignal: "SIGINT"}}},
			[]string{"interrupted", "died of SIGINT (exit 130)", "on purpose"}},
		{"other signal",
			Ending{Argv: argv, Result: Result{Exit: 138, End: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGUSR1"}}},
			[]string{"killed by SIGUSR1 (exit 138)", "another process"}},
		{"non-zero exit on its own",
			Ending{Argv: argv, Result: Result{Exit: 3, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 3}}},
			[]string{`"node" exited with status 3 on its own`, "stderr above"}},
		{"a file the command needs outside every grant",
			Ending{Argv: argv, Confine: confined, Result: Result{Exit: 69, Err: grantsErr{"--allow-read /srv", "--allow-exec-support"}, End: record.SessionEnd{Reason: record.EndConfinementRefused, Detail: "x"}}},
			[]string{`"node" was not started (exit 69)`, "grants do not cover", "add --allow-read /srv --allow-exec-support", "--print-profile"}},
		{"a shell's or npx's 128+9",
			Ending{Argv: []string{"npx", "-y", "server"}, Result: Result{Exit: 137, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 137}}},
			[]string{`"npx" exited with status 137 on its own`, "137 is 128+9", "died of SIGKILL", "aegis saw an exit status, not the signal", "out-of-memory", "dmesg"}},
		{"a shell's 128+11 after EOF",
			Ending{Argv: []string{"sh"}, Result: Result{Exit: 139, End: record.SessionEnd{Reason: record.EndClientEOF, ExitCode: 139, Counts: counts}}},
			[]string{"status 139 after the client closed its input, leaving 2 calls unanswered", "128+11", "SIGSEGV", "fault in the server"}},
		{"a shell's 128+31 under --confine",
			Ending{Argv: argv, Confine: confined, Result: Result{Exit: 159, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 159}}},
			[]string{"status 159", "128+31", "SIGSYS", "seccomp filter", "--allow-net"}},
		{"a shell's 128+15",
			Ending{Argv: argv, Result: Result{Exit: 143, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 143}}},
			[]string{"status 143", "128+15", "SIGTERM", "another process or the program itself"}},
		{"non-zero exit after EOF",
			Ending{Argv: argv, Result: Result{Exit: 1, End: record.SessionEnd{Reason: record.EndClientEOF, ExitCode: 1}}},
			[]string{"exited with status 1 after the client closed its input"}},
		{"a shell's command not found",
			Ending{Argv: []string{"sh"}, Result: Result{Exit: 127, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 127}}},
			[]string{"status 127", "cannot find"}},
		{"non-zero exit under --confine",
			Ending{Argv: argv, Confine: confined, Result: Result{Exit: 1, End: record.SessionEnd{Reason: record.EndChildExit, ExitCode: 1}}},
			[]string{"status 1", "under --confine", "Permission denied", "--allow-read, --allow-write, --allow-net or --allow-exec-support", "aegis wrap --help"}},
		{"audit I/O",
			Ending{Audit: "/var/log/a.jsonl", Result: Result{Exit: 74, Err: ioErr, End: record.SessionEnd{Reason: record.EndAuditIOError}}},
			[]string{"/var/log/a.jsonl could not be written (the disk is full)", "exit 74", "aegis verify"}},
		{"audit I/O at close",
			Ending{Audit: "a.jsonl", CloseErr: fmt.Errorf("%w: sync: %w", journal.ErrIO, syscall.EIO), Result: Result{End: record.SessionEnd{Reason: record.EndClientEOF}}},
			[]string{"a.jsonl could not be written (an I/O error: ", "exit 74"}},
		{"frame too large",
			Ending{Argv: argv, Result: Result{Exit: 65, Err: relay.ErrFrameTooLarge, End: record.SessionEnd{Reason: record.EndFrameTooLarge, Detail: relay.ErrFrameTooLarge.Error()}}},
			[]string{"longer than --max-frame", "exit 65", "raise --max-frame"}},
		{"client gone",
			Ending{Argv: argv, ClientGone: true, Result: Result{End: record.SessionEnd{Reason: record.EndClientEOF}}},
			[]string{"the client went away", "client's own log"}},
		{"client gone, child stopped",
			Ending{Argv: argv, ClientGone: true, Result: Result{Exit: 143, End: record.SessionEnd{Reason: record.EndClientEOF, ExitSignal: "SIGTERM"}}},
			[]string{"killed by SIGTERM"}},
	}
	for _, tt := range tests {
		got := tt.e.Sentence()
		if len(tt.want) == 0 {
			if got != "" {
				t.Errorf("%s: Sentence = %q; want none", tt.name, got)
			}
			continue
		}
		rest := got
		for _, w := range tt.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: Sentence = %q; want %q in it (in order)", tt.name, got, w)
				break
			}
			rest = rest[i+len(w):]
		}
		// One sentence: no line break, and no full stop inside it.
		if strings.ContainsAny(got, "\n") || strings.Contains(got, ". ") || strings.HasSuffix(got, ".") {
			t.Errorf("%s: Sentence = %q; want one sentence on one line", tt.name, got)
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
	if ClientGone(w) {
		t.Errorf("ClientGone(pipe with its reader) = true; want false")
	}
	r.Close()
	if !ClientGone(w) {
		t.Errorf("ClientGone(pipe whose reader closed) = false; want true")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close()
	if ClientGone(ours) {
		t.Errorf("ClientGone(socket with its peer) = true; want false")
	}
	theirs.Close()
	if !ClientGone(ours) {
		t.Errorf("ClientGone(socket whose peer closed) = false; want true")
	}
}

// TestSummary: aegis log's words for a session_end.
func TestSummary(t *testing.T) {
	tests := []struct {
		name string
		end  record.SessionEnd
		want string
	}{
		{"normal", record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 1}}, "client_eof, exit 0; 1 call"},
		{"signal", record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGKILL", Counts: record.Counts{Intents: 3, Unanswered: 2, Refused: 1, Anomalies: 1}},
			"child_exit, killed by SIGKILL (exit 137); 3 calls, 2 unanswered, 1 refused, 1 anomaly"},
		{"seccomp", record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSYS", SeccompKilled: true, Counts: record.Counts{Anomalies: 2}},
			"child_exit, killed by SIGSYS (exit 159), a seccomp kill (--confine's filter refused a system call, unless the SIGSYS was sent); 0 calls, 2 anomalies"},
		{"frame too large", record.SessionEnd{Reason: record.EndFrameTooLarge}, "frame_too_large, exit 0; wrap exit 65: a message longer than --max-frame; 0 calls"},
		{"audit I/O", record.SessionEnd{Reason: record.EndAuditIOError, ExitCode: 1}, "audit_io_error, exit 1; wrap exit 74: the audit log could not be written; 0 calls"},
		{"not started", record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: 127, Detail: "not found"}, "child_start_failed, exit 127: not found; 0 calls"},
		{"a shell's signal", record.SessionEnd{Reason: record.EndChildExit, ExitCode: 137, Counts: record.Counts{Intents: 1}},
			"child_exit, exit 137 (128+9, as a shell reports a process SIGKILL killed); 1 call"},
		{"past every signal", record.SessionEnd{Reason: record.EndChildExit, ExitCode: 200}, "child_exit, exit 200; 0 calls"},
	}
	for _, tt := range tests {
		if got := Summary(&tt.end); got != tt.want {
			t.Errorf("%s: Summary = %q; want %q", tt.name, got, tt.want)
		}
	}
}

// TestShellSignal: 128+N is signal N's name for every N a signal has,
// and nothing for any other exit status.
func TestShellSignal(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{0, ""}, {1, ""}, {127, ""}, {128, ""},
		{129, "SIGHUP"}, {130, "SIGINT"}, {137, "SIGKILL"}, {139, "SIGSEGV"}, {143, "SIGTERM"}, {159, "SIGSYS"},
		{128 + 64, ""}, {200, ""}, {255, ""}, {-1, ""},
	}
	for _, tt := range tests {
		if got := shellSignal(tt.code); got != tt.want {
			t.Errorf("shellSignal(%d) = %q; want %q", tt.code, got, tt.want)
		}
	}
}

// grantsErr is a launcher's refusal that names the grants missing, as
// internal/confine's ReachError does.
type grantsErr []string

func (g grantsErr) Error() string    { return "outside every grant" }
func (g grantsErr) Grants() []string { return g }
