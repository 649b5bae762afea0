package supervise

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestExitStatus: how a session ended decides wrap's exit status, the
// session_end record and the outcome of the calls still in flight, with no
// child to run.
func TestExitStatus(t *testing.T) {
	tooLarge := fmt.Errorf("read: %w", relay.ErrFrameTooLarge)
	auditIO := fmt.Errorf("sync: %w", journal.ErrIO)
	unanswered := record.StatusUnanswered
	tests := []struct {
		name       string
		e          ending
		wantExit   int
		wantEnd    record.SessionEnd
		wantStatus string
		wantWhy    string
	}{
		{
			name:     "child exits 0 on its own",
			e:        ending{},
			wantExit: 0, wantEnd: record.SessionEnd{Reason: record.EndChildExit},
			wantStatus: unanswered, wantWhy: "the child exited before answering",
		},
		{
			name:     "client EOF, child exits 3",
			e:        ending{reason: record.EndClientEOF, code: 3},
			wantExit: 3, wantEnd: record.SessionEnd{Reason: record.EndClientEOF, ExitCode: 3},
			wantStatus: unanswered, wantWhy: "the child exited before answering",
		},
		{
			name:     "signal forwarded, child dies of SIGTERM",
			e:        ending{reason: record.EndSignal, signal: syscall.SIGTERM},
			wantExit: 128 + 15, wantEnd: record.SessionEnd{Reason: record.EndSignal, ExitSignal: "SIGTERM"},
			wantStatus: unanswered, wantWhy: "the child was killed by SIGTERM before answering",
		},
		{
			name:     "SIGSYS under the seccomp filter",
			e:        ending{signal: syscall.SIGSYS, seccomp: true},
			wantExit: 128 + int(syscall.SIGSYS), wantEnd: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSYS", SeccompKilled: true, Detail: SIGSYSFiltered},
			wantStatus: record.StatusSeccompKilled, wantWhy: "the child died of SIGSYS under the seccomp filter (a seccomp kill, or a SIGSYS sent to it)",
		},
		{
			name:     "SIGSYS with no filter is an ordinary signal",
			e:        ending{signal: syscall.SIGSYS},
			wantExit: 128 + int(syscall.SIGSYS), wantEnd: record.SessionEnd{Reason: record.EndChildExit, ExitSignal: "SIGSYS", Detail: SIGSYSUnfiltered},
			wantStatus: unanswered, wantWhy: "the child was killed by SIGSYS before answering",
		},
		{
			name:     "frame too large overrides the child's status",
			e:        ending{reason: record.EndFrameTooLarge, code: 0, failure: tooLarge},
			wantExit: exitcode.FrameTooLarge, wantEnd: record.SessionEnd{Reason: record.EndFrameTooLarge, Detail: tooLarge.Error()},
			wantStatus: unanswered, wantWhy: "session ended: " + tooLarge.Error(),
		},
		{
			name:     "audit I/O failure, child then killed by SIGTERM",
			e:        ending{reason: record.EndAuditIOError, signal: syscall.SIGTERM, failure: auditIO},
			wantExit: exitcode.AuditIO, wantEnd: record.SessionEnd{Reason: record.EndAuditIOError, ExitSignal: "SIGTERM", Detail: auditIO.Error()},
			wantStatus: unanswered, wantWhy: "session ended: " + auditIO.Error(),
		},
		{
			name:     "frame too large, SIGSYS under the filter: the failure's detail wins",
			e:        ending{reason: record.EndFrameTooLarge, signal: syscall.SIGSYS, seccomp: true, failure: tooLarge},
			wantExit: exitcode.FrameTooLarge, wantEnd: record.SessionEnd{Reason: record.EndFrameTooLarge, ExitSignal: "SIGSYS", SeccompKilled: true, Detail: tooLarge.Error()},
			wantStatus: record.StatusSeccompKilled, wantWhy: "session ended: " + tooLarge.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, status, why := exitStatus(tt.e)
			if res.Exit != tt.wantExit || res.End != tt.wantEnd || !errors.Is(res.Err, tt.e.failure) || (res.Err == nil) != (tt.e.failure == nil) {
				t.Errorf("exitStatus(%+v) = exit %d, end %+v, err %v; want %d, %+v, %v", tt.e, res.Exit, res.End, res.Err, tt.wantExit, tt.wantEnd, tt.e.failure)
			}
			if status != tt.wantStatus || why != tt.wantWhy {
				t.Errorf("exitStatus(%+v) outcome = %q, %q; want %q, %q", tt.e, status, why, tt.wantStatus, tt.wantWhy)
			}
		})
	}
}
