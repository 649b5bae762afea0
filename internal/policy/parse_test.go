package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const exampleFile = `version: 1
default: allow            # allow | deny
rules:                    # first match wins; match is on tool identity only
  - tool: read_file       # exact name, or a glob: "fs_*"
    action: allow
  - tool: "delete_*"
    action: deny
  - tool: write_file
    action: approve       # answered PENDING_APPROVAL at once
  - tool: search
    action: allow
    rate: 10/m            # token bucket per rule; over it: RATE_LIMITED
`

func TestParseExample(t *testing.T) {
	p, err := Parse("p.yaml", []byte(exampleFile))
	if err != nil {
		t.Fatalf("Parse(example) = %v", err)
	}
	if p.Default() != Allow {
		t.Errorf("Default() = %v; want allow", p.Default())
	}
	want := []struct {
		tool   string
		action Action
		rate   Rate
		line   int
	}{
		{"read_file", Allow, Rate{}, 4},
		{"delete_*", Deny, Rate{}, 6},
		{"write_file", Approve, Rate{}, 8},
		{"search", Allow, Rate{10, time.Minute}, 10},
	}
	rules := p.Rules()
	if len(rules) != len(want) {
		t.Fatalf("%d rules; want %d", len(rules), len(want))
	}
	for i, w := range want {
		r := rules[i]
		if r.Tool != w.tool || r.Action != w.action || r.Rate != w.rate || r.Line != w.line || r.Column != 11 {
			t.Errorf("rules[%d] = %q %v %v line %d col %d; want %q %v %v line %d col 11", i, r.Tool, r.Action, r.Rate, r.Line, r.Column, w.tool, w.action, w.rate, w.line)
		}
	}
	if got := p.Set(); got != SetOf([]byte(exampleFile)) || !strings.HasPrefix(got, "sha256:") || len(got) != 71 {
		t.Errorf("Set() = %q; want sha256 of the bytes", got)
	}
}

func TestParseDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // each diagnostic, "line:col: substring"
	}{
		{"empty", "", []string{"1:1: empty policy file"}},
		{"comment only", "# nothing\n", []string{"1:1: empty policy file"}},
		{"not a mapping", "- a\n- b\n", []string{"1:1: a policy is a mapping"}},
		{"syntax", "version: 1\ndefault: deny\n  bad: indentation\n", []string{"3: YAML: mapping values are not allowed"}},
		{"syntax tab", "version: 1\n\tdefault: deny\n", []string{"2: YAML: found a tab character"}},
		{"missing all", "rules: []\n", []string{"1:1: missing version", "1:1: missing default"}},
		{"unknown top key", "version: 1\ndefault: deny\ndefualt: allow\n", []string{`3:1: policy: unknown key "defualt" (want version, default, rules, on_tool_change)`}},
		{"duplicate top key", "version: 1\ndefault: deny\ndefault: allow\n", []string{`3:1: policy: duplicate key "default" (first at line 2)`}},
		{"bad version", "version: 2\ndefault: deny\n", []string{"1:10: version: want 1"}},
		{"version string", "version: \"1\"\ndefault: deny\n", []string{"1:10: version: want 1"}},
		{"bad default", "version: 1\ndefault: approve\n", []string{`2:10: default: "approve"; want allow or deny`}},
		{"default bool", "version: 1\ndefault: true\n", []string{`2:10: default: want a string, not bool "true"`}},
		{"rules not a list", "version: 1\ndefault: deny\nrules: {tool: x}\n", []string{"3:8: rules: want a list"}},
		{"rule not a mapping", "version: 1\ndefault: deny\nrules:\n  - x\n", []string{"4:5: rules[0]: want a mapping"}},
		{"unknown rule key", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: allow\n    args: {}\n", []string{`6:5: rules[0]: unknown key "args" (want tool, action, rate, when)`}},
		{"duplicate tool key", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    tool: y\n    action: allow\n", []string{`5:5: rules[0]: duplicate key "tool" (first at line 4)`}},
		{"missing tool and action", "version: 1\ndefault: deny\nrules:\n  - rate: 1/s\n", []string{"4:5: rules[0]: missing tool", "4:5: rules[0]: missing action"}},
		{"tool int", "version: 1\ndefault: deny\nrules:\n  - tool: 123\n    action: allow\n", []string{`4:11: rules[0].tool: want a string, not int "123" (quote it`}},
		{"tool null", "version: 1\ndefault: deny\nrules:\n  - tool:\n    action: allow\n", []string{`4:10: rules[0].tool: want a string`}},
		{"bad action", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: block\n", []string{`5:13: rules[0].action: "block"; want allow, deny or approve`}},
		{"glob class", "version: 1\ndefault: deny\nrules:\n  - tool: \"[ab]*\"\n    action: deny\n", []string{`4:11: rules[0].tool "[ab]*": tool pattern uses a reserved character`}},
		{"glob brace", "version: 1\ndefault: deny\nrules:\n  - tool: \"{a,b}\"\n    action: deny\n", []string{`4:11: rules[0].tool "{a,b}": tool pattern uses a reserved character`}},
		{"glob escape", "version: 1\ndefault: deny\nrules:\n  - tool: 'x\\'\n    action: deny\n", []string{`4:11: rules[0].tool "x\\": tool pattern ends with an unfinished escape`}},
		{"glob empty", "version: 1\ndefault: deny\nrules:\n  - tool: \"\"\n    action: deny\n", []string{`4:11: rules[0].tool "": empty tool pattern`}},
		{"glob control", "version: 1\ndefault: deny\nrules:\n  - tool: \"a\\tb\"\n    action: deny\n", []string{`4:11: rules[0].tool "a\tb": tool pattern contains a control character`}},
		{"glob nul", "version: 1\ndefault: deny\nrules:\n  - tool: \"a\\0b\"\n    action: deny\n", []string{`4:11: rules[0].tool "a\x00b": tool pattern contains U+0000 or U+FFFD`}},
		{"bad rate word", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: allow\n    rate: lots\n", []string{`6:11: rules[0].rate "lots": want N/s`}},
		{"bad rate zero", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: allow\n    rate: 0/m\n", []string{`6:11: rules[0].rate "0/m"`}},
		{"bad rate unit", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: allow\n    rate: 10/fortnight\n", []string{`6:11: rules[0].rate "10/fortnight"`}},
		{"bad rate negative", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: allow\n    rate: -1/s\n", []string{`6:11: rules[0].rate "-1/s"`}},
		{"bad rate tiny period", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: allow\n    rate: 1/1ns\n", []string{`6:11: rules[0].rate "1/1ns"`}},
		{"rate on deny", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: deny\n    rate: 1/s\n", []string{`6:11: rules[0].rate: only an allow rule has a rate (this one is deny)`}},
		{"exact duplicate", "version: 1\ndefault: deny\nrules:\n  - tool: x\n    action: allow\n  - tool: x\n    action: deny\n", []string{`6:11: rules[1] "x" can never match: rules[0] "x" (line 4)`}},
		{"exact under glob", "version: 1\ndefault: deny\nrules:\n  - tool: \"fs_*\"\n    action: allow\n  - tool: fs_delete\n    action: deny\n", []string{`6:11: rules[1] "fs_delete" can never match: rules[0] "fs_*" (line 4)`}},
		{"glob under glob", "version: 1\ndefault: deny\nrules:\n  - tool: \"fs_*\"\n    action: allow\n  - tool: \"fs_?_x*\"\n    action: deny\n", []string{`6:11: rules[1] "fs_?_x*" can never match: rules[0] "fs_*"`}},
		{"anything under star", "version: 1\ndefault: deny\nrules:\n  - tool: \"*\"\n    action: allow\n  - tool: \"*_admin\"\n    action: deny\n", []string{`6:11: rules[1] "*_admin" can never match: rules[0] "*"`}},
		{"same glob twice", "version: 1\ndefault: deny\nrules:\n  - tool: \"a*\"\n    action: allow\n  - tool: \"a**\"\n    action: deny\n", []string{`6:11: rules[1] "a**" can never match: rules[0] "a*"`}},
		{"anchor", "version: 1\ndefault: deny\nrules:\n  - &r {tool: x, action: allow}\n  - *r\n", []string{"4:5: anchor &r", "5:5: alias *r"}},
		{"tag", "version: 1\ndefault: !!str deny\nrules:\n  - tool: !custom x\n    action: allow\n", []string{"4:11: tag !custom"}},
		{"two documents", "version: 1\ndefault: deny\n---\nversion: 1\n", []string{"3:1: a policy file holds one YAML document"}},
		{"many at once", "version: 3\ndefault: maybe\nrules:\n  - tool: \"[x\"\n    action: nope\n    rate: x\n", []string{"1:10: version", "2:10: default", "4:11: rules[0].tool", "5:13: rules[0].action", "6:11: rules[0].rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse(%q) = %d rules, nil; want errors %q", tt.src, len(p.Rules()), tt.want)
			}
			var perr *Error
			if !errors.As(err, &perr) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %T %v; want a *Error matching ErrInvalid", tt.src, err, err)
			}
			if len(perr.Diags) != len(tt.want) {
				t.Fatalf("Parse(%q) = %d diagnostics:\n%v\nwant %d: %q", tt.src, len(perr.Diags), err, len(tt.want), tt.want)
			}
			for i, d := range perr.Diags {
				if got := d.String(); !strings.HasPrefix(got, "p.yaml:") || !strings.Contains(got, tt.want[i]) {
					t.Errorf("diagnostic %d = %q; want p.yaml:%s…", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name, src string
		rules     int
	}{
		{"no rules", "version: 1\ndefault: deny\n", 0},
		{"null rules", "version: 1\ndefault: deny\nrules:\n", 0},
		{"empty rules", "version: 1\ndefault: allow\nrules: []\n", 0},
		{"flow rules", "version: 1\ndefault: deny\nrules: [{tool: a, action: allow}, {tool: 'b*', action: deny}]\n", 2},
		{"explicit str tag", "version: 1\ndefault: deny\nrules:\n  - tool: !!str 123\n    action: allow\n", 1},
		{"quoted number", "version: 1\ndefault: deny\nrules:\n  - tool: \"123\"\n    action: allow\n", 1},
		{"escaped star is exact", "version: 1\ndefault: deny\nrules:\n  - tool: 'a\\*'\n    action: allow\n  - tool: 'a*'\n    action: deny\n", 2},
		{"disjoint globs", "version: 1\ndefault: deny\nrules:\n  - tool: 'fs_*'\n    action: allow\n  - tool: 'db_*'\n    action: deny\n  - tool: '*_admin'\n    action: deny\n", 3},
		{"narrow before wide", "version: 1\ndefault: deny\nrules:\n  - tool: fs_delete\n    action: deny\n  - tool: 'fs_*'\n    action: allow\n", 2},
		{"rates", "version: 1\ndefault: deny\nrules:\n  - {tool: a, action: allow, rate: 1/s}\n  - {tool: b, action: allow, rate: 100/h}\n  - {tool: c, action: allow, rate: 5/30s}\n  - {tool: d, action: allow, rate: 7/d}\n", 4},
		{"unicode name", "version: 1\ndefault: deny\nrules:\n  - tool: \"outil_é\"\n    action: allow\n", 1},
		{"windows line ends", "version: 1\r\ndefault: deny\r\nrules:\r\n  - tool: a\r\n    action: allow\r\n", 1},
	}
	for _, tt := range tests {
		p, err := Parse("p.yaml", []byte(tt.src))
		if err != nil {
			t.Errorf("%s: Parse = %v; want a policy", tt.name, err)
			continue
		}
		if n := len(p.Rules()); n != tt.rules {
			t.Errorf("%s: %d rules; want %d", tt.name, n, tt.rules)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
		ok   bool
	}{
		{"10/m", Rate{10, time.Minute}, true},
		{"1/s", Rate{1, time.Second}, true},
		{"3/h", Rate{3, time.Hour}, true},
		{"2/d", Rate{2, 24 * time.Hour}, true},
		{"5/30s", Rate{5, 30 * time.Second}, true},
		{"5/1h30m", Rate{5, 90 * time.Minute}, true},
		{"1000000000/s", Rate{1e9, time.Second}, true},
		{"1000000001/s", Rate{}, false},
		{"0/s", Rate{}, false},
		{"+1/s", Rate{}, false},
		{"1.5/s", Rate{}, false},
		{"10", Rate{}, false},
		{"10/", Rate{}, false},
		{"/s", Rate{}, false},
		{"10/minute", Rate{}, false},
		{"10/0s", Rate{}, false},
		{"10/-1s", Rate{}, false},
		{"1/400d", Rate{}, false},
	}
	for _, tt := range tests {
		got, err := parseRate(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseRate(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if tt.ok {
			if back, err := parseRate(got.String()); err != nil || back != got {
				t.Errorf("parseRate(%q.String() = %q) = %v, %v; want %v", tt.in, got.String(), back, err, got)
			}
		}
	}
}
