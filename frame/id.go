package frame

import (
	"bytes"
	"math"
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

// LooseKeys calls fn with the Key of each number that a mainstream client
// takes the response id to be, other than id.Key itself, each once; buf is
// scratch space, returned for reuse, and a key passed to fn is valid only
// during the call. The readings (doc.go, "Ids"):
//
//   - a number, as JavaScript reads it (JSON.parse rounds it to the
//     nearest float64: 9007199254740993 is 9007199254740992) and as the Go
//     SDK does (that float64 truncated to an int64: 1.5 is 1);
//   - a string, as the TypeScript SDK's Number(id) reads it (" 1 ", "1e0",
//     "0x1", "" are numbers) and as the Python SDK's int(id) does ("+1",
//     "1_0", digits of any script).
//
// Only finite numbers are keys. A plain integer literal of up to 15 digits
// (every reading is the value itself) costs one pass over its bytes.
func (id *ID) LooseKeys(buf []byte, fn func(key []byte)) []byte {
	buf = buf[:0]
	var lits [2][2]int // the readings' number literals, as buf[from:to]
	n := 0
	switch id.Type {
	case IDNumber:
		if plainInt(id.Raw) {
			return buf
		}
		f, err := strconv.ParseFloat(string(id.Raw), 64)
		if err != nil || math.IsInf(f, 0) {
			return buf
		}
		buf = strconv.AppendFloat(buf, f, 'g', -1, 64)
		lits[n], n = [2]int{0, len(buf)}, n+1
		if t := math.Trunc(f); t != f && math.Abs(t) < 1<<63 {
			from := len(buf)
			buf = strconv.AppendInt(buf, int64(t), 10)
			lits[n], n = [2]int{from, len(buf)}, n+1
		}
	case IDString:
		if f, ok := jsNumber(id.Str); ok {
			buf = strconv.AppendFloat(buf, f, 'g', -1, 64)
			lits[n], n = [2]int{0, len(buf)}, n+1
		}
		from := len(buf)
		var ok bool
		if buf, ok = appendPyInt(buf, id.Str); ok {
			lits[n], n = [2]int{from, len(buf)}, n+1
		}
	default:
		return buf
	}
	prev := -1 // where the previous key starts in buf
	for _, l := range lits[:n] {
		k := len(buf)
		buf = appendNumberKey(buf, buf[l[0]:l[1]])
		key := buf[k:]
		if bytes.Equal(key, id.Key) || prev >= 0 && bytes.Equal(key, buf[prev:k]) {
			continue
		}
		fn(key)
		prev = k
	}
	return buf
}

// plainInt reports whether lit, a valid JSON number, is an integer of at
// most 15 digits with no fraction or exponent: exact as a float64 and as
// an int64, so that no reading of it differs from its value.
func plainInt(lit []byte) bool {
	if len(lit) > 0 && lit[0] == '-' {
		lit = lit[1:]
	}
	if len(lit) > 15 {
		return false
	}
	for _, c := range lit {
		if !isDigit(c) {
			return false
		}
	}
	return true
}
