package relay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/aegisrelay/aegis/confine"
	"github.com/aegisrelay/aegis/journal"
	"golang.org/x/sys/unix"
)

// DefaultGrace is how long a child has to exit after its stdin closes,
// and again after SIGTERM, before the next step.
const DefaultGrace = 5 * time.Second

// Session runs one child under a Relay: it starts the child, pumps both
// ways, forwards signals, ends the child (stdin EOF, grace, SIGTERM, grace,
// SIGKILL) and writes the session's last records. The caller has already
// appended session_start.
type Session struct {
	Relay   *Relay
	Journal *journal.Journal
	Argv    []string
	Env     []string // nil: aegis's own environment
	Grace   time.Duration
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  *os.File // the child's stderr, passed through untouched
	Signals <-chan os.Signal
	// Logf prints an aegis: diagnostic.
	Logf func(format string, args ...any)
	// Confine, when set, starts the child through the confinement helper
	// (confine.Command) and appends the enforcement record, durable, before
	// any frame moves; a refusal ends the session with ExitConfinement.
	Confine *confine.Profile
}

// Result is how a session ended.
type Result struct {
	End journal.SessionEnd
	// Exit is wrap's exit status: the child's, 128+N for signal N, or
	// 65/74/127 for the failures of SPEC §1.
	Exit int
	// Err is the failure that ended the session early, if any.
	Err error
}

// Exit statuses of Run's own failures.
const (
	ExitFrameTooLarge = 65
	ExitConfinement   = 69
	ExitAuditIO       = 74
	ExitCannotStart   = 127
)

type exitInfo struct {
	state *os.ProcessState
	err   error
}

// Run runs the session to its end and returns how it ended. It writes
// session_end unless the journal has failed.
func (s *Session) Run() Result {
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	logf := s.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return s.finish(Result{Exit: ExitCannotStart, Err: err, End: journal.SessionEnd{Reason: journal.EndChildStartFailed, Detail: err.Error(), ExitCode: ExitCannotStart}})
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return s.finish(Result{Exit: ExitCannotStart, Err: err, End: journal.SessionEnd{Reason: journal.EndChildStartFailed, Detail: err.Error(), ExitCode: ExitCannotStart}})
	}
	growPipe(inW)
	growPipe(outR)
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Env = s.Env
	var launch *confine.Launch
	if s.Confine != nil {
		if cmd, launch, err = confine.Command(*s.Confine, s.Argv, s.Env); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return s.finish(Result{Exit: ExitConfinement, Err: err, End: journal.SessionEnd{Reason: journal.EndConfinementRefused, Detail: err.Error(), ExitCode: ExitConfinement}})
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, s.Stderr
	// Its own process group: a terminal's ^C reaches aegis alone, which
	// forwards it once, and the group (npx and the node it starts) can be
	// signalled as one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		if launch != nil {
			launch.Close()
		}
		code := ExitCannotStart
		if errors.Is(err, os.ErrPermission) {
			code = 126
		}
		return s.finish(Result{Exit: code, Err: fmt.Errorf("cannot start %q: %w", s.Argv[0], err),
			End: journal.SessionEnd{Reason: journal.EndChildStartFailed, Detail: err.Error(), ExitCode: code}})
	}
	inR.Close()
	outW.Close()
	// seccomp: the confinement helper reported the seccomp filter applied.
	// Only then can a SIGSYS be a seccomp kill.
	seccomp := false
	if launch != nil {
		launch.Started()
		res, applied, ok := s.enforce(cmd, launch, inW, outR)
		if !ok {
			return res
		}
		seccomp = applied
	}
	pgid := cmd.Process.Pid
	signalChild := func(sig syscall.Signal) {
		if err := unix.Kill(-pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			logf("signal %v to the child: %v", sig, err)
		}
	}

	upDone := make(chan error, 1)
	downDone := make(chan error, 1)
	exited := make(chan exitInfo, 1)
	go func() { upDone <- s.Relay.Upstream(s.Stdin, inW) }()
	go func() { downDone <- s.Relay.Downstream(outR, s.Stdout) }()
	go func() { err := cmd.Wait(); exited <- exitInfo{cmd.ProcessState, err} }()

	var (
		reason   string // session_end reason, once known
		failure  error  // ends the session early: 65 or 74
		failExit int
		state    *os.ProcessState
		timer    <-chan time.Time
		stage    int // 0 waiting; 1 stdin closed; 2 SIGTERM sent; 3 SIGKILL sent
		draining bool
		stdinOK  = true
	)
	closeStdin := func() {
		if stdinOK {
			inW.Close()
			stdinOK = false
		}
	}
	// stop ends the child: close its stdin, then escalate on the timer.
	stop := func(now bool) {
		closeStdin()
		if now && stage < 2 {
			signalChild(syscall.SIGTERM)
			stage = 2
		} else if stage < 1 {
			stage = 1
		}
		timer = time.After(grace)
	}
	pumpFailed := func(err error) {
		if failure != nil {
			return
		}
		switch {
		case errors.Is(err, ErrFrameTooLarge):
			reason, failure, failExit = journal.EndFrameTooLarge, err, ExitFrameTooLarge
		case errors.Is(err, journal.ErrIO):
			reason, failure, failExit = journal.EndAuditIOError, err, ExitAuditIO
		default:
			return
		}
		stop(true)
	}
	for state == nil || downDone != nil {
		select {
		case err := <-upDone:
			upDone = nil
			switch {
			case err == nil:
				if reason == "" {
					reason = journal.EndClientEOF
				}
				if state == nil {
					stop(false)
				}
			case errors.Is(err, ErrFrameTooLarge), errors.Is(err, journal.ErrIO):
				pumpFailed(err)
			default: // the child's stdin is gone: wait for it to exit
				closeStdin()
			}
		case err := <-downDone:
			downDone = nil
			if err != nil && !errors.Is(err, ErrEnded) {
				pumpFailed(err)
				if failure == nil {
					logf("%v", err)
				}
			}
		case ex := <-exited:
			state = ex.state
			if state == nil {
				state = &os.ProcessState{}
			}
			closeStdin()
			if downDone != nil {
				// Drain what the child wrote before it exited; a grandchild
				// holding the pipe open must not hold the session forever.
				draining = true
				timer = time.After(grace)
			}
		case sig := <-s.Signals:
			// SIGHUP is passed on (and reloads a policy) but does not by
			// itself end the session: if the child lives on, so does it.
			if sig != syscall.SIGHUP && (reason == "" || reason == journal.EndClientEOF) {
				reason = journal.EndSignal
			}
			if state == nil {
				signalChild(sig.(syscall.Signal))
			}
		case <-timer:
			switch {
			case draining:
				outR.Close() // unblocks Downstream's read
				draining = false
				timer = nil
			case stage == 1:
				signalChild(syscall.SIGTERM)
				stage, timer = 2, time.After(grace)
			case stage == 2:
				signalChild(syscall.SIGKILL)
				stage, timer = 3, nil
			}
		}
	}
	if reason == "" {
		reason = journal.EndChildExit
	}
	res := Result{Err: failure, End: journal.SessionEnd{Reason: reason}}
	status := journal.StatusUnanswered
	why := "the child exited before answering"
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		res.Exit = 128 + int(sig)
		res.End.ExitSignal = unix.SignalName(sig)
		why = "the child was killed by " + res.End.ExitSignal + " before answering"
		// A process dies of SIGSYS alike whether seccomp killed it or the
		// signal was sent (kill(2) by the child itself or by another
		// process): the wait status cannot tell them apart. So a SIGSYS is
		// recorded as seccomp_killed only when a filter was applied, and
		// then with that caveat; without one it is an ordinary signal.
		if sig == syscall.SIGSYS {
			if seccomp {
				res.End.SeccompKilled = true
				res.End.Detail = SIGSYSFiltered
				status, why = journal.StatusSeccompKilled, "the child died of SIGSYS under the seccomp filter (a seccomp kill, or a SIGSYS sent to it)"
			} else {
				res.End.Detail = SIGSYSUnfiltered
			}
		}
	} else {
		res.Exit = state.ExitCode()
		res.End.ExitCode = res.Exit
	}
	if failure != nil {
		res.Exit = failExit
		res.End.Detail = failure.Error()
		why = "session ended: " + failure.Error()
	}
	if !errors.Is(failure, journal.ErrIO) {
		counts, err := s.Relay.End(status, why)
		res.End.Counts = counts
		if err != nil {
			res.Exit, res.Err = ExitAuditIO, err
			return res
		}
	}
	return s.finish(res)
}

// The session_end details of a child that died of SIGSYS.
const (
	// SIGSYSFiltered: the seccomp filter applied (seccomp_killed: true).
	SIGSYSFiltered = "SIGSYS with the seccomp filter applied: a seccomp kill, or a SIGSYS the child sent itself (or was sent); the exit status cannot tell them apart"
	// SIGSYSUnfiltered: no seccomp filter applied (seccomp_killed: false).
	SIGSYSUnfiltered = "SIGSYS with no seccomp filter applied: sent by the child itself or another process, not a seccomp kill"
)

// enforce reads what the confinement helper enforced and appends it as the
// enforcement record, durable (as the level makes anything durable before a
// response moves) before Run starts the pumps: no frame moves before it;
// seccomp says whether the helper applied the seccomp filter. If the
// helper refused, or exec failed, or the record could not be written, it
// waits for the helper, closes the child's pipes and returns the finished
// Result with ok false.
func (s *Session) enforce(cmd *exec.Cmd, launch *confine.Launch, inW, outR *os.File) (res Result, seccomp, ok bool) {
	rep, err := launch.Report()
	switch {
	case err != nil:
		res = Result{Exit: ExitConfinement, Err: fmt.Errorf("confinement refused: %w", err),
			End: journal.SessionEnd{Reason: journal.EndConfinementRefused, Detail: err.Error(), ExitCode: ExitConfinement}}
	case rep.Refused != "":
		res = Result{Exit: ExitConfinement, Err: fmt.Errorf("confinement refused: %s", rep.Refused),
			End: journal.SessionEnd{Reason: journal.EndConfinementRefused, Detail: rep.Refused, ExitCode: ExitConfinement}}
	}
	if res.Err == nil && rep.Enforced != nil {
		seq, err := s.Journal.Append(rep.Enforced.Record())
		if err == nil {
			err = s.Journal.Wait(seq, journal.BeforeResponse)
		}
		if err != nil {
			// Confined but unrecorded: the child must not run.
			unix.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			inW.Close()
			outR.Close()
			return Result{Exit: ExitAuditIO, Err: err}, false, false
		}
	}
	if res.Err == nil && (rep.Enforced == nil || rep.ExecError != "") {
		detail := rep.ExecError
		if detail == "" {
			detail = "the confinement helper reported nothing enforced"
		}
		res = Result{Err: fmt.Errorf("cannot start %q under --confine: %s", s.Argv[0], detail),
			End: journal.SessionEnd{Reason: journal.EndChildStartFailed, Detail: detail}}
	}
	if res.Err == nil {
		return Result{}, rep.Enforced.SeccompApplied, true
	}
	// Nothing was relayed and nothing will be. A helper that refused or
	// failed to exec exits on its own; one whose report was unreadable may
	// have exec'd the target, which must not run unrecorded.
	inW.Close()
	outR.Close()
	if err != nil {
		unix.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Wait()
	if err != nil {
		res.End.Detail += " (helper: " + cmd.ProcessState.String() + ")"
		res.Err = fmt.Errorf("%w (helper: %s)", res.Err, cmd.ProcessState)
	}
	if res.Exit == 0 {
		res.Exit = cmd.ProcessState.ExitCode()
		if res.Exit <= 0 {
			res.Exit = ExitCannotStart
		}
		res.End.ExitCode = res.Exit
	}
	return s.finish(res), false, false
}

// finish appends session_end (unless the journal failed) and waits for it.
func (s *Session) finish(res Result) Result {
	if errors.Is(res.Err, journal.ErrIO) {
		return res
	}
	if res.End.Counts == (journal.Counts{}) {
		res.End.Counts = s.Relay.Counts()
	}
	seq, err := s.Journal.Append(&res.End)
	if err == nil {
		err = s.Journal.Wait(seq, journal.BeforeResponse)
	}
	if err != nil {
		res.Exit, res.Err = ExitAuditIO, err
	}
	return res
}
