package policy

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
)

// Gate is the policy of one wrap session, as the relay enforces it: the rule
// set in force, swapped whole by Reload. It implements gate.Gate.
//
// Begin is called by the relay's client→child pump alone (one goroutine at
// a time); Current, Reload and ReloadFile are safe from any goroutine.
// Reloads are serialised. A frame decided under one rule set keeps it to
// the end, whatever is swapped meanwhile.
type Gate struct {
	cur atomic.Pointer[Policy]
	mu  sync.Mutex // serialises reloads
	fd  frameDecider
}

// NewGate returns a Gate enforcing p.
func NewGate(p *Policy) *Gate {
	g := &Gate{}
	g.cur.Store(p)
	return g
}

// Current returns the rule set in force.
func (g *Gate) Current() *Policy { return g.cur.Load() }

// Begin implements gate.Gate: it takes the rule set in force now for one
// frame. The FrameDecider it returns is the Gate's own and valid until the
// next Begin; it allocates nothing.
func (g *Gate) Begin(now time.Time) gate.FrameDecider {
	g.fd.reset(g.cur.Load(), now)
	return &g.fd
}

// Reload statuses, as policy_reload records them.
const (
	StatusApplied  = "applied"
	statusRejected = "rejected: "
)

// Reload parses data as the new policy file. If it is valid, record is
// called with its set and StatusApplied and, if record succeeds, the new
// rule set replaces the old one atomically (its rate buckets carried over
// from rules with the same pattern and rate). If it is invalid, record is
// called with its set and "rejected: <first problem>" and the old rule set
// stays. Recording before the swap means that every intent decided under
// the new set follows its policy_reload record in the log. Reload returns
// the parse error (a *Error) or record's error.
func (g *Gate) Reload(file string, data []byte, record func(set, status string) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, err := Parse(file, data)
	if err != nil {
		if rerr := record(SetOf(data), rejected(err)); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	if err := record(p.set, StatusApplied); err != nil {
		return err
	}
	p.inherit(g.cur.Load())
	g.cur.Store(p)
	return nil
}

// ReloadFile reads path and reloads it (see Reload). A file that cannot be
// read is rejected too; its record names the set that stays in force.
func (g *Gate) ReloadFile(path string, record func(set, status string) error) error {
	data, err := ReadFile(path)
	if err != nil {
		if rerr := record(g.Current().Set(), rejected(err)); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return g.Reload(path, data, record)
}

// rejected is the status of a rejected reload: its first problem and how
// many more there are.
func rejected(err error) string {
	var perr *Error
	if errors.As(err, &perr) && len(perr.Diags) > 0 {
		s := statusRejected + perr.Diags[0].String()
		if n := len(perr.Diags) - 1; n > 0 {
			s += fmt.Sprintf(" (and %d more)", n)
		}
		return s
	}
	return statusRejected + err.Error()
}

// frameDecider decides the calls of one frame (gate.FrameDecider). tally counts
// the calls decided so far under each rate-limited rule, so that a batch of
// k calls to a rule needs k tokens; Commit takes them.
type frameDecider struct {
	p     *Policy
	now   time.Time
	tally []tally
}

type tally struct {
	rule, n int
}

func (f *frameDecider) reset(p *Policy, now time.Time) {
	f.p, f.now, f.tally = p, now, f.tally[:0]
}

func (f *frameDecider) Set() string { return f.p.set }

// Decide decides a call by its tool name: rules name tools, and nothing
// else of the call.
func (f *frameDecider) Decide(c *gate.Call) gate.Decision { return f.decideTool(c.Tool) }

func (f *frameDecider) decideTool(tool []byte) gate.Decision {
	i := f.p.Match(tool)
	k := 0
	if i >= 0 && f.p.lim[i] != nil && f.p.rules[i].Action == Allow {
		k = f.count(i)
	}
	return f.p.decide(i, k, f.now)
}

// count adds one call to rule i's tally and returns the new count. Frames
// carry few calls, so a slice beats a map.
func (f *frameDecider) count(i int) int {
	for j := range f.tally {
		if f.tally[j].rule == i {
			f.tally[j].n++
			return f.tally[j].n
		}
	}
	f.tally = append(f.tally, tally{rule: i, n: 1})
	return 1
}

func (f *frameDecider) Commit() {
	for _, t := range f.tally {
		// Decide saw the tokens there at f.now; the pump is the only
		// taker, so this cannot fail short of a bucket shared with a
		// concurrent Policy.Decide, which then wins the race.
		f.p.lim[t.rule].AllowN(f.now, t.n)
	}
	f.tally = f.tally[:0]
}
