package policy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf16"

	"go.yaml.in/yaml/v3"
)

// FuzzParse feeds Parse arbitrary bytes. It must never panic, and it must
// accept only what it can explain:
//
//   - a rejection is a *Error matching ErrInvalid, with at least one
//     diagnostic, each naming the file, a line of it (1-based) and a
//     message, in file order;
//   - an accepted file reads the same to a plain strict YAML decoding
//     (yaml.v3 with KnownFields) into the documented shape: the same
//     default, and the same rules in order, with the same tool, action,
//     rate and condition;
//   - every accepted rule's pattern compiles, its rate (only on an allow
//     rule) reads back from its own String, its line is in the file, and
//     its label names it; the set is the SHA-256 of the bytes;
//   - no accepted rule is dead: a rule with an exact name decides that
//     name (Explain says so) unless an earlier rule with a condition
//     comes first, and a glob decides or loses only to an earlier rule on
//     a name it matches; the index agrees with a scan, from every rule
//     on (the next candidate once a condition does not hold);
//   - parsing is deterministic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		exampleFile,
		"version: 1\ndefault: deny\n",
		"version: 1\ndefault: allow\nrules:\n",
		"version: 1\ndefault: deny\nrules:\n  - tool: \"fs_*\"\n    action: allow\n    rate: 5/30s\n  - tool: fs_read\n    action: deny\n",
		"version: 1\ndefault: deny\nrules:\n  - {tool: 'a\\*b', action: allow}\n  - {tool: \"?x*\", action: approve}\n  - {tool: \"ünï*cødé\", action: deny}\n",
		"version: 1\ndefault: deny\nrules:\n  - tool: read_file\n    action: allow\n  - tool: read_file\n    action: deny\n",
		"version: 1\ndefault: allow\ndefault: deny\n",
		"version: 1\ndefault: allow\nrules:\n  - &r {tool: a, action: deny}\n  - *r\n",
		"version: 1\ndefault: allow\nrules:\n  - tool: !!str 123\n    action: deny\n  - tool: 123\n    action: deny\n",
		"version: 1\ndefault: allow\nrules:\n  - tool: \"[abc]\"\n    action: deny\n  - tool: \"x\\u0000y\"\n    action: deny\n",
		"version: 1\ndefault: allow\n---\nversion: 1\n",
		"\ufeffversion: 1\r\ndefault: allow\r\n",
		"version: 1\ndefault: allow\nrules:\n  - tool: a\n    action: allow\n    rate: 0/s\n  - tool: b\n    action: deny\n    rate: 1/s\n",
		"version: 1\ndefault: allow\nrules:\n  - <<: {tool: a}\n    action: deny\n",
		"version: 2\ndefault: maybe\nrules: {}\nextra: 1\n",
		"{version: 1, default: deny, rules: [{tool: \"*\", action: deny}, {tool: x, action: allow}]}",
		"version: 1\ndefault: deny\nrules:\n  - tool: \"a*\"\n    action: allow\n  - tool: \"*b\"\n    action: deny\n  - tool: \"*x*\"\n    action: approve\n  - tool: \"a?c\"\n    action: deny\n",
		"\t- :\n",
		"",
		"version: 1\ndefault: deny\nrules:\n  - tool: read_file\n    action: allow\n    when: 'mcp.tool.arguments.path.startsWith(\"/srv/\")'\n  - tool: read_file\n    action: deny\n  - tool: \"*\"\n    action: allow\n    when: caller.id == \"uid:0\"\n",
		"version: 1\ndefault: deny\nrules:\n  - tool: a\n    action: allow\n    when: mcp.tool.name\n  - tool: b\n    action: allow\n    when: 'nope == 1'\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseNoPanic(t, data)
		if err != nil {
			checkRejection(t, data, err)
			return
		}
		checkAccepted(t, data, p)
	})
}

func parseNoPanic(t *testing.T, data []byte) (p *Policy, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Parse(%q) panicked: %v\n%s", data, r, debug.Stack())
		}
	}()
	return Parse("fuzz.yaml", data)
}

// lineCount is the number of lines of data as YAML counts them (it also
// breaks lines at a lone "\r", NEL, U+2028 and U+2029), a last line without
// a break included, and at least 1.
func lineCount(data []byte) int {
	s := strings.ReplaceAll(yamlText(data), "\r\n", "\n")
	n := 1
	for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		n += strings.Count(s, br)
	}
	return n
}

// yamlText is data as the YAML library reads it: UTF-16 when it starts
// with a UTF-16 byte order mark, else UTF-8.
func yamlText(data []byte) string {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		order = binary.LittleEndian
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		order = binary.BigEndian
	default:
		return string(data)
	}
	u := make([]uint16, 0, len(data)/2)
	for i := 2; i+1 < len(data); i += 2 {
		u = append(u, order.Uint16(data[i:]))
	}
	return string(utf16.Decode(u))
}

func checkRejection(t *testing.T, data []byte, err error) {
	var perr *Error
	if !errors.As(err, &perr) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse(%q) = %T %v; want a *Error matching ErrInvalid", data, err, err)
	}
	if len(perr.Diags) == 0 {
		t.Fatalf("Parse(%q) = an *Error with no diagnostics", data)
	}
	lines := lineCount(data)
	for i, d := range perr.Diags {
		// The YAML library names the line after the last at the end of
		// the input.
		if d.File != "fuzz.yaml" || d.Line < 1 || d.Line > lines+1 || d.Column < 0 || strings.TrimSpace(d.Msg) == "" {
			t.Fatalf("Parse(%q): diagnostic %d %+v does not name the file, a line of its %d and a problem", data, i, d, lines)
		}
		if i > 0 {
			if prev := perr.Diags[i-1]; prev.Line > d.Line || prev.Line == d.Line && prev.Column > d.Column {
				t.Fatalf("Parse(%q): diagnostics out of file order: %v before %v", data, prev, d)
			}
		}
	}
}

// plain is the documented shape, for a strict YAML decoding.
type plain struct {
	Version int    `yaml:"version"`
	Default string `yaml:"default"`
	Rules   []struct {
		Tool   string  `yaml:"tool"`
		Action string  `yaml:"action"`
		Rate   *string `yaml:"rate"`
		When   *string `yaml:"when"`
	} `yaml:"rules"`
}

func checkAccepted(t *testing.T, data []byte, p *Policy) {
	if p == nil {
		t.Fatalf("Parse(%q) = nil, nil", data)
	}
	var ref plain
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&ref); err != nil {
		t.Fatalf("Parse(%q) accepted a file that a strict YAML decoding rejects: %v", data, err)
	}
	if ref.Version != 1 {
		t.Fatalf("Parse(%q) accepted version %d", data, ref.Version)
	}
	if got := p.Default().String(); got != ref.Default || (p.Default() != Allow && p.Default() != Deny) {
		t.Fatalf("Parse(%q): default %s; YAML reads %q", data, got, ref.Default)
	}
	if p.Set() != SetOf(data) || p.File() != "fuzz.yaml" {
		t.Fatalf("Parse(%q): set %s file %q; want %s, fuzz.yaml", data, p.Set(), p.File(), SetOf(data))
	}
	rules := p.Rules()
	if len(rules) != len(ref.Rules) {
		t.Fatalf("Parse(%q): %d rules; YAML reads %d", data, len(rules), len(ref.Rules))
	}
	lines := lineCount(data)
	for i := range rules {
		r, w := &rules[i], ref.Rules[i]
		desc := fmt.Sprintf("Parse(%q): rules[%d] %+v", data, i, *r)
		if r.Index != i || r.Tool != w.Tool || r.Action.String() != w.Action {
			t.Fatalf("%s; YAML reads tool %q action %q", desc, w.Tool, w.Action)
		}
		if r.Line < 1 || r.Line > lines || r.Column < 1 {
			t.Fatalf("%s: line %d column %d not in the file's %d lines", desc, r.Line, r.Column, lines)
		}
		if w.When == nil && (r.When != "" || r.cond != nil) || w.When != nil && (r.When != *w.When || r.cond == nil) {
			t.Fatalf("%s: condition %q; YAML reads %v", desc, r.When, w.When)
		}
		label := fmt.Sprintf("rules[%d] %s", i, r.Tool)
		if r.cond != nil {
			label += " when " + strings.Join(strings.Fields(r.When), " ")
		}
		if r.Label() != label {
			t.Fatalf("%s: label %q", desc, r.Label())
		}
		if _, err := compileGlob(r.Tool); err != nil {
			t.Fatalf("%s: its pattern does not compile: %v", desc, err)
		}
		switch {
		case w.Rate == nil && r.Rate != (Rate{}):
			t.Fatalf("%s: a rate the file does not have", desc)
		case w.Rate != nil:
			rt, err := parseRate(*w.Rate)
			if err != nil || rt != r.Rate || r.Action != Allow {
				t.Fatalf("%s: rate %v from %q (%v); want that rate, on an allow rule", desc, r.Rate, *w.Rate, err)
			}
			if back, err := parseRate(r.Rate.String()); err != nil || back != r.Rate {
				t.Fatalf("%s: rate %v reads back from %q as %v, %v", desc, r.Rate, r.Rate.String(), back, err)
			}
		}
		// Not dead: a witness name the rule matches is decided by it or
		// by an earlier rule; an exact name by the rule itself.
		name := witness(&r.glob)
		if !r.glob.match([]byte(name)) {
			t.Fatalf("%s: does not match its own witness %q", desc, name)
		}
		e := p.Explain(name)
		if e.Rule < 0 || e.Rule > i || (r.glob.exact && e.Rule != i && rules[e.Rule].cond == nil) {
			t.Fatalf("%s: Explain(%q) = rules[%d] (%s); want this rule%s", desc, name, e.Rule, e.Label,
				map[bool]string{true: "", false: " or an earlier one"}[r.glob.exact])
		}
		if got, want := p.Match([]byte(name)), p.matchLinear([]byte(name)); got != want {
			t.Fatalf("%s: Match(%q) = %d; a scan says %d", desc, name, got, want)
		}
		for from := 0; from <= len(rules); from++ {
			want := -1
			for j := from; j < len(rules); j++ {
				if rules[j].glob.match([]byte(name)) {
					want = j
					break
				}
			}
			if got := p.matchFrom([]byte(name), from); got != want {
				t.Fatalf("%s: matchFrom(%q, %d) = %d; a scan says %d", desc, name, from, got, want)
			}
		}
	}
	again, err := Parse("fuzz.yaml", data)
	if err != nil || printRules(again.Rules()) != printRules(rules) || again.Default() != p.Default() {
		t.Fatalf("Parse(%q) differs between two calls: %v", data, err)
	}
}

// printRules prints rules without their compiled conditions, which are
// pointers.
func printRules(rules []Rule) string {
	var b strings.Builder
	for _, r := range rules {
		r.cond = nil
		fmt.Fprint(&b, r)
	}
	return b.String()
}

// witness is a name g matches: its literals, with "?" read as "x" and
// "*" as nothing.
func witness(g *glob) string {
	var b strings.Builder
	for _, it := range g.items {
		switch it.kind {
		case itemLit:
			b.WriteString(it.lit)
		case itemOne:
			b.WriteByte('x')
		}
	}
	return b.String()
}
