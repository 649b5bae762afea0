package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// rulesOnArgs reads read_file's arguments; echo's rule reads none.
const rulesOnArgs = `version: 1
default: deny
rules:
  - tool: read_file
    action: allow
    when: 'mcp.tool.arguments.path.startsWith("/srv/data/")'
  - tool: echo
    action: allow
    when: 'caller.transport == "stdio"'
`

// unclearText is the reason for text the relay's frame reader finds
// decoders read differently.
const unclearText = "arguments: text that decoders read differently (invalid UTF-8, an unpaired surrogate, U+0000)"

const readRule = `rules[0] read_file when mcp.tool.arguments.path.startsWith("/srv/data/")`

// rawCall is a tools/call line whose arguments are args as written.
func rawCall(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// TestRulesArgumentsReadersDisagree: through the real binary over stdio,
// raw lines whose arguments two decoders read differently (the rule's
// reading of path allows, another reading names another file) are each
// refused by the rule that reads the arguments, with the refusal frame
// naming the rule and the intent saying why; the same arguments to a tool
// whose rule does not read them reach the child; clean arguments pass.
func TestRulesArgumentsReadersDisagree(t *testing.T) {
	f := newFixture(t)
	path, set := f.writePolicy(t, "rules.yaml", rulesOnArgs)
	childLog := filepath.Join(f.dir, "child.log")
	s := f.start(t, []string{"--policy", path}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)

	tests := []struct {
		name, args, reason string
	}{
		{"duplicate key", `{"path":"/srv/data/a","path":"/etc/passwd"}`, `arguments: duplicate key "path"`},
		{"case variant", `{"path":"/srv/data/a","Path":"/etc/passwd"}`, `arguments: keys "path" and "Path" differ only by case`},
		{"escaped duplicate", `{"path":"/srv/data/a","p\u0061th":"/etc/passwd"}`, `arguments: duplicate key "path"`},
		{"duplicate deep", `{"path":"/srv/data/a","opts":[{"mode":"r","mode":"w"}]}`, `arguments: duplicate key "mode"`},
		{"kelvin sign", `{"path":"/srv/data/a","o":{"k":1,"\u212a":2}}`, "arguments: keys \"k\" and \"\u212a\" differ only by case"},
		// The relay's frame reader finds these in the line already.
		{"lone surrogate", `{"path":"/srv/data/\ud800/../../etc/passwd"}`, unclearText},
		{"escaped NUL", `{"path":"/srv/data/a\u0000/../../../etc/passwd"}`, unclearText},
		{"invalid UTF-8", "{\"path\":\"/srv/data/\xff/../../etc/passwd\"}", unclearText},
		{"big integer", `{"path":"/srv/data/a","n":9007199254740993}`, `arguments: number 9007199254740993 is beyond float64's exact range (±2^53)`},
		{"big float", `{"path":"/srv/data/a","n":1e400}`, `arguments: number 1e400 is beyond float64's range`},
	}
	id := 0
	next := func() string { id++; return strconv.Itoa(id) }
	var relayed []string  // the lines the child must read
	var want []wantIntent // the intents, in order
	for _, tt := range tests {
		n := next()
		line := rawCall(n, "read_file", tt.args)
		s.send(line)
		if got, w := s.recv(), refusal(n, "POLICY_DENIED", readRule); got != w {
			t.Errorf("%s: client read\n%s\nwant\n%s", tt.name, got, w)
		}
		want = append(want, wantIntent{tt.name, line, record.VerdictDenied, readRule, tt.reason})

		// The rule for echo does not read the arguments: they pass.
		n = next()
		line = rawCall(n, "echo", tt.args)
		s.send(line)
		relayed = append(relayed, line)
		if got, w := s.recv(), ran(n, "echo"); got != w {
			t.Errorf("%s to echo: client read\n%s\nwant\n%s", tt.name, got, w)
		}
		want = append(want, wantIntent{tt.name + " to echo", line, record.VerdictAllowed, `rules[1] echo when caller.transport == "stdio"`, ""})
	}
	n := next()
	clean := rawCall(n, "read_file", `{"path":"/srv/data/a","mode":"r","n":9007199254740992}`)
	s.send(clean)
	relayed = append(relayed, clean)
	if got, w := s.recv(), ran(n, "read_file"); got != w {
		t.Errorf("clean arguments: client read\n%s\nwant\n%s", got, w)
	}
	want = append(want, wantIntent{"clean", clean, record.VerdictAllowed, readRule, ""})

	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	if got := readLines(t, childLog); !slices.Equal(got, relayed) {
		t.Errorf("child read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(relayed, "\n"))
	}
	intents := intentsOf(f.records(t))
	if len(intents) != len(want) {
		t.Fatalf("%d intents; want %d", len(intents), len(want))
	}
	for i, w := range want {
		in := intents[i]
		refused := w.verdict != record.VerdictAllowed
		if in.RequestDigest != lineDigest(w.line) || in.Verdict != w.verdict || in.Rule != w.rule || in.Set != set || in.Refused != refused {
			t.Errorf("%s: intent %s %q %s refused=%v; want %s %q %s refused=%v", w.name, in.Verdict, in.Rule, in.Set, in.Refused, w.verdict, w.rule, set, refused)
		}
		if w.reason == "" && in.PolicyReason != "" || !strings.HasPrefix(in.PolicyReason, w.reason) {
			t.Errorf("%s: intent reason %q; want %q", w.name, in.PolicyReason, w.reason)
		}
		if refused && in.RuleLine != 4 {
			t.Errorf("%s: intent line %d; want 4 (the rule's)", w.name, in.RuleLine)
		}
	}
}

type wantIntent struct {
	name, line, verdict, rule, reason string
}
