package policy

import (
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aegisrelay/aegis/internal/gate"
	"golang.org/x/time/rate"
)

// Action is what a rule does with the calls it matches.
type Action uint8

// The actions. Their names are part of the file format.
const (
	Allow   Action = iota + 1 // relay the call (within the rule's rate, if any)
	Deny                      // refuse it: POLICY_DENIED
	Approve                   // answer PENDING_APPROVAL at once; the call does not wait (doc.go)
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Approve:
		return "approve"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Rule is one rule of a policy, as written.
type Rule struct {
	Index        int    // position in rules, from 0
	Tool         string // the pattern as written: an exact name or a glob
	Action       Action
	Rate         Rate   // N == 0: no rate
	When         string // the condition as written; "" for none
	Line, Column int    // of the tool pattern in the file

	glob  glob
	cond  *cond  // nil: no condition
	label string // "rules[i] pattern[ when …]": the "rule" of records and refusals
}

// Label is how records and refusal frames name the rule: "rules[i]" and
// the pattern as written, such as `rules[1] delete_*`, and for a rule with
// a condition " when " and the condition, its white space runs made one
// space. The default is named DefaultLabel.
func (r *Rule) Label() string { return r.label }

// DefaultLabel names the policy's default in records and refusal frames.
const DefaultLabel = "default"

// Policy is one parsed policy file: an immutable rule set with an index for
// deciding tool names by lookup, and the token buckets of its rates. It is
// safe for concurrent use. Make one with Parse or Load.
type Policy struct {
	file    string
	set     string
	def     Action
	defLine int
	rules   []Rule
	onTool  string // on_tool_change (toolchange.go): "" when absent
	idx     index
	lim     []*rate.Limiter // by rule; nil where the rule has no rate

	// cache remembers the deciding rule of names the index could not
	// decide by lookup alone (policies with globs like "*x*"). It is
	// bounded; names beyond the bound are decided afresh each time.
	useCache bool
	mu       sync.Mutex
	cache    map[string]int32
}

const (
	maxCache      = 4096
	maxCachedName = 256
)

// Set names the rule set: "sha256:<hex>" of the file's bytes.
func (p *Policy) Set() string { return p.set }

// File is the name the policy was parsed under.
func (p *Policy) File() string { return p.file }

// Default is the action for a tool no rule matches.
func (p *Policy) Default() Action { return p.def }

// Rules returns the rules in order. The slice is the policy's own: do not
// modify it.
func (p *Policy) Rules() []Rule { return p.rules }

func (p *Policy) build() {
	for i := range p.rules {
		r := &p.rules[i]
		r.label = "rules[" + strconv.Itoa(i) + "] " + r.Tool
		if r.cond != nil {
			r.label += " when " + strings.Join(strings.Fields(r.When), " ")
		}
	}
	p.idx = newIndex(p.rules)
	p.useCache = len(p.idx.scan) > 4
	if p.useCache {
		p.cache = make(map[string]int32)
	}
	p.lim = make([]*rate.Limiter, len(p.rules))
	for i := range p.rules {
		if r := &p.rules[i]; r.Rate.N > 0 {
			p.lim[i] = r.Rate.limiter()
		}
	}
}

// inherit takes over the token buckets of old's rules that have the same
// pattern, condition and rate, so that a reload (even of the same file) does not
// refill them.
func (p *Policy) inherit(old *Policy) {
	if old == nil {
		return
	}
	type key struct {
		tool, when string
		rate       Rate
	}
	prev := map[key]*rate.Limiter{}
	for i := range old.rules {
		if l := old.lim[i]; l != nil {
			prev[key{old.rules[i].Tool, old.rules[i].When, old.rules[i].Rate}] = l
		}
	}
	for i := range p.rules {
		if l := prev[key{p.rules[i].Tool, p.rules[i].When, p.rules[i].Rate}]; l != nil && p.lim[i] != nil {
			p.lim[i] = l
		}
	}
}

// Match returns the index of the first rule whose pattern matches tool,
// or -1 when none does and the default decides. That rule decides a call
// to tool unless it has a condition that does not hold; then the next
// rule whose pattern matches is asked (matchFrom). It allocates nothing
// once the name is cached or when the index decides it by lookup.
func (p *Policy) Match(tool []byte) int {
	if !p.useCache || len(tool) > maxCachedName {
		return p.idx.lookup(p.rules, tool)
	}
	p.mu.Lock()
	i, ok := p.cache[string(tool)]
	p.mu.Unlock()
	if ok {
		return int(i)
	}
	j := p.idx.lookup(p.rules, tool)
	p.mu.Lock()
	if len(p.cache) < maxCache {
		p.cache[string(tool)] = int32(j)
	}
	p.mu.Unlock()
	return j
}

// matchFrom returns the index of the first rule at or after from whose
// pattern matches tool, or -1.
func (p *Policy) matchFrom(tool []byte, from int) int {
	if from == 0 {
		return p.Match(tool)
	}
	return p.idx.lookupFrom(p.rules, tool, from)
}

// matchLinear is Match by a scan of every rule in order: the definition
// Match is tested against.
func (p *Policy) matchLinear(tool []byte) int {
	for i := range p.rules {
		if p.rules[i].glob.match(tool) {
			return i
		}
	}
	return -1
}

// action returns the deciding action, label and line of rule i (-1:
// default).
func (p *Policy) action(i int) (Action, string, int) {
	if i < 0 {
		return p.def, DefaultLabel, p.defLine
	}
	return p.rules[i].Action, p.rules[i].label, p.rules[i].Line
}

// Decide decides one call at now, taking a rate token if the rule has a
// rate. The relay decides through a Gate instead, which takes tokens only
// for frames that are relayed; Decide is for callers outside a relay.
// Conditions read c, and server as mcp.tool.target.
func (p *Policy) Decide(c *gate.Call, server string, now time.Time) gate.Decision {
	var fd frameDecider
	fd.reset(p, now)
	fd.target = server
	d := fd.Decide(c)
	fd.Commit()
	return d
}

// maxReason bounds a refusal's reason: an evaluation error may quote a
// value of the arguments, and the reason is recorded.
const maxReason = 512

// refuse is the decision of rule i refusing a call whose condition it
// could not decide, with why.
func (p *Policy) refuse(i int, why string) gate.Decision {
	_, label, line := p.action(i)
	if len(why) > maxReason {
		k := maxReason
		for k > 0 && !utf8.RuneStart(why[k]) {
			k--
		}
		why = why[:k] + "…"
	}
	return gate.Decision{Verdict: gate.Denied, Rule: label, Set: p.set, Line: line, Reason: strings.ToValidUTF8(why, "\ufffd")}
}

// decide is the verdict of the k-th call of a frame to rule i (k counts
// from 1 and matters only for rates).
func (p *Policy) decide(i, k int, now time.Time) gate.Decision {
	act, label, line := p.action(i)
	d := gate.Decision{Rule: label, Set: p.set, Line: line}
	switch act {
	case Deny:
		d.Verdict = gate.Denied
	case Approve:
		d.Verdict = gate.PendingApproval
	default:
		d.Verdict = gate.Allowed
		if i >= 0 && p.lim[i] != nil {
			l := p.lim[i]
			if have := l.TokensAt(now); have < float64(k) {
				d.Verdict = gate.RateLimited
				d.RetryAfter = time.Duration((float64(k) - have) / float64(l.Limit()) * float64(time.Second))
			}
		}
	}
	return d
}
