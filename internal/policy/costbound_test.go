package policy

import (
	"strings"
	"sync"
	"testing"

	"cel.dev/cel-go/cel"

	"github.com/aegisrelay/aegis/internal/gate"
)

// boundConds are conditions of every shape the static bound treats
// differently: constant cost, cost linear in a string's length, in a
// list's, quadratic in it, and computed values (split, optional, index).
var boundConds = []string{
	`mcp.tool.arguments.path.startsWith("/srv/data/") && caller.id == "uid:1000"`,
	`mcp.tool.arguments.path.startsWith("/srv/data/") && !mcp.tool.arguments.path.contains("..")`,
	`mcp.tool.arguments.path.matches("^/srv/[a-z]+$")`,
	`mcp.tool.arguments.path.split("/")[0] in ["ls", "cat"]`,
	`mcp.tool.arguments.path.lowerAscii().endsWith(".csv")`,
	`mcp.tool.arguments.path + mcp.tool.arguments.path == mcp.tool.name`,
	`mcp.tool.arguments.n.exists(i, i == 3)`,
	`mcp.tool.arguments.n.all(i, mcp.tool.arguments.n.all(j, i != j || i == j))`,
	`mcp.tool.arguments.n.map(i, [i, i]).size() > 0`,
	`mcp.tool.arguments.exists(k, k == "x") && mcp.tool.arguments.?o.orValue({}).size() == 0`,
	`mcp.tool.arguments == {"path": "x"} || mcp.tool.arguments["path"] == caller.id`,
	`source.address.startsWith("10.") && mcp.tool.target == "t" && mcp.protocolVersion == ""`,
}

// tracking holds a program per condition text that tracks its cost, for
// trackedCost.
var tracking sync.Map

// trackedCost evaluates c over v with CEL's cost tracking: what the
// evaluation costs as the limit counts it, or MaxCost+1 past the limit.
func trackedCost(t testing.TB, c *cond, v *vars) uint64 {
	t.Helper()
	p, ok := tracking.Load(c.text)
	if !ok {
		env, err := celEnv()
		if err != nil {
			t.Fatal(err)
		}
		ast, iss := env.Compile(c.text)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		prg, err := env.Program(ast, cel.CostLimit(MaxCost), cel.EvalOptions(cel.OptTrackCost))
		if err != nil {
			t.Fatal(err)
		}
		p, _ = tracking.LoadOrStore(c.text, prg)
	}
	_, det, err := p.(cel.Program).Eval(v)
	if err != nil && strings.Contains(err.Error(), "cost limit exceeded") {
		return MaxCost + 1
	}
	if det == nil || det.ActualCost() == nil {
		t.Fatalf("%s: no cost tracked", c.text)
	}
	return *det.ActualCost()
}

// argsOfSize are arguments of at most n bytes that make the conditions
// above cost the most: the longest path, the longest list of numbers, the
// most keys.
func argsOfSize(n int) []string {
	var out []string
	if k := n - len(`{"path":""}`); k >= 0 {
		out = append(out, `{"path":"`+strings.Repeat("/", k)+`"}`)
	}
	if k := (n - len(`{"n":[]}`) + 1) / 2; k >= 1 {
		out = append(out, `{"n":[`+strings.Repeat("3,", k-1)+`3]}`)
	}
	if k := (n - 1) / len(`"a":0,`); k >= 1 {
		var b strings.Builder
		b.WriteByte('{')
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + string(rune('a'+i%26)) + strings.Repeat("_", i/26) + `":0`)
		}
		b.WriteByte('}')
		if b.Len() <= n {
			out = append(out, b.String())
		}
	}
	return out
}

// TestFastBound: a condition runs without cost tracking only for calls
// its static bound covers, and over them it costs, as the limit counts
// it, at most MaxCost: the limit holds on the fast path too. Each
// condition is run on the largest arguments its bound lets through.
func TestFastBound(t *testing.T) {
	caller := &gate.Caller{Principal: "uid:1000"}
	for _, w := range boundConds {
		c, err := compileCond(w)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if c.fastMax == 0 {
			continue
		}
		t.Logf("%s: fastMax %d", w, c.fastMax)
		for _, n := range []int{64, 4096, min(c.fastMax, 64<<10)} {
			if n > c.fastMax {
				continue
			}
			for _, args := range argsOfSize(n) {
				call := &gate.Call{Tool: []byte("t"), Args: []byte(args), HasArgs: true, Caller: caller}
				var v vars
				v.reset(call, "t")
				var ar argsReader
				var why string
				if v.args, why = ar.read(call.Args, true); why != "" {
					t.Fatalf("%.40s: %s", args, why)
				}
				if v.size > c.fastMax {
					t.Fatalf("%s: arguments of %d bytes over fastMax %d", w, v.size, c.fastMax)
				}
				if got := trackedCost(t, c, &v); got > MaxCost {
					t.Errorf("%s over %d bytes (fastMax %d) costs %d; the fast path runs it, past MaxCost %d", w, len(args), c.fastMax, got, MaxCost)
				}
			}
		}
	}
}

// TestFastBoundChoice: a condition of constant cost always runs fast, a
// quadratic one only for small calls (TestWhenCost: past the bound, the
// cost is tracked and stopped at MaxCost).
func TestFastBoundChoice(t *testing.T) {
	for _, tt := range []struct {
		when     string
		min, max int
	}{
		{`caller.id == "token:ci"`, maxFast, maxFast},
		{`mcp.tool.arguments.owner == "acme"`, maxFast, maxFast},
		{`mcp.tool.arguments.n.all(i, mcp.tool.arguments.n.all(j, i != j || i == j))`, 16, 4096},
	} {
		c, err := compileCond(tt.when)
		if err != nil {
			t.Fatal(err)
		}
		if c.fastMax < tt.min || c.fastMax > tt.max || (c.fast == nil) != (c.fastMax == 0) {
			t.Errorf("%s: fastMax %d; want %d..%d", tt.when, c.fastMax, tt.min, tt.max)
		}
	}
}
