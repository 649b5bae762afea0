package supervise

import (
	"os/exec"

	"github.com/aegisrelay/aegis/journal/record"
)

// Launcher makes the command that runs a session's child: Exec runs argv
// as it is; a confining launcher runs it through a helper that restricts
// itself first and reports what it enforced (aegis wrap --confine). The
// session owns the command's standard streams and SysProcAttr: a Launcher
// sets neither, except the namespaces of SysProcAttr (Cloneflags and
// the id mappings that go with them), which the session keeps. A
// Launcher is used by one session at a time.
type Launcher interface {
	// Command returns the command that runs argv with env (nil: this
	// process's environment), not started, and the Launch that follows its
	// start, or nil for none. An error is a refusal to run argv at all
	// (confinement the system cannot give): the session ends with
	// exitcode.Confinement and session_end confinement_refused, and no
	// process is started.
	Command(argv, env []string) (*exec.Cmd, Launch, error)
}

// Exec is the plain Launcher: the child is argv itself, started with
// exec.Command, and reports nothing.
type Exec struct{}

// Command implements Launcher.
func (Exec) Command(argv, env []string) (*exec.Cmd, Launch, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	return cmd, nil, nil
}

// Launch follows one start of a command that a Launcher made. The session
// calls Close if the command was never started, or Started and then Report
// once it was. Not goroutine-safe.
type Launch interface {
	// Started is called once the command has started.
	Started()
	// Report waits until the child runs its target or has given up, and
	// returns what it enforced. An error says the launch cannot tell (a
	// helper that crashed): the session kills the child, which may run
	// the target unrecorded, and ends with exitcode.Confinement.
	Report() (Report, error)
	// Close releases what the launch holds when the command was not started.
	Close()
}

// Report is what a Launch says of its child once the child runs its target
// or has given up.
type Report struct {
	// Enforcement is the record of what was enforced, never what was
	// asked: appended and made durable before any byte moves either way.
	// Nil when nothing was enforced: the child did not reach its target,
	// and the session ends as a start that failed.
	Enforcement record.Body
	// Seccomp: a seccomp filter was applied. A child that dies of SIGSYS
	// is then recorded seccomp_killed (SIGSYSFiltered).
	Seccomp bool
	// Refused, when not empty, is why the launch refused to run the
	// target; the child exits on its own without running it, and the
	// session ends with exitcode.Confinement.
	Refused string
	// ExecError, when not empty, is why the target could not be executed
	// once Enforcement was in force; the session ends with the child's
	// exit status as a start that failed.
	ExecError string
	// Sidecar, when set, serves the child for the session (wrap
	// --allow-egress's proxy): started once Enforcement is durable,
	// stopped once the child has exited and before the calls still in
	// flight are ended, so that its records come before session_end.
	Sidecar Sidecar
}

// Sidecar is a service the child reaches while it runs. Stop may be
// called without Start (the session did not go ahead) and releases
// what it holds; it returns once the sidecar has written its records.
type Sidecar interface {
	Start(rec Recorder)
	Stop()
}

// Recorder is what a sidecar records through: the session's relay.
type Recorder interface {
	// Note appends a record about the session, in order with the
	// relay's own, and waits until it is written.
	Note(b record.Body) error
	// InFlight are the intent seqs of the tools/calls in flight.
	InFlight() []uint64
}
