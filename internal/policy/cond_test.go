package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
)

// TestWhenRejected: a condition that does not type-check, is not a bool,
// or is not a string refuses the policy, with the rule's line and CEL's
// reason.
func TestWhenRejected(t *testing.T) {
	rule := func(when string) string {
		return "version: 1\ndefault: deny\nrules:\n  - tool: read_file\n    action: allow\n    when: " + when + "\n"
	}
	tests := []struct {
		name, src, want string
	}{
		{"undeclared variable", rule(`mcp.tool.nmae == "x"`), `6:11: rules[0].when: undeclared reference to 'mcp.tool.nmae'`},
		{"wrong type", rule(`'mcp.tool.name + 1 == "x"'`), `6:11: rules[0].when: found no matching overload for '_+_' applied to '(string, int)'`},
		{"not a bool", rule(`mcp.tool.name`), `6:11: rules[0].when: the condition is of type string; want bool`},
		{"dyn is not a bool", rule(`mcp.tool.arguments.flag`), `6:11: rules[0].when: the condition is of type dyn; want bool`},
		{"syntax", rule(`'mcp.tool.name =='`), `6:11: rules[0].when: Syntax error`},
		{"empty", rule(`""`), `6:11: rules[0].when: empty condition`},
		{"not a string", rule(`true`), `6:11: rules[0].when: want a string, not bool "true"`},
		{"unknown function", rule(`'mcp.tool.name.shout()'`), `6:11: rules[0].when: undeclared reference to 'shout' (condition line 1, column 20)`},
		{"too long", rule(strings.Repeat("true && ", 600) + "true"), `6:11: rules[0].when: condition of 4804 bytes; at most 4096`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse = nil error; want %s", tt.want)
			}
			if !strings.Contains(err.Error(), "p.yaml:"+tt.want) {
				t.Errorf("Parse = %v; want p.yaml:%s…", err, tt.want)
			}
		})
	}
}

// TestWhenShadow: a rule with a condition shadows no later rule, and an
// earlier rule without one shadows it.
func TestWhenShadow(t *testing.T) {
	ok := "version: 1\ndefault: deny\nrules:\n  - tool: \"*\"\n    action: deny\n    when: caller.id != \"uid:0\"\n  - tool: read_file\n    action: allow\n    when: mcp.round == 1\n  - tool: read_file\n    action: deny\n"
	if _, err := Parse("p.yaml", []byte(ok)); err != nil {
		t.Errorf("Parse(conditional rules first) = %v; want accepted", err)
	}
	dead := "version: 1\ndefault: deny\nrules:\n  - tool: read_file\n    action: deny\n  - tool: read_file\n    action: allow\n    when: mcp.round == 1\n"
	_, err := Parse("p.yaml", []byte(dead))
	if err == nil || !strings.Contains(err.Error(), `rules[1] "read_file" can never match`) {
		t.Errorf("Parse(a conditional rule after the same name) = %v; want rules[1] can never match", err)
	}
}

const pathPolicy = `version: 1
default: deny
rules:
  - tool: read_file
    action: allow
    when: 'mcp.tool.arguments.path.startsWith("/srv/data/") && !mcp.tool.arguments.path.contains("..")'
  - tool: read_file
    action: deny
  - tool: echo
    action: allow
    when: mcp.tool.name == "echo" || mcp.tool.arguments.x == 1
  - tool: "*"
    action: allow
`

// TestWhenDecide: a condition that holds lets its rule decide; one that
// does not hands the call to the next rule that matches; one that errors,
// or that reads arguments some decoder reads differently, refuses the
// call by its own rule with the reason, and no later rule is asked.
func TestWhenDecide(t *testing.T) {
	p := mustParse(t, pathPolicy)
	g := NewGate(p)
	const allowRule = `rules[0] read_file when mcp.tool.arguments.path.startsWith("/srv/data/") && !mcp.tool.arguments.path.contains("..")`
	tests := []struct {
		name    string
		tool    string
		args    string // "" for none
		unclear bool
		verdict gate.Verdict
		rule    string
		line    int
		reason  string // a substring; "" for none
	}{
		{"holds", "read_file", `{"path":"/srv/data/a.txt"}`, false, gate.Allowed, allowRule, 4, ""},
		{"does not hold", "read_file", `{"path":"/etc/passwd"}`, false, gate.Denied, "rules[1] read_file", 7, ""},
		{"dot dot", "read_file", `{"path":"/srv/data/../../etc/passwd"}`, false, gate.Denied, "rules[1] read_file", 7, ""},
		{"missing key", "read_file", `{"file":"/srv/data/a"}`, false, gate.Denied, allowRule, 4, "condition: no such key: path"},
		{"no arguments", "read_file", "", false, gate.Denied, allowRule, 4, "condition: no such key: path"},
		{"wrong type", "read_file", `{"path":7}`, false, gate.Denied, allowRule, 4, "condition: no such overload"},
		{"arguments not an object", "read_file", `["/srv/data/a"]`, false, gate.Denied, allowRule, 4, "condition:"},
		{"duplicate key", "read_file", `{"path":"/srv/data/a","path":"/etc/passwd"}`, false, gate.Denied, allowRule, 4, `arguments: duplicate key "path"`},
		{"duplicate by escape", "read_file", `{"path":"/srv/data/a","p\u0061th":"/etc/passwd"}`, false, gate.Denied, allowRule, 4, `arguments: duplicate key "path"`},
		{"duplicate deep", "read_file", `{"path":"/srv/data/a","opts":{"o":[{"k":1,"k":2}]}}`, false, gate.Denied, allowRule, 4, `arguments: duplicate key "k"`},
		{"case variant", "read_file", `{"path":"/srv/data/a","Path":"/etc/passwd"}`, false, gate.Denied, allowRule, 4, `arguments: keys "path" and "Path" differ only by case`},
		{"kelvin sign", "read_file", `{"path":"/srv/data/a","o":{"k":1,"\u212a":2}}`, false, gate.Denied, allowRule, 4, `differ only by case`},
		{"big integer", "read_file", `{"path":"/srv/data/a","n":9007199254740993}`, false, gate.Denied, allowRule, 4, "number 9007199254740993 is beyond float64's exact range"},
		{"2^53 is exact", "read_file", `{"path":"/srv/data/a","n":9007199254740992}`, false, gate.Allowed, allowRule, 4, ""},
		{"float overflow", "read_file", `{"path":"/srv/data/a","n":1e400}`, false, gate.Denied, allowRule, 4, "beyond float64's range"},
		{"lone surrogate", "read_file", `{"path":"/srv/data/\ud800"}`, false, gate.Denied, allowRule, 4, "unpaired surrogate"},
		{"surrogate pair", "read_file", `{"path":"/srv/data/\ud83d\ude00"}`, false, gate.Allowed, allowRule, 4, ""},
		{"high then other escape", "read_file", `{"path":"/srv/data/\ud800\u0041"}`, false, gate.Denied, allowRule, 4, "unpaired surrogate"},
		{"escaped backslash is text", "read_file", `{"path":"/srv/data/\\ud800"}`, false, gate.Allowed, allowRule, 4, ""},
		{"escaped NUL", "read_file", `{"path":"/srv/data/a\u0000/../../etc"}`, false, gate.Denied, allowRule, 4, "U+0000"},
		{"invalid UTF-8", "read_file", "{\"path\":\"/srv/data/\xff\"}", false, gate.Denied, allowRule, 4, "invalid UTF-8"},
		{"frame says unclear", "read_file", `{"path":"/srv/data/a"}`, true, gate.Denied, allowRule, 4, "decoders read differently"},
		{"not JSON", "read_file", `{"path":}`, false, gate.Denied, allowRule, 4, "not valid JSON"},
		{"too deep", "read_file", `{"path":"/srv/data/a","d":` + strings.Repeat("[", 400) + strings.Repeat("]", 400) + `}`, false, gate.Denied, allowRule, 4, "nested deeper than"},
		// A condition that reads the arguments refuses unreadable ones
		// even where its other branch would hold on its own: CEL's || and
		// && absorb errors, and a refusal must not depend on that.
		{"or absorbs nothing", "echo", `{"x":1,"x":2}`, false, gate.Denied, `rules[2] echo when mcp.tool.name == "echo" || mcp.tool.arguments.x == 1`, 9, "duplicate key"},
		{"or holds", "echo", `{"x":2}`, false, gate.Allowed, `rules[2] echo when mcp.tool.name == "echo" || mcp.tool.arguments.x == 1`, 9, ""},
		// A rule that does not read the arguments does not refuse them.
		{"unread arguments", "other", `{"x":1,"x":2}`, true, gate.Allowed, `rules[3] *`, 12, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &gate.Call{Tool: []byte(tt.tool), ArgsUnclear: tt.unclear, Round: 1}
			if tt.args != "" {
				c.Args, c.HasArgs = []byte(tt.args), true
			}
			d := g.Begin(time.Unix(1000, 0)).Decide(c)
			if d.Verdict != tt.verdict || d.Rule != tt.rule || d.Line != tt.line || d.Set != p.Set() {
				t.Errorf("Decide(%s %s) = %v by %q line %d; want %v by %q line %d", tt.tool, tt.args, d.Verdict, d.Rule, d.Line, tt.verdict, tt.rule, tt.line)
			}
			if tt.reason == "" && d.Reason != "" || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("Decide(%s %s).Reason = %q; want %q", tt.tool, tt.args, d.Reason, tt.reason)
			}
		})
	}
}

// TestWhenCost: a condition over the cost limit refuses the call; the same
// condition over a small argument decides.
func TestWhenCost(t *testing.T) {
	p := mustParse(t, "version: 1\ndefault: allow\nrules:\n  - tool: q\n    action: allow\n    when: 'mcp.tool.arguments.n.all(i, mcp.tool.arguments.n.all(j, i != j || i == j))'\n")
	list := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"n":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, i)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	g := NewGate(p)
	small := g.Begin(time.Now()).Decide(&gate.Call{Tool: []byte("q"), Args: list(10), HasArgs: true})
	if small.Verdict != gate.Allowed || small.Reason != "" {
		t.Errorf("Decide(10 items) = %+v; want allowed by rules[0]", small)
	}
	big := g.Begin(time.Now()).Decide(&gate.Call{Tool: []byte("q"), Args: list(1000), HasArgs: true})
	if big.Verdict != gate.Denied || !strings.HasPrefix(big.Rule, "rules[0] q when") || !strings.Contains(big.Reason, "cost limit exceeded") {
		t.Errorf("Decide(1000 items) = %+v; want denied by rules[0], cost limit exceeded", big)
	}
}

// TestWhenVariables: each variable reads what the call and the gate say.
func TestWhenVariables(t *testing.T) {
	http := &gate.Caller{Transport: "http", Peer: "127.0.0.1:5555", Principal: "token:ci"}
	stdio := &gate.Caller{Principal: "uid:1000"}
	tests := []struct {
		when   string
		call   gate.Call
		server string
		want   bool
	}{
		{`mcp.tool.name == "t"`, gate.Call{Tool: []byte("t")}, "", true},
		{`caller.id == "token:ci"`, gate.Call{Tool: []byte("t"), Caller: http}, "", true},
		{`caller.id == "token:ci"`, gate.Call{Tool: []byte("t"), Caller: stdio}, "", false},
		{`caller.transport == "stdio" && caller.id == "uid:1000"`, gate.Call{Tool: []byte("t"), Caller: stdio}, "", true},
		{`caller.transport == "http"`, gate.Call{Tool: []byte("t"), Caller: http}, "", true},
		{`source.address == "127.0.0.1" && source.port == 5555`, gate.Call{Tool: []byte("t"), Caller: http}, "", true},
		{`source.address == "::1" && source.port == 443`, gate.Call{Tool: []byte("t"), Caller: &gate.Caller{Transport: "http", Peer: "[::1]:443"}}, "", true},
		{`source.address == "/run/aegis.sock" && source.port == 0`, gate.Call{Tool: []byte("t"), Caller: &gate.Caller{Transport: "http", Peer: "/run/aegis.sock"}}, "", true},
		{`source.address == "" && source.port == 0`, gate.Call{Tool: []byte("t"), Caller: stdio}, "", true},
		{`mcp.tool.target == "github"`, gate.Call{Tool: []byte("t")}, "github", true},
		{`mcp.protocolVersion == "2026-07-28"`, gate.Call{Tool: []byte("t"), Revision: []byte("2026-07-28"), HasRevision: true}, "", true},
		{`mcp.protocolVersion == ""`, gate.Call{Tool: []byte("t")}, "", true},
		{`mcp.round == 2`, gate.Call{Tool: []byte("t"), Round: 2}, "", true},
		{`mcp.tool.arguments.owner == "acme"`, gate.Call{Tool: []byte("t"), Args: []byte(`{"owner":"acme"}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.n == 3`, gate.Call{Tool: []byte("t"), Args: []byte(`{"n":3.0}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.n > 2.5`, gate.Call{Tool: []byte("t"), Args: []byte(`{"n":3}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.?owner.orValue("none") == "none"`, gate.Call{Tool: []byte("t"), Args: []byte(`{}`), HasArgs: true}, "", true},
		{`has(mcp.tool.arguments.owner)`, gate.Call{Tool: []byte("t")}, "", false},
		{`mcp.tool.arguments.cmd.split(" ")[0] in ["ls", "cat"]`, gate.Call{Tool: []byte("t"), Args: []byte(`{"cmd":"ls -l"}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.v == null`, gate.Call{Tool: []byte("t"), Args: []byte(`{"v":null}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.l.size() == 2 && mcp.tool.arguments.l[1].b`, gate.Call{Tool: []byte("t"), Args: []byte(`{"l":[1,{"b":true}]}`), HasArgs: true}, "", true},
		// An object of the arguments is a map as CEL's own are
		// (jsonObject): lookups, size, in, iteration, equality.
		{`mcp.tool.arguments == {"a": 1, "o": {"b": [true]}}`, gate.Call{Tool: []byte("t"), Args: []byte(`{"o":{"b":[true]},"a":1.0}`), HasArgs: true}, "", true},
		{`{"a": 1, "o": {"b": [true]}} == mcp.tool.arguments`, gate.Call{Tool: []byte("t"), Args: []byte(`{"o":{"b":[true]},"a":1}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments != {"a": 1}`, gate.Call{Tool: []byte("t"), Args: []byte(`{"a":1,"b":2}`), HasArgs: true}, "", true},
		{`"a" in mcp.tool.arguments && !("A" in mcp.tool.arguments) && mcp.tool.arguments.size() == 2`, gate.Call{Tool: []byte("t"), Args: []byte(`{"a":1,"b":2}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.all(k, k in ["a", "b"]) && mcp.tool.arguments.exists_one(k, k == "b")`, gate.Call{Tool: []byte("t"), Args: []byte(`{"a":1,"b":2}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.o.filter(k, mcp.tool.arguments.o[k] > 1) == ["y"]`, gate.Call{Tool: []byte("t"), Args: []byte(`{"o":{"x":1,"y":2}}`), HasArgs: true}, "", true},
		{`has(mcp.tool.arguments.o.x) && !has(mcp.tool.arguments.o.z)`, gate.Call{Tool: []byte("t"), Args: []byte(`{"o":{"x":null}}`), HasArgs: true}, "", true},
		{`mcp.tool.arguments.?o.?x.orValue(0) == 5`, gate.Call{Tool: []byte("t"), Args: []byte(`{"o":{"x":5}}`), HasArgs: true}, "", true},
		{`type(mcp.tool.arguments) == map && type(mcp.tool.arguments.o) == map && mcp.tool.arguments.o.size() == 0`, gate.Call{Tool: []byte("t"), Args: []byte(`{"o":{}}`), HasArgs: true}, "", true},
	}
	for _, tt := range tests {
		src := fmt.Sprintf("version: 1\ndefault: deny\nrules:\n  - tool: t\n    action: allow\n    when: %q\n", tt.when)
		g := NewGate(mustParse(t, src))
		g.SetServer(tt.server)
		d := g.Begin(time.Now()).Decide(&tt.call)
		if got := d.Verdict == gate.Allowed; got != tt.want || d.Reason != "" {
			t.Errorf("when %s: Decide = %+v; want holds=%v", tt.when, d, tt.want)
		}
	}
}

// TestWhenRate: a conditional allow rule's rate counts the calls it
// allows; calls its condition hands on take none of its tokens.
func TestWhenRate(t *testing.T) {
	g := NewGate(mustParse(t, "version: 1\ndefault: allow\nrules:\n  - tool: s\n    action: allow\n    rate: 1/m\n    when: mcp.tool.arguments.q == \"a\"\n"))
	now := time.Unix(1000, 0)
	call := func(q string) gate.Decision {
		fr := g.Begin(now)
		d := fr.Decide(&gate.Call{Tool: []byte("s"), Args: []byte(`{"q":"` + q + `"}`), HasArgs: true})
		if !d.Refused() {
			fr.Commit()
		}
		return d
	}
	if d := call("a"); d.Verdict != gate.Allowed || d.Rule == DefaultLabel {
		t.Fatalf("first a = %+v; want allowed by rules[0]", d)
	}
	if d := call("b"); d.Verdict != gate.Allowed || d.Rule != DefaultLabel {
		t.Fatalf("b = %+v; want allowed by default", d)
	}
	if d := call("a"); d.Verdict != gate.RateLimited {
		t.Fatalf("second a = %+v; want rate_limited", d)
	}
}

// TestWhenReload: a reload that does not type-check is rejected, and the
// policy in force stays; a valid one changes the decision, and the set
// says which policy decided.
func TestWhenReload(t *testing.T) {
	g := NewGate(mustParse(t, pathPolicy))
	old := g.Current().Set()
	var statuses []string
	record := func(set, status string) error { statuses = append(statuses, status); return nil }
	if err := g.Reload("p.yaml", []byte(strings.Replace(pathPolicy, "startsWith", "startsWit", 1)), record); err == nil {
		t.Fatal("Reload(a condition that does not type-check) = nil; want rejected")
	}
	if g.Current().Set() != old || len(statuses) != 1 || !strings.HasPrefix(statuses[0], "rejected: p.yaml:6:11: rules[0].when: undeclared reference to 'startsWit'") {
		t.Fatalf("after a bad reload: set %s, statuses %q; want the old set and one rejection", g.Current().Set(), statuses)
	}
	c := &gate.Call{Tool: []byte("read_file"), Args: []byte(`{"path":"/srv/other/a"}`), HasArgs: true}
	if d := g.Begin(time.Now()).Decide(c); d.Verdict != gate.Denied || d.Set != old {
		t.Fatalf("before: %+v; want denied under %s", d, old)
	}
	if err := g.Reload("p.yaml", []byte(strings.Replace(pathPolicy, "/srv/data/", "/srv/", 1)), record); err != nil {
		t.Fatal(err)
	}
	if d := g.Begin(time.Now()).Decide(c); d.Verdict != gate.Allowed || d.Set == old {
		t.Fatalf("after: %+v; want allowed under the new set", d)
	}
}
