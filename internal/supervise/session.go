package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
	"golang.org/x/sys/unix"
)

// DefaultGrace is how long a child has to exit after its stdin closes,
// and again after SIGTERM, before the next step.
const DefaultGrace = 5 * time.Second

// Session runs one child under a relay.Relay: it starts the child
// (through its Launcher), runs the relay's two pumps, forwards signals,
// ends the child (stdin EOF, grace, SIGTERM, grace, SIGKILL) and writes the
// session's last records. The caller has already appended session_start.
// A Session is run once.
type Session struct {
	Relay   *relay.Relay
	Journal *journal.Journal
	Argv    []string
	Env     []string // nil: aegis's own environment
	Grace   time.Duration
	// Stdin is the client's side. A read error whose Idle method reports
	// true (the HTTP front's ErrIdle) ends it as io.EOF does, with
	// session_end's reason record.EndIdle.
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  *os.File // the child's stderr, passed through untouched
	Signals <-chan os.Signal
	// Logf prints an aegis: diagnostic.
	Logf func(format string, args ...any)
	// Launcher makes the child's command; nil is Exec. A launcher whose
	// Launch reports what it enforced (confinement) has its enforcement
	// record appended, durable, before any frame moves; a refusal ends the
	// session with exitcode.Confinement.
	Launcher Launcher
	// Ready, when set, is waited for before either pump moves a byte:
	// wrap makes session_start durable there. It runs while the child
	// starts, so that a harness spawning a server pays the sync and the
	// child's start side by side, not one after the other. An error
	// (journal.ErrIO) ends the session as an audit failure would.
	Ready func() error
}

// Result is how a session ended.
type Result struct {
	End record.SessionEnd
	// Exit is wrap's exit status: the child's, 128+N for signal N, or one
	// of package exitcode's for wrap's own failures (package documentation,
	// "Lifecycle").
	Exit int
	// Err is the failure that ended the session early, if any.
	Err error
}

// Run runs the session to its end and returns how it ended. It writes
// session_end unless the journal has failed.
func (s *Session) Run() Result {
	ready := make(chan error, 1)
	if s.Ready != nil {
		go func() { ready <- s.Ready() }()
	} else {
		ready <- nil
	}
	c, res, ok := s.startChild()
	if !ok {
		return res
	}
	sv := s.newSupervisor(c)
	sv.ready = ready
	sv.supervise()
	if c.sidecar != nil {
		c.sidecar.Stop()
	}
	res, status, why := exitStatus(sv.ending())
	if !errors.Is(res.Err, journal.ErrIO) {
		counts, err := s.Relay.End(status, why)
		res.End.Counts = counts
		if err != nil {
			res.Exit, res.Err = exitcode.AuditIO, err
			return res
		}
	}
	return s.finish(res)
}

// child is a started child and aegis's ends of its pipes.
type child struct {
	cmd     *exec.Cmd
	stdin   *os.File     // the write end of the child's stdin
	stdout  *drainReader // the read end of the child's stdout
	seccomp bool         // a seccomp filter was applied to it (Report.Seccomp)
	sidecar Sidecar      // started once the enforcement is durable (Report.Sidecar), or nil
}

// closePipes closes aegis's ends of the child's pipes.
func (c *child) closePipes() {
	c.stdin.Close()
	c.stdout.Close()
}

// startChild starts the child, and has its enforcement recorded (enforce)
// if its Launch reports one. If the child does not start it returns the
// finished Result and ok false, with every descriptor it opened closed.
func (s *Session) startChild() (c *child, res Result, ok bool) {
	var (
		opened []*os.File
		launch Launch
	)
	failed := func(res Result) (*child, Result, bool) {
		for _, f := range opened {
			f.Close()
		}
		if launch != nil {
			launch.Close()
		}
		return nil, s.finish(res), false
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return failed(startFailed(exitcode.CannotStart, err, err))
	}
	opened = append(opened, inR, inW)
	outR, outW, err := os.Pipe()
	if err != nil {
		return failed(startFailed(exitcode.CannotStart, err, err))
	}
	opened = append(opened, outR, outW)
	growPipe(inW)
	growPipe(outR)
	l := s.Launcher
	if l == nil {
		l = Exec{}
	}
	cmd, launch, err := l.Command(s.Argv, s.Env)
	if err != nil {
		return failed(Result{Exit: exitcode.Confinement, Err: err, End: record.SessionEnd{Reason: record.EndConfinementRefused, Detail: err.Error(), ExitCode: exitcode.Confinement}})
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, s.Stderr
	// Its own process group: a terminal's ^C reaches aegis alone, which
	// forwards it once, and the group (npx and the node it starts) can be
	// signalled as one.
	// The launcher's namespaces, if any, are kept.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		code := exitcode.CannotStart
		if errors.Is(err, os.ErrPermission) {
			code = exitcode.CannotExec
		}
		return failed(startFailed(code, fmt.Errorf("cannot start %q: %w", s.Argv[0], err), err))
	}
	inR.Close()
	outW.Close()
	c = &child{cmd: cmd, stdin: inW, stdout: &drainReader{File: outR}}
	if launch != nil {
		launch.Started()
		if res, c.seccomp, ok = s.enforce(c, launch); !ok {
			return nil, res, false
		}
		if c.sidecar != nil {
			c.sidecar.Start(s.Relay)
		}
	}
	return c, Result{}, true
}

// startFailed is the Result of a child that could not be started: err is
// the session's error, cause what session_end records.
func startFailed(code int, err, cause error) Result {
	return Result{Exit: code, Err: err, End: record.SessionEnd{Reason: record.EndChildStartFailed, Detail: cause.Error(), ExitCode: code}}
}

// stopStage is how far the supervisor has gone in ending the child. Each
// stage but the last has a grace period (Session.Grace) to end in the
// child's exit before the next.
type stopStage int

const (
	childRunning stopStage = iota // nothing done to end it
	stdinClosed                   // its stdin is closed: it may exit on its own
	termSent                      // SIGTERM sent to its process group
	killSent                      // SIGKILL sent: nothing more to do
)

// exited is what cmd.Wait said.
type exited struct {
	state *os.ProcessState
	err   error
}

// supervisor watches the pumps, the child and the signals aegis receives,
// and ends the child when the session ends. Its fields are the
// supervise goroutine's alone.
type supervisor struct {
	s     *Session
	c     *child
	ready <-chan error // Session.Ready's result
	grace time.Duration
	logf  func(format string, args ...any)

	reason    string           // session_end reason, once known
	failure   error            // what ends the session early: a frame too large or audit I/O
	state     *os.ProcessState // the child's, once it has exited
	stage     stopStage
	timer     <-chan time.Time // the current grace period's end
	draining  bool             // the child has exited; its output is read until timer
	stdinOpen bool
}

func (s *Session) newSupervisor(c *child) *supervisor {
	sv := &supervisor{s: s, c: c, grace: s.Grace, logf: s.Logf, stdinOpen: true}
	if sv.grace <= 0 {
		sv.grace = DefaultGrace
	}
	if sv.logf == nil {
		sv.logf = func(string, ...any) {}
	}
	return sv
}

// supervise starts the pumps and waits for the child, then returns once
// the child has exited and its output has been relayed (or the drain's
// grace has run out).
func (sv *supervisor) supervise() {
	s, c := sv.s, sv.c
	upDone := make(chan error, 1)
	downDone := make(chan error, 1)
	exit := make(chan exited, 1)
	// The pumps start once Ready has returned; both see its error.
	var readyErr error
	readied := make(chan struct{})
	go func() { readyErr = <-sv.ready; close(readied) }()
	go func() {
		<-readied
		if readyErr != nil {
			upDone <- readyErr
			return
		}
		upDone <- s.Relay.Upstream(s.Stdin, c.stdin)
	}()
	go func() {
		<-readied
		if readyErr != nil {
			downDone <- readyErr
			return
		}
		downDone <- s.Relay.Downstream(c.stdout, s.Stdout)
	}()
	go func() { err := c.cmd.Wait(); exit <- exited{c.cmd.ProcessState, err} }()
	for sv.state == nil || downDone != nil {
		select {
		case err := <-upDone:
			upDone = nil
			sv.upstreamEnded(err)
		case err := <-downDone:
			downDone = nil
			sv.downstreamEnded(err)
		case ex := <-exit:
			sv.childExited(ex, downDone != nil)
		case err := <-s.Relay.Fault():
			// A timeout's records could not be written: as when a pump
			// fails, though both may be blocked in reads.
			sv.pumpFailed(err)
		case sig := <-s.Signals:
			sv.signalled(sig)
		case <-sv.timer:
			sv.graceOver()
		}
	}
}

func (sv *supervisor) upstreamEnded(err error) {
	var idle interface{ Idle() bool }
	switch {
	case err == nil, errors.As(err, &idle) && idle.Idle():
		if sv.reason == "" {
			sv.reason = record.EndClientEOF
			if err != nil {
				sv.reason = record.EndIdle
			}
		}
		if sv.state == nil {
			sv.stop(false)
		}
	case errors.Is(err, relay.ErrFrameTooLarge), errors.Is(err, journal.ErrIO):
		sv.pumpFailed(err)
	default: // the child's stdin is gone: wait for it to exit
		sv.closeStdin()
	}
}

func (sv *supervisor) downstreamEnded(err error) {
	if err != nil && !errors.Is(err, relay.ErrEnded) {
		sv.pumpFailed(err)
		if sv.failure == nil {
			sv.logf("%v", err)
		}
	}
}

// childExited notes the child's exit; while Downstream still runs
// (draining), it has a grace period to relay what the child wrote before
// it exited: a grandchild holding the pipe open must not hold the session
// forever.
func (sv *supervisor) childExited(ex exited, draining bool) {
	sv.state = ex.state
	if sv.state == nil {
		sv.state = &os.ProcessState{}
	}
	sv.closeStdin()
	if draining {
		sv.draining = true
		sv.timer = time.After(sv.grace)
	}
}

// signalled passes a signal aegis received on to the child. SIGHUP is
// passed on (and reloads a policy) but does not by itself end the session:
// if the child lives on, so does it.
func (sv *supervisor) signalled(sig os.Signal) {
	if sig != syscall.SIGHUP && (sv.reason == "" || sv.reason == record.EndClientEOF) {
		sv.reason = record.EndSignal
	}
	if sv.state == nil {
		sv.signal(sig.(syscall.Signal))
	}
}

// graceOver ends the drain, or takes the next stage in ending the child.
func (sv *supervisor) graceOver() {
	switch {
	case sv.draining:
		sv.logf("the child has exited, and its output did not end within the grace period (%v): what it wrote until now is relayed, nothing after", sv.grace)
		sv.c.stdout.cut()
		sv.draining = false
		sv.timer = nil
	case sv.stage == stdinClosed:
		sv.signal(syscall.SIGTERM)
		sv.stage, sv.timer = termSent, time.After(sv.grace)
	case sv.stage == termSent:
		sv.signal(syscall.SIGKILL)
		sv.stage, sv.timer = killSent, nil
	}
}

func (sv *supervisor) closeStdin() {
	if sv.stdinOpen {
		sv.c.stdin.Close()
		sv.stdinOpen = false
	}
}

// stop starts ending the child: its stdin is closed, and with now it gets
// SIGTERM at once rather than after a grace period.
func (sv *supervisor) stop(now bool) {
	sv.closeStdin()
	if now && sv.stage < termSent {
		sv.signal(syscall.SIGTERM)
		sv.stage = termSent
	} else if sv.stage < stdinClosed {
		sv.stage = stdinClosed
	}
	sv.timer = time.After(sv.grace)
}

// pumpFailed ends the session early on a frame too large or an audit I/O
// failure, the first of them; other pump errors do not end it.
func (sv *supervisor) pumpFailed(err error) {
	if sv.failure != nil {
		return
	}
	switch {
	case errors.Is(err, relay.ErrFrameTooLarge):
		sv.reason, sv.failure = record.EndFrameTooLarge, err
	case errors.Is(err, journal.ErrIO):
		sv.reason, sv.failure = record.EndAuditIOError, err
	default:
		return
	}
	sv.stop(true)
}

// signal signals the child's process group.
func (sv *supervisor) signal(sig syscall.Signal) {
	if err := unix.Kill(-sv.c.cmd.Process.Pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		sv.logf("signal %v to the child: %v", sig, err)
	}
}

// ending returns how the session ended, once supervise has returned.
func (sv *supervisor) ending() ending {
	e := ending{reason: sv.reason, seccomp: sv.c.seccomp, failure: sv.failure}
	if ws, ok := sv.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.signal = ws.Signal()
	} else {
		e.code = sv.state.ExitCode()
	}
	return e
}

// ending is how a session ended, all that its exit status depends on.
type ending struct {
	reason  string         // session_end's reason; "" for the child's own exit
	code    int            // the child's exit status, if it exited
	signal  syscall.Signal // the signal that killed the child; 0 if it exited
	seccomp bool           // the seccomp filter was applied to the child
	failure error          // what ended the session early (relay.ErrFrameTooLarge, journal.ErrIO), or nil
}

// exitStatus maps how a session ended to its Result (wrap's exit status,
// the session_end record but its counts) and to the outcome status and
// reason of the calls still in flight. Without a failure the exit status
// is the child's, 128+N for signal N; a failure's own status overrides it,
// while session_end still records how the child ended.
func exitStatus(e ending) (res Result, status, why string) {
	res = Result{Err: e.failure, End: record.SessionEnd{Reason: e.reason}}
	if res.End.Reason == "" {
		res.End.Reason = record.EndChildExit
	}
	status, why = record.StatusUnanswered, "the child exited before answering"
	if e.signal != 0 {
		res.Exit = 128 + int(e.signal)
		res.End.ExitSignal = unix.SignalName(e.signal)
		why = "the child was killed by " + res.End.ExitSignal + " before answering"
		// A process dies of SIGSYS alike whether seccomp killed it or the
		// signal was sent (kill(2) by the child itself or by another
		// process): the wait status cannot tell them apart. So a SIGSYS is
		// recorded as seccomp_killed only when a filter was applied, and
		// then with that caveat; without one it is an ordinary signal.
		if e.signal == syscall.SIGSYS {
			if e.seccomp {
				res.End.SeccompKilled = true
				res.End.Detail = SIGSYSFiltered
				status, why = record.StatusSeccompKilled, "the child died of SIGSYS under the seccomp filter (a seccomp kill, or a SIGSYS sent to it)"
			} else {
				res.End.Detail = SIGSYSUnfiltered
			}
		}
	} else {
		res.Exit = e.code
		res.End.ExitCode = e.code
	}
	if e.failure != nil {
		res.Exit = exitcode.AuditIO
		if errors.Is(e.failure, relay.ErrFrameTooLarge) {
			res.Exit = exitcode.FrameTooLarge
		}
		res.End.Detail = e.failure.Error()
		why = "session ended: " + e.failure.Error()
	}
	return res, status, why
}

// The session_end details of a child that died of SIGSYS.
const (
	// SIGSYSFiltered: the seccomp filter applied (seccomp_killed: true).
	SIGSYSFiltered = "SIGSYS with the seccomp filter applied: a seccomp kill, or a SIGSYS the child sent itself (or was sent); the exit status cannot tell them apart"
	// SIGSYSUnfiltered: no seccomp filter applied (seccomp_killed: false).
	SIGSYSUnfiltered = "SIGSYS with no seccomp filter applied: sent by the child itself or another process, not a seccomp kill"
)

// enforce reads what the child's launch enforced and appends it as the
// enforcement record, durable (as the level makes anything durable before
// a response moves) before Run starts the pumps: no frame moves before it;
// seccomp says whether a seccomp filter was applied. If the launcher
// refused, or exec failed, or the record could not be written, it waits
// for the child, closes its pipes and returns the finished Result with ok
// false.
func (s *Session) enforce(c *child, launch Launch) (res Result, seccomp, ok bool) {
	cmd := c.cmd
	rep, err := launch.Report()
	switch {
	case err != nil:
		res = Result{Exit: exitcode.Confinement, Err: fmt.Errorf("confinement refused: %w", err),
			End: record.SessionEnd{Reason: record.EndConfinementRefused, Detail: err.Error(), ExitCode: exitcode.Confinement}}
	case rep.Refused != "":
		res = Result{Exit: exitcode.Confinement, Err: fmt.Errorf("confinement refused: %s", rep.Refused),
			End: record.SessionEnd{Reason: record.EndConfinementRefused, Detail: rep.Refused, ExitCode: exitcode.Confinement}}
	}
	if res.Err == nil && rep.Enforcement != nil {
		seq, err := s.Journal.Append(rep.Enforcement)
		if err == nil {
			err = s.Journal.Wait(seq, journal.BeforeResponse)
		}
		if err != nil {
			// Confined but unrecorded: the child must not run.
			if rep.Sidecar != nil {
				rep.Sidecar.Stop()
			}
			unix.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			c.closePipes()
			return Result{Exit: exitcode.AuditIO, Err: err}, false, false
		}
	}
	if res.Err == nil && (rep.Enforcement == nil || rep.ExecError != "") {
		detail := rep.ExecError
		if detail == "" {
			detail = "the confinement helper reported nothing enforced"
		}
		res = Result{Err: fmt.Errorf("cannot start %q under --confine: %s", s.Argv[0], detail),
			End: record.SessionEnd{Reason: record.EndChildStartFailed, Detail: detail}}
	}
	if res.Err == nil {
		c.sidecar = rep.Sidecar
		return Result{}, rep.Seccomp, true
	}
	if rep.Sidecar != nil {
		rep.Sidecar.Stop()
	}
	// Nothing was relayed and nothing will be. A helper that refused or
	// failed to exec exits on its own; one whose report was unreadable may
	// have exec'd the target, which must not run unrecorded.
	c.closePipes()
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
			res.Exit = exitcode.CannotStart
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
	if res.End.Counts == (record.Counts{}) {
		res.End.Counts = s.Relay.Counts()
	}
	seq, err := s.Journal.Append(&res.End)
	if err == nil {
		err = s.Journal.Wait(seq, journal.BeforeResponse)
	}
	if err != nil {
		res.Exit, res.Err = exitcode.AuditIO, err
	}
	return res
}
