package serve

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"unicode/utf8"

	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// PolicyReloads is what reloads a policy gate while sessions run: its
// Watch is a Config.Watch.
type PolicyReloads struct {
	Path string
	Gate *policy.Gate
	// Rejected, when set, reports a reload the policy refused (its
	// diagnostics); the policy in force stays.
	Rejected func(err error)
}

// LoadPolicy reads and checks the policy file at path (policy.Load) for
// the server called server, which conditions read as mcp.tool.target,
// and returns what gates the sessions and reloads it, rejected reloads
// reported to rejected. With no path it returns nil: no policy, every
// call passes.
func LoadPolicy(path, server string, rejected func(error)) (*PolicyReloads, error) {
	if path == "" {
		return nil, nil
	}
	p, err := policy.Load(path)
	if err != nil {
		return nil, err
	}
	g := policy.NewGate(p)
	g.SetServer(server)
	return &PolicyReloads{Path: path, Gate: g, Rejected: rejected}, nil
}

// Set is session_start's policy_set: the gate's policy's, or
// record.PassThroughSet for a nil p (no policy).
func (p *PolicyReloads) Set() string {
	if p == nil {
		return record.PassThroughSet
	}
	return p.Gate.Current().Set()
}

// OnToolChange is the on_tool_change of the policy in force
// (policy.DefaultToolChange for a nil p, no policy).
func (p *PolicyReloads) OnToolChange() string {
	if p == nil {
		return policy.DefaultToolChange
	}
	return p.Gate.Current().OnToolChange()
}

// Configure sets c.Gate to p's gate and c.Watch to p's Watch. A nil p (no
// policy) leaves both unset, so that every call passes: a nil
// *policy.Gate in c.Gate would be a gate, not none.
func (p *PolicyReloads) Configure(c *Config) {
	if p != nil {
		c.Gate, c.Watch = p.Gate, p.Watch
	}
}

// Watch reloads the policy on SIGHUP (which a session also forwards to
// its child) and when the file changes, recording each reload through r,
// until the returned stop is called. A change that leaves the bytes as
// they were last seen is not a reload; SIGHUP always is.
func (p *PolicyReloads) Watch(r *relay.Relay, logf func(string, ...any)) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var changed <-chan struct{}
	watcher, err := policy.Watch(p.Path, 0)
	if err != nil {
		logf("--policy: not watching %s for changes (%v); SIGHUP still reloads it", p.Path, err)
	} else {
		changed = watcher.C()
	}
	record := func(set, status string) error {
		return r.Note(&record.PolicyReload{Set: set, Status: clip(status, maxReloadStatus)})
	}
	seen := p.Gate.Current().Set()
	reload := func(force bool) {
		data, err := policy.ReadFile(p.Path)
		if err == nil {
			set := policy.SetOf(data)
			if set == seen && !force {
				return
			}
			seen = set
			err = p.Gate.Reload(p.Path, data, record)
		} else {
			seen = ""
			err = p.Gate.ReloadFile(p.Path, record)
		}
		switch {
		case errors.Is(err, relay.ErrEnded):
		case err == nil:
			logf("policy %s reloaded: %s applied", p.Path, p.Gate.Current().Set())
		default:
			logf("policy %s reload rejected, %s stays in force:", p.Path, p.Gate.Current().Set())
			if p.Rejected != nil {
				p.Rejected(err)
			}
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-hup:
				reload(true)
			case <-changed:
				reload(false)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-finished
		if watcher != nil {
			watcher.Close()
		}
	}
}

// maxReloadStatus bounds a policy_reload's status: a rejection's message
// can quote the policy file (up to policy's 4 MiB), and a record must fit
// in a line (journal.Fits). The whole message goes to stderr.
const maxReloadStatus = 4 << 10

// clip cuts s to at most n bytes, between whole UTF-8 characters, marking
// the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n - len("…")
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + "…"
}
