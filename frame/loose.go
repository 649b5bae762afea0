package frame

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// This file reads a string id as clients that compare ids as numbers do:
// JavaScript's Number(s) (the TypeScript SDK) and Python's int(s) (the
// Python SDK). Both are written from their language specifications; the
// tests compare them with node and python3.

// jsNumber returns Number(s) as JavaScript's StringToNumber computes it,
// and false for NaN and the infinities (which answer no call).
func jsNumber(s []byte) (float64, bool) {
	s = bytes.TrimFunc(s, isJSSpace)
	if len(s) == 0 {
		return 0, true // Number("") and Number("  ") are 0
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			return radixNumber(s[2:], base)
		}
	}
	if !jsDecimal(s) {
		return 0, false // NaN, or an infinity
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// jsDecimal reports whether s is a StrDecimalLiteral without Infinity:
// [+-] (digits [. [digits]] | . digits) [(e|E) [+-] digits].
func jsDecimal(s []byte) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		k := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i - k
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// radixNumber reads digits in base 2, 8 or 16 (no sign, no separator) as
// JavaScript does: the exact value rounded to the nearest float64.
func radixNumber(s []byte, base int) (float64, bool) {
	var v uint64
	for k, c := range s {
		d := -1
		switch {
		case '0' <= c && c <= '9':
			d = int(c - '0')
		case 'a' <= c && c <= 'f':
			d = int(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = int(c-'A') + 10
		}
		if d < 0 || d >= base {
			return 0, false
		}
		if v > math.MaxUint64/16 {
			// Too long for a uint64: exact, then rounded once.
			return bigRadix(s[k:], base, v)
		}
		v = v*uint64(base) + uint64(d)
	}
	return float64(v), true
}

func bigRadix(rest []byte, base int, v uint64) (float64, bool) {
	x := new(big.Int).SetUint64(v)
	y, ok := new(big.Int).SetString(string(rest), base)
	if !ok {
		return 0, false
	}
	x.Lsh(x, uint(len(rest))*uint(bitsPerDigit(base)))
	x.Add(x, y)
	f, _ := new(big.Float).SetInt(x).Float64()
	return f, !math.IsInf(f, 0)
}

func bitsPerDigit(base int) int {
	switch base {
	case 2:
		return 1
	case 8:
		return 3
	}
	return 4
}

// isJSSpace reports whether r is JavaScript white space or a line
// terminator (what Number trims).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}

// isPySpace reports whether r is white space that Python's int(s) skips:
// str.isspace but for U+001C to U+001F, which int refuses.
func isPySpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}

// appendPyInt appends to dst the JSON literal of int(s) as Python reads a
// string: white space around, an optional sign, decimal digits of any
// script (Unicode category Nd) with single underscores between them. It
// returns false (and dst unchanged) for anything else.
func appendPyInt(dst, s []byte) ([]byte, bool) {
	s = bytes.TrimFunc(s, isPySpace)
	start := len(dst)
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			dst = append(dst, '-')
		}
		s = s[1:]
	}
	from := len(dst)
	under := false
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		s = s[n:]
		if r == '_' {
			if len(dst) == from || under {
				return dst[:start], false
			}
			under = true
			continue
		}
		d, ok := digitValue(r)
		if !ok {
			return dst[:start], false
		}
		under = false
		dst = append(dst, byte('0'+d))
	}
	if len(dst) == from || under {
		return dst[:start], false
	}
	// A JSON literal has no leading zeros.
	z := from
	for z < len(dst)-1 && dst[z] == '0' {
		z++
	}
	return append(dst[:from], dst[z:]...), true
}

// digitValue returns the value of a decimal digit of any script. Unicode
// encodes each script's digits 0 to 9 in a run of ten, so within a range
// of category Nd the value is the distance from the range's start mod 10.
func digitValue(r rune) (int, bool) {
	if '0' <= r && r <= '9' {
		return int(r - '0'), true
	}
	if r < 0x80 || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}
