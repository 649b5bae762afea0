package supervise

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// Ending is what wrap knows once a session has ended: all that Sentence
// explains.
type Ending struct {
	Result   Result
	CloseErr error                  // what closing the journal returned
	Argv     []string               // the child's argv
	Confine  *record.ConfineRequest // session_start's confine; nil without --confine
	Audit    string                 // the audit log's path
	// ClientGone: the client closed its end of wrap's stdout before the
	// session ended (ClientGone).
	ClientGone bool
}

// ClientGone reports whether the reader of f (the client's end of wrap's
// stdout) has gone: a pipe whose reader closed polls POLLERR, a socket
// whose peer closed POLLHUP. A terminal, a file or a reader still there
// reports neither.
func ClientGone(f *os.File) bool {
	fds := []unix.PollFd{{Fd: int32(f.Fd())}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
}

// The grants a confined child may lack, named in every sentence that
// points at them.
const grantsHint = "grant what it needs with --allow-read, --allow-write, --allow-net or --allow-exec-support (see 'aegis wrap --help')"

// Sentence returns one plain sentence, for someone who has never read
// the record format, naming why the session ended and the next step; ""
// for a normal end (the child exited 0, after the client closed its
// input or on its own). The session_end record (e.Result.End) is the
// source, with wrap's own error for what the record does not hold.
func (e Ending) Sentence() string {
	res, end := e.Result, e.Result.End
	confined := e.Confine != nil
	name := "the child"
	if len(e.Argv) > 0 {
		name = fmt.Sprintf("the child %q", e.Argv[0])
	}
	status := fmt.Sprintf(" (exit %d)", res.Exit)
	// why is the record's detail of a start that failed, unless wrap's
	// error line above the sentence says it already.
	why := ""
	if res.Err == nil && end.Detail != "" {
		why = " (" + end.Detail + ")"
	}
	switch {
	case errors.Is(res.Err, journal.ErrIO) || errors.Is(e.CloseErr, journal.ErrIO) || end.Reason == record.EndAuditIOError:
		err := res.Err
		if !errors.Is(err, journal.ErrIO) {
			err = e.CloseErr
		}
		var ioErr *journal.IOError
		if errors.As(err, &ioErr) && strings.HasPrefix(ioErr.Op, "sign ") {
			return fmt.Sprintf("the signing key could not %s (%v), so aegis stopped relaying and ended the child rather than let a call go unrecorded (exit %d); with --signing-key ssh-agent:…, start the agent again and add the key (ssh-add), then check the log with 'aegis verify', which will find this session without its session_end",
				ioErr.Op, ioErr.Err, exitcode.AuditIO)
		}
		return fmt.Sprintf("the audit log %s could not be written (%s), so aegis stopped relaying and ended the child rather than let a call go unrecorded (exit %d); free space or fix the disk, then check the log with 'aegis verify', which will find this session without its session_end",
			e.Audit, ioCause(err), exitcode.AuditIO)

	case end.Reason == record.EndFrameTooLarge:
		return fmt.Sprintf("a message longer than --max-frame came from the client or the child, so aegis ended the session without relaying any of it (exit %d); if the server or the client really sends messages that large, raise --max-frame (default 64MiB)",
			exitcode.FrameTooLarge)

	case end.Reason == record.EndConfinementRefused && len(missingGrants(res.Err)) > 0:
		return fmt.Sprintf("%s was not started (exit %d): it needs files to start that --confine's grants do not cover; add %s (--print-profile shows what a profile grants)",
			name, res.Exit, strings.Join(missingGrants(res.Err), " "))

	case end.Reason == record.EndConfinementRefused:
		return fmt.Sprintf("--confine cannot be enforced on this system%s, so %s was not started (exit %d); run it on a Linux kernel with Landlock enabled (ABI 3 or newer, 4 for --allow-net), add --best-effort to run with what this kernel can enforce (the log records what was dropped), or leave out --confine",
			why, name, res.Exit)

	case end.Reason == record.EndChildStartFailed:
		switch {
		case res.Exit == exitcode.CannotStart || strings.Contains(end.Detail, "not found") || strings.Contains(end.Detail, "no such file"):
			return fmt.Sprintf("%s could not be started%s (exit %d), so nothing was relayed; check the command's spelling and PATH, or give its full path",
				name, why, res.Exit)
		case confined:
			more := ", and a dynamically linked program or a script needs --allow-exec-support"
			if strings.Contains(end.Detail, "--allow-exec-support") {
				more = ""
			}
			return fmt.Sprintf("%s could not be started under --confine%s (exit %d); %s%s",
				name, why, res.Exit, grantsHint, more)
		}
		return fmt.Sprintf("%s exists but could not be executed: %s (exit %d), so nothing was relayed; check that it is a program or a script with execute permission (chmod +x), on a file system that allows running programs",
			name, end.Detail, res.Exit)

	case end.SeccompKilled:
		// The filter kills only socket(2) and socketpair(2) of the
		// families it refuses, and system calls made through another
		// architecture's entry point (internal/confine/filter_linux.go).
		what := "most likely for opening a network socket, which the filter refuses without --allow-net or --allow-udp: grant the network it needs with --allow-net HOST:PORT or --allow-udp"
		if e.Confine != nil && (len(e.Confine.Net) > 0 || e.Confine.UDP) {
			what = "most likely for opening a socket that is neither unix, TCP nor UDP (a packet or other raw socket), or for a 32-bit system call, which the filter refuses whatever is granted"
		}
		return fmt.Sprintf("%s was killed by --confine's seccomp filter (SIGSYS, exit %d)%s, %s (the exit status cannot say which system call it was, nor rule out a SIGSYS sent to it)",
			name, res.Exit, unanswered(end.Counts), what)

	case end.ExitSignal != "":
		return e.signalSentence(name, status)

	case end.ExitCode != 0:
		return e.exitSentence(name)

	case e.ClientGone && end.Reason == record.EndClientEOF:
		return "the client went away (it closed its end of aegis's output) before the session ended, so aegis closed the child's input and the child exited; if the client did not mean to stop, look at the client's own log"
	}
	return ""
}

// signalSentence explains a child that died of a signal other than a
// seccomp kill.
func (e Ending) signalSentence(name, status string) string {
	end := e.Result.End
	sig := end.ExitSignal
	left := unanswered(end.Counts)
	switch {
	case end.Reason == record.EndSignal:
		return fmt.Sprintf("the session was interrupted: aegis received a signal and passed it on, and %s died of %s%s%s; nothing to do if it was stopped on purpose",
			name, sig, status, left)
	case sig == "SIGSYS":
		return fmt.Sprintf("%s died of SIGSYS%s%s with no seccomp filter of aegis's applied: it, or another process, sent the signal, or the kernel refused a system call it made; its stderr above may say which",
			name, status, left)
	// After the client's EOF the session itself sends SIGTERM, then
	// SIGKILL, to a child that does not exit (doc.go, "Lifecycle"); the
	// record cannot tell its signal from another process's.
	case end.Reason == record.EndClientEOF && sig == "SIGTERM":
		return fmt.Sprintf("%s was killed by SIGTERM%s%s after the client closed its input: aegis sends it when the child has not exited within --grace of its stdin closing (or another process sent it); a server should exit when its stdin closes, or give it longer with --grace",
			name, status, left)
	case end.Reason == record.EndClientEOF && sig == "SIGKILL":
		return fmt.Sprintf("%s was killed by SIGKILL%s%s after the client closed its input: aegis sends it when the child has not exited within --grace of SIGTERM, or another process or the kernel's out-of-memory killer sent it; a server should exit when its stdin closes, and 'dmesg' shows an OOM kill",
			name, status, left)
	case crashSignal(sig):
		return fmt.Sprintf("%s crashed with %s%s%s; %s", name, sig, status, left, signalHint(sig, e.Confine != nil))
	case sig == "SIGKILL":
		return fmt.Sprintf("%s was killed by SIGKILL%s%s while the session ran: %s", name, status, left, signalHint(sig, false))
	}
	return fmt.Sprintf("%s was killed by %s%s%s: %s", name, sig, status, left, signalHint(sig, false))
}

// exitSentence explains a child that exited with a status other than 0.
func (e Ending) exitSentence(name string) string {
	end := e.Result.End
	left := unanswered(end.Counts)
	code := end.ExitCode
	when := "after the client closed its input"
	if end.Reason == record.EndChildExit {
		when = "on its own while the client was still connected"
	}
	if sig := shellSignal(code); sig != "" {
		return fmt.Sprintf("%s exited with status %d %s%s: %d is 128+%d, how a shell or npx reports a process it ran that died of %s, so a process %s started probably died of %s (aegis saw an exit status, not the signal); %s",
			name, code, when, left, code, code-128, sig, name, sig, signalHint(sig, e.Confine != nil))
	}
	switch {
	case e.Confine != nil:
		return fmt.Sprintf("%s exited with status %d under --confine, %s%s; if its stderr above shows permission errors (EACCES, EPERM, \"Permission denied\", \"Operation not permitted\"), the confinement refused something it needs: %s",
			name, code, when, left, grantsHint)
	case code == exitcode.CannotStart || code == exitcode.CannotExec:
		return fmt.Sprintf("%s exited with status %d %s%s, which a shell returns for a command it cannot find (127) or run (126); check the command it runs, which its stderr above should name",
			name, code, when, left)
	}
	return fmt.Sprintf("%s exited with status %d %s%s; its stderr above should say why", name, code, when, left)
}

// missingGrants are the grants a launcher's refusal names as missing: the
// command needs files to start that no grant covers (internal/confine's
// ReachError, which this package does not import).
func missingGrants(err error) []string {
	var g interface{ Grants() []string }
	if errors.As(err, &g) {
		return g.Grants()
	}
	return nil
}

// shellSignal is the name of signal N when code is 128+N, as a shell
// (and npx, which runs a package's program through one) reports a
// process it ran that a signal killed; "" for any other code, and for a
// signal number without a name.
func shellSignal(code int) string {
	if code <= 128 || code > 128+64 {
		return ""
	}
	return unix.SignalName(syscall.Signal(code - 128))
}

// signalHint is the next step for a process that died of sig, where
// aegis knows only that some process under the child did: who sends sig,
// and where to look.
func signalHint(sig string, confined bool) string {
	switch {
	case sig == "SIGSYS" && confined:
		return "most likely --confine's seccomp filter killed it for a system call it refuses (a network socket without --allow-net or --allow-udp, a raw socket, a 32-bit system call); " + grantsHint
	case sig == "SIGKILL":
		return "another process or the kernel's out-of-memory killer sent it; look for an OOM kill in 'dmesg' or 'journalctl -k'"
	case crashSignal(sig):
		hint := "this is a fault in the server, not in aegis: its stderr above may say more"
		if confined {
			hint += ", and if it aborted on a file or socket that --confine refused, " + grantsHint
		}
		return hint
	}
	return "another process or the program itself sent it; its stderr above may say more"
}

// crashSignal reports whether a death by sig is the process's own fault
// (a bad memory access, an illegal instruction, an abort).
func crashSignal(sig string) bool {
	switch sig {
	case "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGTRAP":
		return true
	}
	return false
}

// unanswered is ", leaving N calls unanswered" when the session ended
// with calls in flight.
func unanswered(c record.Counts) string {
	switch c.Unanswered {
	case 0:
		return ""
	case 1:
		return ", leaving 1 call unanswered"
	}
	return ", leaving " + strconv.FormatUint(c.Unanswered, 10) + " calls unanswered"
}

// ioCause names an audit write failure in plain words.
func ioCause(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "the disk is full"
	case errors.Is(err, syscall.EDQUOT):
		return "the disk quota is used up"
	case errors.Is(err, syscall.EROFS):
		return "the file system is read-only"
	case errors.Is(err, syscall.EFBIG):
		return "the file is larger than the file system allows"
	case err == nil:
		return "an I/O error"
	}
	return "an I/O error: " + err.Error()
}

// Summary is the session_end record in a few words, for aegis log:
// the reason, the exit status wrap gave (the child's, 128+N for signal
// N, or wrap's own failure's), a seccomp kill, and the detail of a
// session whose child never ran.
func Summary(end *record.SessionEnd) string {
	var b strings.Builder
	b.WriteString(end.Reason)
	switch {
	case end.ExitSignal != "":
		fmt.Fprintf(&b, ", killed by %s", end.ExitSignal)
		if n := unix.SignalNum(end.ExitSignal); n != 0 {
			fmt.Fprintf(&b, " (exit %d)", 128+int(n))
		}
	default:
		fmt.Fprintf(&b, ", exit %d", end.ExitCode)
		if sig := shellSignal(end.ExitCode); sig != "" {
			fmt.Fprintf(&b, " (128+%d, as a shell reports a process %s killed)", end.ExitCode-128, sig)
		}
	}
	if end.SeccompKilled {
		b.WriteString(", a seccomp kill (--confine's filter refused a system call, unless the SIGSYS was sent)")
	}
	switch end.Reason {
	case record.EndFrameTooLarge:
		fmt.Fprintf(&b, "; wrap exit %d: a message longer than --max-frame", exitcode.FrameTooLarge)
	case record.EndAuditIOError:
		fmt.Fprintf(&b, "; wrap exit %d: the audit log could not be written", exitcode.AuditIO)
	case record.EndChildStartFailed, record.EndConfinementRefused:
		if end.Detail != "" {
			b.WriteString(": " + end.Detail)
		}
	}
	c := end.Counts
	switch c.Intents {
	case 1:
		b.WriteString("; 1 call")
	default:
		fmt.Fprintf(&b, "; %d calls", c.Intents)
	}
	if c.Unanswered > 0 {
		fmt.Fprintf(&b, ", %d unanswered", c.Unanswered)
	}
	if c.Refused > 0 {
		fmt.Fprintf(&b, ", %d refused", c.Refused)
	}
	switch {
	case c.Anomalies == 1:
		b.WriteString(", 1 anomaly")
	case c.Anomalies > 1:
		fmt.Fprintf(&b, ", %d anomalies", c.Anomalies)
	}
	return b.String()
}
