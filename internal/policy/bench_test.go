package policy

import (
	"github.com/aegisrelay/aegis/internal/gate"

	"fmt"
	"strings"
	"testing"
	"time"
)

// thousandRules is a 1,000-rule policy of every shape the index treats
// differently (exact names, prefix globs, suffix globs, and a few that
// must be scanned), none of which matches "echo"; the last rule allows it.
// The end-to-end benchmark in cmd/aegis uses the same shape.
func thousandRules(scanned int) string {
	var b strings.Builder
	b.WriteString("version: 1\ndefault: deny\nrules:\n")
	for i := range 999 {
		var pat string
		switch {
		case i < scanned:
			pat = fmt.Sprintf("*x%03d*", i)
		case i%3 == 0:
			pat = fmt.Sprintf("tool_%03d", i)
		case i%3 == 1:
			pat = fmt.Sprintf("ns%03d_*", i)
		default:
			pat = fmt.Sprintf("*_adm%03d", i)
		}
		fmt.Fprintf(&b, "  - tool: %q\n    action: %s\n", pat, []string{"deny", "allow"}[i%2])
	}
	b.WriteString("  - tool: echo\n    action: allow\n")
	return b.String()
}

// BenchmarkDecide is the cost of deciding one call, as the relay does it
// (Begin, Decide, Commit), under one rule and under 1,000, beside a scan of
// the 1,000 rules in order, which is what the index saves.
//
//	go test -run XXX -bench Decide ./internal/policy/
func BenchmarkDecide(b *testing.B) {
	one := mustParse(b, "version: 1\ndefault: deny\nrules:\n  - tool: echo\n    action: allow\n")
	thousand := mustParse(b, thousandRules(0))
	scanned := mustParse(b, thousandRules(50))
	rated := mustParse(b, strings.Replace(thousandRules(0), "  - tool: echo\n    action: allow\n", "  - tool: echo\n    action: allow\n    rate: 1000000000/s\n", 1))
	name := []byte("echo")
	call := &gate.Call{Tool: name}
	now := time.Now()
	run := func(p *Policy) func(*testing.B) {
		return func(b *testing.B) {
			g := NewGate(p)
			b.ReportAllocs()
			b.SetBytes(int64(len(name)))
			for b.Loop() {
				fr := g.Begin(now)
				if d := fr.Decide(call); d.Refused() {
					b.Fatalf("echo refused: %+v", d)
				}
				fr.Commit()
			}
		}
	}
	b.Run("rules=1", run(one))
	b.Run("rules=1000", run(thousand))
	b.Run("rules=1000-50-scanned-cached", run(scanned))
	b.Run("rules=1000-rate", run(rated))
	b.Run("rules=1000-linear-scan", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(name)))
		for b.Loop() {
			if thousand.matchLinear(name) != 999 {
				b.Fatal("scan missed rule 999")
			}
		}
	})
	// A name no one has sent before: the scanned globs cannot be cached.
	b.Run("rules=1000-50-scanned-uncached", func(b *testing.B) {
		b.ReportAllocs()
		names := make([][]byte, 8192)
		for i := range names {
			names[i] = fmt.Appendf(nil, "fresh_%05d", i)
		}
		i := 0
		for b.Loop() {
			scanned.idx.lookup(scanned.rules, names[i%len(names)])
			i++
		}
	})
}

// conditional is a policy of n rules for echo, each with a condition on
// its arguments; only the last holds for benchArgs, so a call evaluates
// all n. plain drops the conditions: the floor, where the first rule
// decides by the name alone. others rules for other tools come first.
func conditional(n, others int, plain bool) string {
	var b strings.Builder
	b.WriteString("version: 1\ndefault: deny\nrules:\n")
	for i := range others {
		fmt.Fprintf(&b, "  - tool: other_%04d\n    action: allow\n", i)
	}
	for i := range n {
		fmt.Fprintf(&b, "  - tool: echo\n    action: allow\n")
		if plain {
			break
		}
		prefix := fmt.Sprintf("/srv/d%02d/", i)
		if i == n-1 {
			prefix = "/srv/data/"
		}
		fmt.Fprintf(&b, "    when: 'mcp.tool.arguments.path.startsWith(%q) && caller.id == \"uid:1000\"'\n", prefix)
	}
	return b.String()
}

// BenchmarkConditions is the cost of deciding one call whose rules carry
// conditions on its arguments, beside the same rules without conditions:
// 10 conditional rules that all match the tool (every condition
// evaluated, the arguments read once), the same with CEL's cost tracking
// on every evaluation, the same 10 after 990 rules for other tools (which
// cost a lookup, not an evaluation), and the floor.
//
//	go test -run XXX -bench Conditions ./internal/policy/
func BenchmarkConditions(b *testing.B) {
	args := []byte(`{"path":"/srv/data/report.csv","mode":"r","limit":100}`)
	caller := &gate.Caller{Principal: "uid:1000"}
	call := &gate.Call{Tool: []byte("echo"), Args: args, HasArgs: true, Caller: caller, Round: 1}
	now := time.Now()
	for _, bc := range []struct {
		name    string
		src     string
		tracked bool
	}{
		{"rules=10-plain-floor", conditional(10, 0, true), false},
		{"rules=10-conditional", conditional(10, 0, false), false},
		{"rules=10-conditional-tracked", conditional(10, 0, false), true},
		{"rules=1000-plain-floor", conditional(10, 990, true), false},
		{"rules=1000-10-conditional", conditional(10, 990, false), false},
	} {
		p := mustParse(b, bc.src)
		if bc.tracked {
			// What CEL's cost tracking costs: every condition run as
			// a call past its static bound runs it.
			for i := range p.rules {
				if c := p.rules[i].cond; c != nil {
					c.fast, c.fastMax = nil, 0
				}
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			g := NewGate(p)
			b.ReportAllocs()
			b.SetBytes(int64(len(args)))
			for b.Loop() {
				fr := g.Begin(now)
				if d := fr.Decide(call); d.Verdict != gate.Allowed {
					b.Fatalf("echo = %+v; want allowed", d)
				}
				fr.Commit()
			}
		})
	}
}
