package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/exitcode"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/supervise"
)

// explainEnd prints on stderr, prefixed aegis:, the one sentence that
// says why a session ended abnormally and what to do next
// (supervise.Ending.Sentence); a normal end prints nothing. runWrap calls
// it once the journal is closed, so that the sentence is about the whole
// session, the journal's last write included.
func explainEnd(e supervise.Ending) {
	e.ClientGone = supervise.ClientGone(os.Stdout)
	if s := e.Sentence(); s != "" {
		fmt.Fprintln(os.Stderr, "aegis: "+s)
	}
}

// endSummary is the session_end record in a few words, for aegis log:
// the reason, the exit status wrap gave (the child's, 128+N for signal
// N, or wrap's own failure's), a seccomp kill, and the detail of a
// session whose child never ran.
func endSummary(end *record.SessionEnd) string {
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
	b.WriteString("; " + plural(c.Intents, "call"))
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
