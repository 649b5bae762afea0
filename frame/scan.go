package frame

import (
	"bytes"
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the strict JSON grammar (RFC 8259 as encoding/json reads it):
// whitespace, strings, numbers, literals, and an iterative skipper for values
// whose content the classifier does not need. It accepts exactly what
// encoding/json's checkValid accepts, including its nesting limit, so that
// "one JSON value" means the same thing here as in a Go peer.

// maxDepth is the deepest nesting of arrays and objects accepted, the same
// limit as encoding/json (maxNestingDepth). Deeper input is NotJSON.
const maxDepth = 10000

// failure says why a scan stopped. The first failure in input order wins.
type failure uint8

const (
	failNone      failure = iota
	failInvalid           // a byte that the grammar does not allow here
	failTruncated         // the input ended inside a value
	failDepth             // nesting deeper than maxDepth
)

// String flags reported by scanString.
const (
	strHigh    = 1 << iota // contains a byte >= 0x80 (maybe invalid UTF-8)
	strEscaped             // contains a backslash escape
)

// strClass classifies string bytes: 0 plain ASCII, strHigh plain non-ASCII,
// strSpecial a byte that ends the fast loop ('"', '\\', control characters).
const strSpecial = 0x80

var strClass = func() (t [256]uint8) {
	for i := range 256 {
		switch {
		case i < 0x20 || i == '"' || i == '\\':
			t[i] = strSpecial
		case i >= 0x80:
			t[i] = strHigh
		}
	}
	return t
}()

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isWS(b[i]) {
		i++
	}
	return i
}

// fail records the first failure and returns -1, the index every scan
// function returns on failure.
func (c *Classifier) fail(f failure) int {
	if c.failed == failNone {
		c.failed = f
	}
	return -1
}

// failAt is fail with the reason inferred from the position: running out of
// input is truncation, anything else is an invalid byte.
func (c *Classifier) failAt(b []byte, i int) int {
	if i >= len(b) {
		return c.fail(failTruncated)
	}
	return c.fail(failInvalid)
}

// scanString scans the string whose opening quote is at b[i] and returns the
// index just past its closing quote, with strHigh/strEscaped flags.
// Control characters and malformed escapes are invalid; invalid UTF-8 is
// accepted (encoding/json accepts it and decodes it as U+FFFD).
func (c *Classifier) scanString(b []byte, i int) (int, uint8) {
	i++
	var fl uint8
	for {
		// Eight bytes at a time while none of them is '"', '\\' or < 0x20.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q := x ^ (lsb * '"')
			s := x ^ (lsb * '\\')
			if ((q-lsb)&^q|(s-lsb)&^s|(x-lsb*0x20)&^x)&msb != 0 {
				break
			}
			if x&msb != 0 {
				fl |= strHigh
			}
			i += 8
		}
		for i < len(b) {
			k := strClass[b[i]]
			if k == strSpecial {
				break
			}
			fl |= k
			i++
		}
		if i >= len(b) {
			return c.fail(failTruncated), 0
		}
		switch b[i] {
		case '"':
			return i + 1, fl
		case '\\':
			fl |= strEscaped
			i++
			if i >= len(b) {
				return c.fail(failTruncated), 0
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(b) {
						return c.fail(failTruncated), 0
					}
					if unhex(b[i+k]) < 0 {
						return c.fail(failInvalid), 0
					}
				}
				i += 5
			default:
				return c.fail(failInvalid), 0
			}
		default: // control character
			return c.fail(failInvalid), 0
		}
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

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber scans the number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *Classifier) scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return c.fail(failTruncated)
	case b[i] == '0':
		i++
	case isDigit(b[i]):
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return c.fail(failInvalid)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return c.failAt(b, i)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return c.failAt(b, i)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i
}

// scanLiteral scans lit (true, false or null) at b[i].
func (c *Classifier) scanLiteral(b []byte, i int, lit string) int {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) {
			return c.fail(failTruncated)
		}
		if b[i+k] != lit[k] {
			return c.fail(failInvalid)
		}
	}
	return i + len(lit)
}

// scanScalar scans a string, number or literal at b[i].
func (c *Classifier) scanScalar(b []byte, i int) int {
	switch b[i] {
	case '"':
		i, _ = c.scanString(b, i)
		return i
	case 't':
		return c.scanLiteral(b, i, "true")
	case 'f':
		return c.scanLiteral(b, i, "false")
	case 'n':
		return c.scanLiteral(b, i, "null")
	}
	if c.lenient {
		for _, lit := range nonFinite {
			if bytes.HasPrefix(b[i:], lit) {
				return i + len(lit)
			}
		}
	}
	if b[i] == '-' || isDigit(b[i]) {
		return c.scanNumber(b, i)
	}
	return c.fail(failInvalid)
}

// nonFinite are the number literals outside JSON that Python's json module
// reads (and writes) by default.
var nonFinite = [...][]byte{[]byte("NaN"), []byte("Infinity"), []byte("-Infinity")}

// skipValue validates the value at b[i] (i at its first byte, not white
// space) without looking at its content, and returns the index just past it.
// depth is the number of containers already open around it. It is iterative:
// c.stack keeps one bit per open container (1 = object), so any nesting up to
// maxDepth costs no Go stack.
func (c *Classifier) skipValue(b []byte, i, depth int) int {
	base := depth
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return c.fail(failTruncated)
		}
		switch b[i] {
		case '{', '[':
			obj := b[i] == '{'
			depth++
			if depth > maxDepth {
				return c.fail(failDepth)
			}
			if obj {
				c.stack[depth>>6] |= 1 << (depth & 63)
			} else {
				c.stack[depth>>6] &^= 1 << (depth & 63)
			}
			i = skipWS(b, i+1)
			if i >= len(b) {
				return c.fail(failTruncated)
			}
			if (obj && b[i] == '}') || (!obj && b[i] == ']') {
				depth--
				i++
				break // to the end of a value
			}
			if obj {
				if i = c.memberKey(b, i); i < 0 {
					return i
				}
			}
			continue // to the member or element value
		default:
			if i = c.scanScalar(b, i); i < 0 {
				return i
			}
		}
		// A value has ended at b[i]: close containers until one continues.
		for {
			if depth == base {
				return i
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return c.fail(failTruncated)
			}
			obj := c.stack[depth>>6]&(1<<(depth&63)) != 0
			if b[i] == ',' {
				i = skipWS(b, i+1)
				if obj {
					if i = c.memberKey(b, i); i < 0 {
						return i
					}
				}
				break
			}
			if (obj && b[i] == '}') || (!obj && b[i] == ']') {
				depth--
				i++
				continue
			}
			return c.fail(failInvalid)
		}
	}
}

// memberKey scans `"key" :` at b[i] and the white space after the colon.
func (c *Classifier) memberKey(b []byte, i int) int {
	if i >= len(b) {
		return c.fail(failTruncated)
	}
	if b[i] != '"' {
		return c.fail(failInvalid)
	}
	if i, _ = c.scanString(b, i); i < 0 {
		return i
	}
	return c.colon(b, i)
}

// colon scans white space, ':' and white space, and requires a value next.
func (c *Classifier) colon(b []byte, i int) int {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return c.failAt(b, i)
	}
	i = skipWS(b, i+1)
	if i >= len(b) {
		return c.fail(failTruncated)
	}
	return i
}

// appendUnquote appends the decoded content of a validated JSON string (the
// bytes between the quotes) to dst, exactly as encoding/json decodes it:
// invalid UTF-8 bytes and unpaired surrogate escapes become U+FFFD.
func appendUnquote(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			e := s[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2 = hex4(s[i+2:])
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						i += 6
						r = d
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += n
		}
	}
	return dst
}

// hex4 decodes four validated hex digits.
func hex4(s []byte) rune {
	return unhex(s[0])<<12 | unhex(s[1])<<8 | unhex(s[2])<<4 | unhex(s[3])
}
