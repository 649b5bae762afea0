package httpfront

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is readView's one pass: a strict JSON scanner (the grammar
// encoding/json's Valid accepts, its nesting limit included) that looks
// only at the keys of the line's object, of params and of params._meta,
// and keeps the raw values of the members a header mirrors. Keys are
// matched as members reads them with encoding/json: decoded, cut at
// U+0000, '_', '-' and U+FFFD dropped, each rune folded, without
// allocating.

// The members readView keeps, by level: the line's object, params and
// params._meta.
const (
	wMethod = iota
	wParams
	wName
	wURI
	wTaskID
	wMeta
	wArguments
	wRevision
	wCaps
	nWants
)

const (
	lvTop = iota
	lvParams
	lvMeta
	nLevels
)

// wants are the keys of the members, each with its folded form (fold's).
var wants = func() (w [nWants]struct{ key, folded string }) {
	for i, k := range [nWants]string{"method", "params", "name", "uri", "taskId", "_meta", "arguments", revisionKey, capsKey} {
		w[i].key, w[i].folded = k, fold(k)
	}
	return w
}()

// levelWants is the range of wants a level reads.
var levelWants = [nLevels][2]int{{wMethod, wParams + 1}, {wName, wArguments + 1}, {wRevision, wCaps + 1}}

// maxFolded bounds a folded key that can equal a folded want (the longest
// is capsKey's, 42 bytes).
const maxFolded = 48

// maxDepth is the deepest nesting accepted, encoding/json's limit.
const maxDepth = 10000

type viewReader struct {
	b []byte
	// val is each member's value as on the line (no white space around
	// it), from its key's first exact occurrence; nil when absent.
	val [nWants][]byte
	// err is, per level, 1 + the want of the first key that is a
	// duplicate or a variant of it; 0 when none.
	err    [nLevels]int
	seen   [nWants]bool
	syntax string
}

// dupError is the error members gives for want w.
func dupError(w int) string {
	return wants[w].key + ": a duplicate or case-variant key"
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// fail ends the scan: the line is not one JSON value.
func (r *viewReader) fail() int {
	if r.syntax == "" {
		r.syntax = "not one JSON object"
	}
	return -1
}

// object scans the object whose '{' is at r.b[i], depth containers deep
// (itself included), reading the keys of level lv, and returns the index
// just past its '}', or -1. At the top level it stops at the first
// duplicate or variant key, as members does: nothing after it changes
// the verdict.
func (r *viewReader) object(i, depth, lv int) int {
	b := r.b
	if depth > maxDepth {
		return r.fail()
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	lo, hi := levelWants[lv][0], levelWants[lv][1]
	for {
		if i >= len(b) || b[i] != '"' {
			return r.fail()
		}
		ks := i
		var fl uint8
		if i, fl = scanString(b, i); i < 0 {
			return r.fail()
		}
		key := b[ks+1 : i-1]
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return r.fail()
		}
		if i = skipWS(b, i+1); i >= len(b) {
			return r.fail()
		}
		w, keep := -1, false
		if m := match(key, fl, lo, hi); m >= 0 {
			if r.seen[m] || !keyIs(key, fl, wants[m].key) {
				if r.err[lv] == 0 {
					r.err[lv] = m + 1
				}
				if lv == lvTop {
					return i
				}
			} else {
				r.seen[m], w, keep = true, m, true
			}
		}
		vs := i
		switch {
		case keep && b[i] == '{' && w == wParams:
			i = r.object(i, depth+1, lvParams)
		case keep && b[i] == '{' && w == wMeta:
			i = r.object(i, depth+1, lvMeta)
		default:
			i = r.skipValue(i, depth)
		}
		if i < 0 {
			return -1
		}
		if keep {
			r.val[w] = b[vs:i]
		}
		if lv == lvTop && r.err[lvTop] != 0 {
			return i
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return r.fail()
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1
		default:
			return r.fail()
		}
	}
}

// match returns the want in [lo, hi) that key (the validated content of
// a JSON string, with scanString's flags) folds to, or -1.
func match(key []byte, fl uint8, lo, hi int) int {
	var buf [maxFolded]byte
	n := 0
	if fl == 0 {
		// Plain ASCII: a letter's folding orbit's least rune is its
		// upper case; no other byte folds.
		for _, c := range key {
			if c == '_' || c == '-' {
				continue
			}
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			if n == len(buf) {
				return -1
			}
			buf[n] = c
			n++
		}
	} else {
		for i := 0; i < len(key); {
			var c rune
			c, i = nextRune(key, i)
			if c == 0 {
				break
			}
			if c == '_' || c == '-' || c == utf8.RuneError {
				continue
			}
			c = foldRune(c)
			if n+utf8.RuneLen(c) > len(buf) {
				return -1
			}
			n += utf8.EncodeRune(buf[n:], c)
		}
	}
	for w := lo; w < hi; w++ {
		if string(buf[:n]) == wants[w].folded {
			return w
		}
	}
	return -1
}

// foldRune is the least rune of r's simple case folding orbit, as fold
// maps it.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// keyIs reports whether key decodes to want exactly.
func keyIs(key []byte, fl uint8, want string) bool {
	if fl&strEscaped == 0 {
		return string(key) == want
	}
	j := 0
	for i := 0; i < len(key); {
		var c rune
		c, i = nextRune(key, i)
		wr, n := utf8.DecodeRuneInString(want[j:])
		if j >= len(want) || c != wr {
			return false
		}
		j += n
	}
	return j == len(want)
}

// nextRune decodes the rune at s[i] of a validated JSON string's content
// as encoding/json does (an invalid UTF-8 byte or an unpaired surrogate
// escape is U+FFFD), and returns the index after it.
func nextRune(s []byte, i int) (rune, int) {
	c := s[i]
	if c >= utf8.RuneSelf {
		r, n := utf8.DecodeRune(s[i:])
		return r, i + n
	}
	if c != '\\' {
		return rune(c), i + 1
	}
	switch e := s[i+1]; e {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r := hex4(s[i+2:])
		i += 6
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
				r2 = hex4(s[i+2:])
			}
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, i + 6
			}
			return utf8.RuneError, i
		}
		return r, i
	default: // '"', '\\', '/'
		return rune(e), i + 2
	}
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// hex4 decodes four validated hex digits.
func hex4(s []byte) rune {
	return unhex(s[0])<<12 | unhex(s[1])<<8 | unhex(s[2])<<4 | unhex(s[3])
}

// scanString's flags.
const (
	strHigh    = 1 << iota // a byte >= 0x80
	strEscaped             // a backslash escape
)

// scanString scans the string whose '"' is at b[i] and returns the index
// just past its closing quote and its flags, or -1. Control characters
// and malformed escapes are invalid; invalid UTF-8 is not (encoding/json
// decodes it as U+FFFD).
func scanString(b []byte, i int) (int, uint8) {
	var fl uint8
	for i++; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, fl
		case c < 0x20:
			return -1, 0
		case c >= utf8.RuneSelf:
			fl |= strHigh
			i++
		case c != '\\':
			i++
		default:
			fl |= strEscaped
			if i+1 >= len(b) {
				return -1, 0
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1, 0
				}
				for k := 2; k < 6; k++ {
					if unhex(b[i+k]) < 0 {
						return -1, 0
					}
				}
				i += 6
			default:
				return -1, 0
			}
		}
	}
	return -1, 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber scans the number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case isDigit(b[i]):
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i
}

// scanScalar scans a string, number or literal at b[i].
func scanScalar(b []byte, i int) int {
	var lit string
	switch b[i] {
	case '"':
		i, _ = scanString(b, i)
		return i
	case 't':
		lit = "true"
	case 'f':
		lit = "false"
	case 'n':
		lit = "null"
	default:
		return scanNumber(b, i)
	}
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipValue validates the value at b[i] (not white space), depth
// containers deep, and returns the index just past it, or -1. It is
// iterative: one bit per open container (1: an object), in bits up to
// 256 deep and on the heap beyond.
func (r *viewReader) skipValue(i, depth int) int {
	b := r.b
	var small [4]uint64
	bits := small[:]
	base := depth
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return r.fail()
		}
		if c := b[i]; c == '{' || c == '[' {
			obj := c == '{'
			if depth++; depth > maxDepth {
				return r.fail()
			}
			d := depth - base
			for d>>6 >= len(bits) {
				bits = append(bits, 0)
			}
			if obj {
				bits[d>>6] |= 1 << (d & 63)
			} else {
				bits[d>>6] &^= 1 << (d & 63)
			}
			if i = skipWS(b, i+1); i >= len(b) {
				return r.fail()
			}
			if obj && b[i] == '}' || !obj && b[i] == ']' {
				depth--
				i++
			} else {
				if obj {
					if i = memberKey(b, i); i < 0 {
						return r.fail()
					}
				}
				continue // to the member's or element's value
			}
		} else if i = scanScalar(b, i); i < 0 {
			return r.fail()
		}
		// A value has ended at b[i]: close containers until one goes on.
		for {
			if depth == base {
				return i
			}
			if i = skipWS(b, i); i >= len(b) {
				return r.fail()
			}
			d := depth - base
			obj := bits[d>>6]&(1<<(d&63)) != 0
			if b[i] == ',' {
				i = skipWS(b, i+1)
				if obj {
					if i = memberKey(b, i); i < 0 {
						return r.fail()
					}
				}
				break
			}
			if obj && b[i] == '}' || !obj && b[i] == ']' {
				depth--
				i++
				continue
			}
			return r.fail()
		}
	}
}

// memberKey scans `"key" :` at b[i] and the white space after it, and
// requires a value next.
func memberKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i, _ = scanString(b, i); i < 0 {
		return -1
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	if i = skipWS(b, i+1); i >= len(b) {
		return -1
	}
	return i
}
