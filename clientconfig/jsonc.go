package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxDepth = 512

// node is one JSONC value: its kind ('{', '[', '"', or 'v' for a number
// or literal) and its byte span [start, end) in the source.
type node struct {
	kind       byte
	start, end int
	members    []member // an object's, in source order
	elems      []*node  // an array's
}

// member is one key of an object: the key's span starts at keyStart.
type member struct {
	key      string // decoded
	keyStart int
	val      *node
}

// get returns the member named key, or nil. dup reports whether the key
// occurs more than once.
func (n *node) get(key string) (m *member, dup bool) {
	for i := range n.members {
		if n.members[i].key == key {
			if m != nil {
				return m, true
			}
			m = &n.members[i]
		}
	}
	return m, false
}

// parser reads JSONC: JSON plus // and /* */ comments and trailing commas
// in objects and arrays. It keeps offsets, not text: the rewrite edits
// the source bytes.
type parser struct {
	src []byte
	pos int
}

// parse reads src as one JSONC value with nothing but white space and
// comments around it (a leading UTF-8 byte order mark is allowed).
func parse(src []byte) (*node, error) {
	p := &parser{src: src}
	if bytes.HasPrefix(src, []byte("\uFEFF")) {
		p.pos = 3
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos < len(src) {
		return nil, p.errorf("unexpected %q after the top-level value", src[p.pos])
	}
	return n, nil
}

// errorf reports a syntax error at the current position as line:column.
func (p *parser) errorf(format string, args ...any) error {
	line, col := 1, 1
	for _, c := range p.src[:min(p.pos, len(p.src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%w: line %d, column %d: %s", ErrSyntax, line, col, fmt.Sprintf(format, args...))
}

// want reports what was wanted where something else, or the end of the
// file, was found.
func (p *parser) want(what string) error {
	if p.pos >= len(p.src) {
		return p.errorf("unexpected end of file; want %s", what)
	}
	return p.errorf("unexpected %q; want %s", p.src[p.pos], what)
}

// space skips white space and comments.
func (p *parser) space() error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			end := bytes.Index(p.src[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.errorf("unterminated /* comment")
			}
			p.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *parser) value(depth int) (*node, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested more than %d deep", maxDepth)
	}
	if p.pos >= len(p.src) {
		return nil, p.errorf("unexpected end of file")
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		n, _, err := p.str(false)
		return n, err
	case c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z':
		start := p.pos
		for p.pos < len(p.src) && strings.IndexByte("+-.0123456789abcdefghijklmnopqrstuvwxyzE", p.src[p.pos]) >= 0 {
			p.pos++
		}
		if tok := p.src[start:p.pos]; !json.Valid(tok) {
			p.pos = start
			return nil, p.errorf("%q is not a JSON value", tok)
		}
		return &node{kind: 'v', start: start, end: p.pos}, nil
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

// str reads a string, checking it as encoding/json does (escapes, no
// control bytes), and returns it decoded if decode is set.
func (p *parser) str(decode bool) (*node, string, error) {
	start := p.pos
	escaped := false
	for p.pos++; ; p.pos++ {
		if p.pos >= len(p.src) {
			p.pos = start
			return nil, "", p.errorf("unterminated string")
		}
		c := p.src[p.pos]
		if c < 0x20 {
			return nil, "", p.errorf("bad string: control byte %q in it", c)
		}
		if c == '"' {
			p.pos++
			break
		}
		if c == '\\' {
			escaped = true
			p.pos++
			if p.pos < len(p.src) && strings.IndexByte(`"\\/bfnrtu`, p.src[p.pos]) < 0 {
				return nil, "", p.errorf("bad string: escape \\%c", p.src[p.pos])
			}
		}
	}
	n := &node{kind: '"', start: start, end: p.pos}
	raw := p.src[start+1 : p.pos-1]
	if !escaped && utf8.Valid(raw) {
		if decode {
			return n, string(raw), nil
		}
		return n, "", nil
	}
	// Escapes (\uXXXX must be four hex digits) and invalid UTF-8 (read
	// as U+FFFD, as clients' readers do) are encoding/json's to decode.
	var s string
	if err := json.Unmarshal(p.src[start:p.pos], &s); err != nil {
		p.pos = start
		return nil, "", p.errorf("bad string: %v", err)
	}
	return n, s, nil
}

func (p *parser) object(depth int) (*node, error) {
	n := &node{kind: '{', start: p.pos}
	p.pos++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return nil, p.want("a key in quotes or }")
		}
		keyStart := p.pos
		_, key, err := p.str(true)
		if err != nil {
			return nil, err
		}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.want(fmt.Sprintf(": after key %q", key))
		}
		p.pos++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, member{key: key, keyStart: keyStart, val: v})
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
		} else if p.pos >= len(p.src) || p.src[p.pos] != '}' {
			return nil, p.want(fmt.Sprintf(", or } after the value of %q", key))
		}
	}
}

func (p *parser) array(depth int) (*node, error) {
	n := &node{kind: '[', start: p.pos}
	p.pos++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
		} else if p.pos >= len(p.src) || p.src[p.pos] != ']' {
			return nil, p.want(", or ] after an array element")
		}
	}
}
