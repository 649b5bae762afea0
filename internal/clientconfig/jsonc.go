package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// maxDepth bounds nesting: hujson's parser recurses once a level, and a
// file of nothing but '[' would exhaust the goroutine's stack, which Go
// does not recover from.
const maxDepth = 512

// node is one parsed JSONC value; StartOffset and EndOffset are its span
// in the source, without the white space and comments around it.
type node = hujson.Value

// member is one key of an object: the key decoded, where the key starts,
// and its value.
type member struct {
	key      string
	keyStart int
	val      *node
}

// object is an object's members in source order.
type object []member

// get returns the member named key, or nil.
func (o object) get(key string) *member {
	for i := range o {
		if o[i].key == key {
			return &o[i]
		}
	}
	return nil
}

// kind returns n's kind: '{', '[', '"', 'n', 't', 'f', or '0' (a number).
func kind(n *node) hujson.Kind { return n.Value.Kind() }

// members returns the members of n, an object, keys decoded.
func members(n *node) object {
	obj := n.Value.(*hujson.Object)
	o := make(object, len(obj.Members))
	for i := range obj.Members {
		m := &obj.Members[i]
		o[i] = member{key: str(m.Name.Value.(hujson.Literal)), keyStart: m.Name.StartOffset, val: &m.Value}
	}
	return o
}

// elems returns the elements of n, an array.
func elems(n *node) []hujson.Value { return n.Value.(*hujson.Array).Elements }

// str decodes a string literal as encoding/json does (invalid UTF-8 read
// as U+FFFD, as clients' readers do), without its reflection when there
// is nothing to decode.
func str(lit hujson.Literal) string {
	raw := lit[1 : len(lit)-1]
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	return lit.String()
}

// parse reads src, without a leading byte order mark, as one JSONC value
// (tailscale/hujson: JSON with // and /* */ comments and trailing commas)
// with nothing but white space and comments around it. Offsets in the
// tree are offsets in src.
func parse(src []byte) (*node, error) {
	if err := prescan(src); err != nil {
		return nil, err
	}
	in := src
	if len(src) > 0 && src[len(src)-1] != '\n' {
		// hujson wants a line comment ended by a line break, and a file
		// may end with one that is not: a copy gets one. Nothing else
		// reads differently with a line break at the end.
		in = append(src[:len(src):len(src)], '\n')
	}
	v, err := hujson.Parse(in)
	if err != nil {
		return nil, syntaxError(src, in, err)
	}
	return &v, nil
}

// prescan checks what hujson does not. Nesting deeper than maxDepth is
// refused before hujson recurses into it. A line comment must end where
// every reader ends it: VS Code's JSONC reader ends one at a carriage
// return as well as a line feed (and older versions at a vertical tab or
// form feed), so what follows a lone \r in a comment is a comment to
// hujson and keys to VS Code ("command" hidden behind a "url"). hujson
// itself refuses U+2028 and U+2029 there.
func prescan(src []byte) error {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '/':
			switch {
			case i+1 < len(src) && src[i+1] == '/':
				for i += 2; i < len(src) && src[i] != '\n'; i++ {
					if c := src[i]; c == '\v' || c == '\f' || c == '\r' && (i+1 == len(src) || src[i+1] != '\n') {
						return syntaxAt(src, i, fmt.Sprintf("%q in a // comment, which other readers end there", c))
					}
				}
			case i+1 < len(src) && src[i+1] == '*':
				end := bytes.Index(src[i+2:], []byte("*/"))
				if end < 0 {
					return nil // hujson says where
				}
				i += 2 + end + 1
			}
		case '[', '{':
			if depth++; depth > maxDepth {
				return syntaxAt(src, i, fmt.Sprintf("nested more than %d deep", maxDepth))
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// syntaxAt returns ErrSyntax with why, at offset off as line and column.
func syntaxAt(src []byte, off int, why string) error {
	line := 1 + bytes.Count(src[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(src[:off], '\n')
	return refuse(ErrSyntax, "line %d, column %d: %s", line, col, why)
}

// syntaxError turns hujson's error into ErrSyntax. hujson quotes a bad
// literal whole, which may be megabytes or a secret from "env"; the
// message says what is wrong with it instead, as encoding/json reads it.
// in is what hujson read: src, perhaps with a line break added.
func syntaxError(src, in []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "hujson: ")
	var line, col int
	if _, serr := fmt.Sscanf(msg, "line %d, column %d:", &line, &col); serr != nil {
		return refuse(ErrSyntax, "%s", msg)
	}
	switch {
	case strings.Contains(msg, ": invalid literal: "):
		off := offsetOf(in, line, col)
		if off < 0 || off >= len(in) {
			break
		}
		if in[off] != '"' {
			end := off
			for end < len(in) && end-off < 32 && strings.IndexByte("+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", in[end]) >= 0 {
				end++
			}
			return syntaxAt(in, off, fmt.Sprintf("%q is not a JSON value", in[off:end]))
		}
		end := off + 1
		for end < len(in) && in[end] != '"' {
			if in[end] == '\\' {
				end++
			}
			end++
		}
		var s string
		var se *json.SyntaxError
		if jerr := json.Unmarshal(in[off:min(end+1, len(in))], &s); errors.As(jerr, &se) {
			return syntaxAt(in, off+int(se.Offset)-1, "bad string: "+se.Error())
		}
		return syntaxAt(in, off, "bad string")
	case strings.HasSuffix(msg, "parsing comment: unexpected EOF"):
		// A line comment always ends: parse gave the file a line break.
		return syntaxAt(src, min(offsetOf(in, line, col), len(src)), "unterminated /* comment")
	case strings.HasSuffix(msg, ": unexpected EOF"):
		// At the end of the file, not after the line break parse added.
		what := msg[strings.Index(msg, ": ")+2 : len(msg)-len("unexpected EOF")]
		return syntaxAt(src, len(src), what+"unexpected end of file")
	}
	if i := strings.Index(msg, ": invalid literal: "); i >= 0 {
		msg = msg[:i] + ": invalid literal"
	}
	return refuse(ErrSyntax, "%s", msg)
}

// offsetOf returns the offset of line and column (from 1) in src.
func offsetOf(src []byte, line, col int) int {
	off := 0
	for ; line > 1; line-- {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off + col - 1
}
