package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/aegisrelay/aegis/internal/regular"
)

// MaxFileSize bounds a policy file: a policy is a list of names, and a
// bound keeps a wrong path (a log, a device) from being read whole.
const MaxFileSize = 4 << 20

// ReadFile reads a policy file, at most MaxFileSize bytes. A path that is
// not a regular file is refused before it is opened (ErrNotRegular), and
// what was opened is checked again.
func ReadFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is %s", ErrNotRegular, path, regular.Describe(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s", ErrNotRegular, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, path, MaxFileSize)
	}
	return data, nil
}

// Load reads and parses the policy file at path.
func Load(path string) (*Policy, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// SetOf is the name of a rule set: "sha256:<hex>" of the policy file's
// bytes, exactly as read. It is part of the audit format (policy_set, set).
func SetOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Parse parses a policy file's bytes; file names it in diagnostics. The
// decoding is strict: unknown or duplicate keys, wrong types, bad patterns,
// bad rates, anchors, aliases, tags other than !!str and rules that can
// never match are errors. On any, Parse returns a *Error with every
// diagnostic found, in file order, and no Policy.
func Parse(file string, data []byte) (*Policy, error) {
	p := &parser{file: file}
	pol := p.parse(data)
	if len(p.diags) > 0 {
		slices.SortStableFunc(p.diags, func(a, b Diagnostic) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return nil, &Error{Diags: p.diags}
	}
	pol.set = SetOf(data)
	pol.file = file
	pol.build()
	return pol, nil
}

type parser struct {
	file  string
	diags []Diagnostic
}

func (p *parser) errAt(line, col int, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{File: p.file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	p.errAt(n.Line, n.Column, format, args...)
}

// yamlLine finds the line in the YAML library's messages ("yaml: line 3: …").
// It is compiled on the first syntax error, not in every aegis start.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): `) })

func (p *parser) syntax(err error) {
	msg := err.Error()
	line := 1
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	p.errAt(line, 0, "YAML: %s", msg)
}

const shape = "a policy is a mapping with version: 1, default: allow|deny and rules: a list of {tool, action[, rate][, when]}"

func (p *parser) parse(data []byte) *Policy {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.errAt(1, 1, "empty policy file: %s", shape)
		} else {
			p.syntax(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntax(err)
	default:
		p.errAt(extra.Line, extra.Column, "a policy file holds one YAML document; another starts here")
	}
	p.checkNodes(&doc)
	if len(doc.Content) == 0 {
		p.errAt(1, 1, "empty policy file: %s", shape)
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errf(root, "%s", shape)
		return nil
	}
	pol := &Policy{}
	f := p.fields(root, "policy", "version", "default", "rules", "on_tool_change")
	if v := f["version"]; v == nil {
		p.errf(root, "missing version: 1")
	} else if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Value != "1" {
		p.errf(v, "version: want 1, the only version there is")
	}
	if v := f["default"]; v == nil {
		p.errf(root, "missing default: allow or deny (what happens to a tool no rule names)")
	} else {
		switch s, _ := p.str(v, "default"); s {
		case "allow":
			pol.def = Allow
		case "deny":
			pol.def = Deny
		case "":
		default:
			p.errf(v, "default: %q; want allow or deny", s)
		}
		pol.defLine = v.Line
	}
	if v := f["rules"]; v != nil {
		switch {
		case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		case v.Kind != yaml.SequenceNode:
			p.errf(v, "rules: want a list of {tool, action[, rate][, when]}")
		default:
			for i, n := range v.Content {
				if r, ok := p.rule(i, n); ok {
					pol.rules = append(pol.rules, r)
				}
			}
		}
	}
	p.shadowed(pol.rules)
	p.onToolChange(f["on_tool_change"], pol)
	return pol
}

// checkNodes refuses what would make the file mean more than it shows:
// anchors and aliases (one rule standing for another), tags other than the
// plain !!str.
func (p *parser) checkNodes(n *yaml.Node) {
	if n.Anchor != "" {
		p.errf(n, "anchor &%s: anchors and aliases are not allowed in a policy", n.Anchor)
	}
	if n.Kind == yaml.AliasNode {
		p.errf(n, "alias *%s: anchors and aliases are not allowed in a policy", n.Value)
		return
	}
	if n.Style&yaml.TaggedStyle != 0 && n.Tag != "!!str" {
		p.errf(n, "tag %s: only !!str is allowed in a policy", n.Tag)
	}
	for _, c := range n.Content {
		p.checkNodes(c)
	}
}

// fields returns the values of a mapping's keys, reporting unknown and
// duplicate keys.
func (p *parser) fields(n *yaml.Node, what string, known ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	keys := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || (k.Tag != "!!str" && k.Tag != "!!merge") {
			p.errf(k, "%s: keys are names (%s)", what, strings.Join(known, ", "))
			continue
		}
		if first, dup := keys[k.Value]; dup {
			p.errf(k, "%s: duplicate key %q (first at line %d)", what, k.Value, first.Line)
			continue
		}
		keys[k.Value] = k
		if !slices.Contains(known, k.Value) {
			p.errf(k, "%s: unknown key %q (want %s)", what, k.Value, strings.Join(known, ", "))
			continue
		}
		out[k.Value] = v
	}
	return out
}

// reported reports whether checkNodes has reported n already.
func reported(n *yaml.Node) bool {
	return n.Kind == yaml.AliasNode || n.Style&yaml.TaggedStyle != 0 && n.Tag != "!!str"
}

// str returns a scalar string's value, reporting other nodes.
func (p *parser) str(n *yaml.Node, what string) (string, bool) {
	if reported(n) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		p.errf(n, "%s: want a string%s", what, quoteHint(n))
		return "", false
	}
	return n.Value, true
}

func quoteHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return fmt.Sprintf(", not %s %q (quote it to mean the string)", strings.TrimPrefix(n.Tag, "!!"), n.Value)
	}
	return ""
}

func (p *parser) rule(i int, n *yaml.Node) (Rule, bool) {
	what := fmt.Sprintf("rules[%d]", i)
	r := Rule{Index: i, Line: n.Line, Column: n.Column}
	if n.Kind != yaml.MappingNode {
		if !reported(n) {
			p.errf(n, "%s: want a mapping {tool, action[, rate][, when]}", what)
		}
		return r, false
	}
	n0 := len(p.diags)
	f := p.fields(n, what, "tool", "action", "rate", "when")
	if v := f["tool"]; v == nil {
		p.errf(n, "%s: missing tool (a name or a glob such as \"fs_*\")", what)
	} else if s, ok := p.str(v, what+".tool"); ok {
		g, err := compileGlob(s)
		if err != nil {
			p.errf(v, "%s.tool %q: %v", what, s, err)
		}
		r.Tool, r.glob, r.Line, r.Column = s, g, v.Line, v.Column
	}
	if v := f["action"]; v == nil {
		p.errf(n, "%s: missing action: allow, deny or approve", what)
	} else if s, ok := p.str(v, what+".action"); ok {
		switch s {
		case "allow":
			r.Action = Allow
		case "deny":
			r.Action = Deny
		case "approve":
			r.Action = Approve
		default:
			p.errf(v, "%s.action: %q; want allow, deny or approve", what, s)
		}
	}
	if v := f["rate"]; v != nil {
		if s, ok := p.str(v, what+".rate"); ok {
			rt, err := parseRate(s)
			switch {
			case err != nil:
				p.errf(v, "%s.rate %q: %v", what, s, err)
			case r.Action != Allow && r.Action != 0:
				p.errf(v, "%s.rate: only an allow rule has a rate (this one is %s)", what, r.Action)
			default:
				r.Rate = rt
			}
		}
	}
	if v := f["when"]; v != nil {
		if s, ok := p.str(v, what+".when"); ok {
			c, err := compileCond(s)
			if err != nil {
				p.errf(v, "%s.when: %v", what, err)
			}
			r.When, r.cond = s, c
		}
	}
	return r, len(p.diags) == n0
}

// shadowed reports rules that can never match: an earlier rule without
// a condition matches every tool they match (first match wins). Exact
// names are checked exactly; a glob is checked against each earlier glob
// (see covers). A rule with a condition shadows nothing, since its
// condition may not hold. Rules with errors of their own are not in
// rules, and not checked.
func (p *parser) shadowed(rules []Rule) {
	exact := map[string]int{}
	var globs []int
	for j := range rules {
		b := &rules[j]
		by := -1
		if b.glob.exact {
			if i, dup := exact[b.glob.lit]; dup {
				by = i
			} else if b.cond == nil {
				exact[b.glob.lit] = j
			}
		}
		if by < 0 {
			for _, i := range globs {
				if covers(&rules[i].glob, &b.glob) {
					by = i
					break
				}
			}
		}
		if by >= 0 {
			a := &rules[by]
			p.errAt(b.Line, b.Column, "rules[%d] %q can never match: rules[%d] %q (line %d) comes first and matches every tool it does",
				b.Index, b.Tool, a.Index, a.Tool, a.Line)
			continue
		}
		if !b.glob.exact && b.cond == nil {
			globs = append(globs, j)
		}
	}
}
