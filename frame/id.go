package frame

import (
	"strconv"
)

// IDType is the JSON type of a message's id.
type IDType uint8

const (
	IDNone    IDType = iota // no id member
	IDNull                  // null
	IDString                // a string
	IDNumber                // a number
	IDInvalid               // an object, array or boolean: not a JSON-RPC id
)

var idTypeNames = [...]string{"none", "null", "string", "number", "invalid"}

func (t IDType) String() string {
	if int(t) < len(idTypeNames) {
		return idTypeNames[t]
	}
	return "IDType(" + strconv.Itoa(int(t)) + ")"
}

// ID is a JSON-RPC id. Its byte slices alias the classified line or the
// Classifier's buffers and are valid until the next Classify on the same
// Classifier (and, for Raw, while the line's bytes are unchanged).
type ID struct {
	Type IDType
	// Raw is the id's token exactly as it appears in the line: a number's
	// literal (1.0), a string with its quotes and escapes as sent.
	Raw []byte
	// Str is an IDString's decoded value (as encoding/json decodes it).
	Str []byte
	// Key identifies the id's value: two ids answer each other if and only
	// if their Keys are equal. Ids are matched by value, as JSON-RPC peers
	// compare them: 1, 1.0, 1e0 and 10e-1 are one number, -0 is 0, "1" is a
	// string and differs from 1. Numbers compare exactly, without float64
	// rounding (9007199254740993 is not 9007199254740992). Key is nil for
	// IDNone and IDInvalid (such ids match nothing). Its format is private
	// to this process: match on it, never store it.
	//
	//	IDNull    "N"
	//	IDString  "s" + decoded value
	//	IDNumber  "n0" for zero, else "n" [ "-" ] digits "e" exponent: the
	//	          value is d.ddd × 10^exponent, digits without leading or
	//	          trailing zeros, exponent in decimal with an optional "-".
	Key []byte
}

// appendNumberKey appends the Key of the validated JSON number lit to dst.
// It allocates only if dst must grow. Exponents of any length are exact.
func appendNumberKey(dst, lit []byte) []byte {
	dst = append(dst, 'n')
	neg := lit[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	s := i
	for i < len(lit) && isDigit(lit[i]) {
		i++
	}
	intPart := lit[s:i]
	var frac []byte
	if i < len(lit) && lit[i] == '.' {
		i++
		s := i
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
		frac = lit[s:i]
	}
	expNeg := false
	var exp []byte
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if lit[i] == '+' || lit[i] == '-' {
			expNeg = lit[i] == '-'
			i++
		}
		exp = lit[i:]
	}

	// The significand's digits are intPart++frac; find the first and last
	// non-zero digit g and h (indices into that concatenation).
	n := len(intPart) + len(frac)
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	g := 0
	for g < n && digit(g) == '0' {
		g++
	}
	if g == n {
		return append(dst, '0') // zero, of either sign
	}
	h := n - 1
	for digit(h) == '0' {
		h--
	}
	if neg {
		dst = append(dst, '-')
	}
	for k := g; k <= h; k++ {
		dst = append(dst, digit(k))
	}
	dst = append(dst, 'e')

	// value = 0.(digits) × 10^len(intPart) × 10^exp
	//       = d.ddd × 10^(len(intPart) - g - 1 + exp)
	adj := int64(len(intPart) - g - 1)
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	if len(exp) <= 18 {
		var e int64
		for _, d := range exp {
			e = e*10 + int64(d-'0')
		}
		if expNeg {
			e = -e
		}
		return strconv.AppendInt(dst, e+adj, 10) // |e| < 1e18, |adj| < 2^62: no overflow
	}
	return appendBigSum(dst, expNeg, exp, adj)
}

// appendBigSum appends the decimal form of ±x + adj, where x is a decimal
// digit string of at least 19 digits without leading zeros (so |x| > |adj|
// and the result has the sign of ±x).
func appendBigSum(dst []byte, neg bool, x []byte, adj int64) []byte {
	if neg {
		dst = append(dst, '-')
	}
	start := len(dst)
	dst = append(dst, '0') // room for a carry
	dst = append(dst, x...)
	m := uint64(adj)
	if adj < 0 {
		m = uint64(-adj)
	}
	add := (adj > 0) != neg // same sign as ±x: the magnitude grows
	j := len(dst) - 1
	for m != 0 {
		d := int(dst[j] - '0')
		sub := int(m % 10)
		m /= 10
		if add {
			d += sub
			if d >= 10 {
				d -= 10
				m++
			}
		} else {
			d -= sub
			if d < 0 {
				d += 10
				m++
			}
		}
		dst[j] = byte('0' + d)
		j--
	}
	k := start
	for dst[k] == '0' {
		k++
	}
	n := copy(dst[start:], dst[k:])
	return dst[:start+n]
}
