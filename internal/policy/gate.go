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
	cur    atomic.Pointer[Policy]
	mu     sync.Mutex // serialises reloads
	fd     frameDecider
	server string
}

// NewGate returns a Gate enforcing p.
func NewGate(p *Policy) *Gate {
	g := &Gate{}
	g.cur.Store(p)
	return g
}

// SetServer names the server whose calls the gate decides (wrap's
// --name): conditions read it as mcp.tool.target. Call it before the
// first Begin; it is not synchronised with Begin.
func (g *Gate) SetServer(name string) { g.server = name }

// Current returns the rule set in force.
func (g *Gate) Current() *Policy { return g.cur.Load() }

// Begin implements gate.Gate: it takes the rule set in force now for one
// frame. The FrameDecider it returns is the Gate's own and valid until the
// next Begin; it allocates nothing.
func (g *Gate) Begin(now time.Time) gate.FrameDecider {
	g.fd.reset(g.cur.Load(), now)
	g.fd.target = g.server
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
// k calls to a rule needs k tokens; Commit takes them. args is reused from
// call to call.
type frameDecider struct {
	p      *Policy
	now    time.Time
	tally  []tally
	target string
	v      vars
	args   argsReader
}

type tally struct {
	rule, n int
}

func (f *frameDecider) reset(p *Policy, now time.Time) {
	f.p, f.now, f.tally = p, now, f.tally[:0]
}

func (f *frameDecider) Set() string { return f.p.set }

// Decide decides a call: the first rule whose pattern matches the tool's
// name and whose condition, if it has one, holds. A condition that cannot
// be evaluated (an error, the cost limit), or that reads arguments some
// decoder reads differently (argsReader), refuses the call by its rule,
// with the reason; it never lets the call through, and no later rule is
// asked.
func (f *frameDecider) Decide(c *gate.Call) gate.Decision {
	p := f.p
	f.v.reset(c, f.target)
	defer f.v.reset(nil, "") // the call's bytes are not kept
	read, unclear := false, ""
	for i := p.Match(c.Tool); i >= 0; i = p.matchFrom(c.Tool, i+1) {
		r := &p.rules[i]
		if r.cond == nil {
			return f.decideRule(i)
		}
		if r.cond.readArgs && !read {
			read = true
			if c.ArgsUnclear {
				unclear = "arguments: text that decoders read differently (invalid UTF-8, an unpaired surrogate, U+0000)"
			} else {
				f.v.args, unclear = f.args.read(c.Args, c.HasArgs)
			}
		}
		if r.cond.readArgs && unclear != "" {
			return p.refuse(i, unclear)
		}
		ok, err := r.cond.eval(&f.v)
		if err != nil {
			return p.refuse(i, "condition: "+err.Error())
		}
		if ok {
			return f.decideRule(i)
		}
	}
	return f.decideRule(-1)
}

// decideRule is the decision of rule i (-1: the default) on a call.
func (f *frameDecider) decideRule(i int) gate.Decision {
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
