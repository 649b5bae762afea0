// Package confined starts a session's child under wrap --confine: a
// supervise.Launcher that runs the child as `aegis __confine-exec --
// argv…` (confine.Command), which restricts itself to the profile and
// then execs argv, and reads the helper's report as the session takes
// it. It is a package of its own so that neither supervise nor confine
// imports the other: supervise knows a Launcher, confine knows the
// helper, and this is where the two meet.
package confined

import (
	"os/exec"

	"github.com/aegisrelay/aegis/internal/confine"
	"github.com/aegisrelay/aegis/internal/supervise"
)

// Launcher is how a session starts its child: supervise.Exec without a
// profile (p nil), through the confinement helper with one.
func Launcher(p *confine.Profile) supervise.Launcher {
	if p == nil {
		return supervise.Exec{}
	}
	return launcher{prof: *p}
}

// launcher starts the child through the helper, confined to prof.
type launcher struct{ prof confine.Profile }

func (l launcher) Command(argv, env []string) (*exec.Cmd, supervise.Launch, error) {
	cmd, launch, err := confine.Command(l.prof, argv, env)
	if err != nil {
		return nil, nil, err
	}
	return cmd, launchReport{launch}, nil
}

// launchReport reads the helper's report (confine.Launch) as the session
// takes it: the enforcement record, and whether seccomp was applied.
type launchReport struct{ l *confine.Launch }

func (c launchReport) Started() { c.l.Started() }
func (c launchReport) Close()   { c.l.Close() }

func (c launchReport) Report() (supervise.Report, error) {
	rep, err := c.l.Report()
	if err != nil {
		return supervise.Report{}, err
	}
	r := supervise.Report{Refused: rep.Refused, ExecError: rep.ExecError}
	if rep.Enforced != nil {
		r.Enforcement, r.Seccomp = rep.Enforced.Record(), rep.Enforced.SeccompApplied
	}
	return r, nil
}
