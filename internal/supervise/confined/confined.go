// Package confined starts a session's child under wrap --confine: a
// supervise.Launcher that runs the child as `aegis __confine-exec --
// argv…` (confine.Command), which restricts itself to the profile and
// then execs argv, and reads the helper's report as the session takes
// it. It is a package of its own so that neither supervise nor confine
// imports the other: supervise knows a Launcher, confine knows the
// helper, and this is where the two meet.
package confined

import (
	"net"
	"os/exec"

	"github.com/aegisrelay/aegis/internal/egress"
	"github.com/aegisrelay/aegis/journal/record"

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
	return cmd, launchReport{l: launch, grants: l.prof.Grants()}, nil
}

// launchReport reads the helper's report (confine.Launch) as the session
// takes it: the enforcement record, and whether seccomp was applied.
type launchReport struct {
	l      *confine.Launch
	grants egress.Grants
}

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
	if c.l.Egress() && rep.Enforced != nil && rep.Enforced.Egress != nil {
		ln, err := c.l.Listener()
		if err != nil {
			return supervise.Report{}, err
		}
		r.Sidecar = &egressProxy{grants: c.grants, ln: ln}
	}
	return r, nil
}

// egressProxy is wrap --allow-egress's proxy as the session's sidecar:
// it serves the listener the helper bound in the child's network, and
// records each connection through the session's relay.
type egressProxy struct {
	grants egress.Grants
	ln     net.Listener
	p      *egress.Proxy
	served chan struct{}
}

func (e *egressProxy) Start(rec supervise.Recorder) {
	e.p = egress.New(egress.Config{
		Grants:   e.grants,
		Record:   func(r *record.Egress) error { return rec.Note(r) },
		InFlight: rec.InFlight,
	})
	e.served = make(chan struct{})
	go func() {
		defer close(e.served)
		e.p.Serve(e.ln)
	}()
}

func (e *egressProxy) Stop() {
	if e.p == nil {
		e.ln.Close()
		return
	}
	e.p.Close()
	<-e.served
}
