package policy

import (
	"bytes"
	"unicode/utf8"
)

// Explanation says which rule decides a tool name, and why.
type Explanation struct {
	Tool   string
	Rule   int    // index of the deciding rule; -1 for the default
	Label  string // as records name it: "rules[i] pattern" or "default"
	Action Action
	Rate   Rate // the deciding rule's rate, if any
	Line   int  // of the deciding rule's pattern, or of default
	// Exact is true when the rule names the tool exactly, false for a
	// glob or the default.
	Exact bool
	// When is the deciding rule's condition ("" for none): a call to the
	// tool is decided by Rule only when it holds, and otherwise by the
	// first of Also that decides (a later rule, or the default).
	When string
	// Also are later rules that match the name too and lose to Rule:
	// first match wins (unless Rule's condition does not hold).
	Also []int
	// Malformed is set when no call can name this tool and be judged by
	// the rules: the relay refuses such calls as malformed whatever the
	// policy says (a NUL, U+FFFD or invalid UTF-8 in the name).
	Malformed string
}

// Explain says which rule decides tool. It takes no rate token.
func (p *Policy) Explain(tool string) Explanation {
	name := []byte(tool)
	e := Explanation{Tool: tool, Rule: p.Match(name)}
	e.Action, e.Label, e.Line = p.action(e.Rule)
	if e.Rule >= 0 {
		r := &p.rules[e.Rule]
		e.Rate, e.Exact, e.When = r.Rate, r.glob.exact, r.When
	}
	for i := e.Rule + 1; e.Rule >= 0 && i < len(p.rules); i++ {
		if p.rules[i].glob.match(name) {
			e.Also = append(e.Also, i)
		}
	}
	switch {
	case !utf8.ValidString(tool), bytes.ContainsRune(name, utf8.RuneError):
		e.Malformed = "the name holds invalid UTF-8 or U+FFFD, which decoders read differently"
	case bytes.IndexByte(name, 0) >= 0:
		e.Malformed = "the name holds U+0000, where some decoders cut it"
	}
	return e
}
