package confine

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// Launch is the parent's side of one confined start. Not goroutine-safe.
type Launch struct {
	r, w *os.File
	// egress and helperEgress are the two ends of the socket the helper
	// hands the proxy's listener over on (--allow-egress), or nil.
	egress, helperEgress *os.File
}

// Command returns the command that runs argv confined by p, and the Launch
// that reads what the helper enforced: the same binary (os.Executable) as
// `aegis __confine-exec -- argv…`, with env (nil: this process's) plus the
// profile in EnvVar, and the report pipe as its descriptor 3. The caller
// sets the standard streams and attributes, starts cmd, then calls
// Started, then Report. Where confinement is not available (any system
// but Linux) it returns an error matching ErrRefused and no command; when
// argv needs a file to start that p does not grant (Reach), a *ReachError
// matching ErrUnreached. With --allow-egress (p.Egress) the helper starts
// in a network namespace of its own where one can be had, and hands the
// proxy's listener over (Listener).
func Command(p Profile, argv, env []string) (*exec.Cmd, *Launch, error) {
	if err := supported(); err != nil {
		return nil, nil, err
	}
	if e := unreached(p, argv); e != nil {
		return nil, nil, e
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("confine: finding aegis's own binary: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("confine: report pipe: %w", err)
	}
	p.ReportFD = 3 // ExtraFiles[0]
	cmd := exec.Command(self, append([]string{HelperCommand, "--"}, argv...)...)
	cmd.ExtraFiles = []*os.File{w}
	l := &Launch{r: r, w: w}
	if len(p.Egress) > 0 {
		if l.egress, err = egressCommand(&p, cmd, self); err != nil {
			l.Close()
			return nil, nil, err
		}
		l.helperEgress = cmd.ExtraFiles[len(cmd.ExtraFiles)-1]
	}
	if env == nil {
		env = os.Environ()
	}
	childEnv := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvVar+"=") {
			childEnv = append(childEnv, kv)
		}
	}
	cmd.Env = append(childEnv, EnvVar+"="+p.encode())
	return cmd, l, nil
}

// Started closes the parent's copy of the write end, so that Report sees
// end of file once the helper has exec'd or exited. Call it once cmd.Start
// has returned, successfully or not.
func (l *Launch) Started() {
	l.w.Close()
	if l.helperEgress != nil {
		l.helperEgress.Close()
	}
}

// Egress reports whether the command was made with --allow-egress, whose
// proxy listener Listener returns.
func (l *Launch) Egress() bool { return l.egress != nil }

// Listener returns the egress proxy's listener, which the helper bound
// in the child's network and handed over before it exec'd the target.
// Call it after Report said what was enforced; it fails with
// ErrNoReport when the helper handed nothing over. The caller owns the
// listener.
func (l *Launch) Listener() (net.Listener, error) {
	if l.egress == nil {
		return nil, fmt.Errorf("%w: no --allow-egress", ErrNoReport)
	}
	defer l.egress.Close()
	return receiveListener(l.egress)
}

// Report waits for the helper to exec the target or exit, and returns what
// it said; ErrNoReport if it said nothing (it crashed). It closes the pipe.
func (l *Launch) Report() (*Report, error) {
	defer l.r.Close()
	return readReport(l.r)
}

// Close releases the pipe when the command was never started.
func (l *Launch) Close() {
	l.r.Close()
	l.w.Close()
	for _, f := range []*os.File{l.egress, l.helperEgress} {
		if f != nil {
			f.Close()
		}
	}
}
