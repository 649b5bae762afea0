package policy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/valyala/fastjson"
)

// Reading a call's arguments for a condition. A condition decides on what
// it reads, and the child acts on what its own decoder reads: where two
// readers of the same bytes see different values, a rule could allow
// what the tool then does otherwise. So the arguments are read from the
// line's exact bytes, and read only where every common reader reads them
// alike; anything else makes a rule that reads them refuse the call.
// Refused, with the reason recorded:
//
//   - text that is not valid JSON (encoding/json's reading of the grammar);
//   - invalid UTF-8 anywhere (replaced by some decoders, kept or refused by
//     others), an escape of an unpaired surrogate (the same), an escaped
//     U+0000 (where a C decoder cuts the string);
//   - a key repeated in one object at any depth, as written or once its
//     escapes are decoded ("p\u0061th" is "path"): first-wins and
//     last-wins decoders bind different values;
//   - two keys of one object that differ only by case, Unicode's simple
//     folding as encoding/json matches struct fields: a Go server reading
//     into a struct takes either;
//   - a number that float64 does not hold exactly as written, where some
//     decoders read it as an integer of arbitrary size (Python) or int64
//     and others as a float64 (JavaScript): a whole number beyond ±2^53,
//     or any number beyond float64's range.
//   - nesting deeper than fastjson.MaxDepth.
//
// Values are given to CEL as JSON values: objects as maps with string keys,
// arrays as lists, strings, bools, null, and numbers as int when written
// as a whole number without fraction or exponent, as double otherwise
// (CEL compares int and double by value: 1 == 1.0). They are built as CEL
// values once per call, so that the conditions of every rule a call meets
// read them without converting them again.

// maxExactInt is 2^53, beyond which float64 does not hold every integer.
const maxExactInt = 1 << 53

// argsReader reads the arguments of one call at a time. It is not safe for
// concurrent use; its parser is reused between calls, and the values it
// returns stay valid until the next read.
type argsReader struct {
	p    fastjson.Parser
	num  []byte
	kvs  []keyVal // the keys of the objects being checked, outermost first
	objs []keyVal // the keys of the objects made (jsonObject), until the next read
	fb   []byte   // folded keys of one object, end to end
	fend []int    // where each folded key ends in fb
	fold map[string]int
}

// keyVal is a key of an object, decoded, and its value.
type keyVal struct {
	k []byte
	v *fastjson.Value
}

// maxPairwise is the most keys an object's clash check compares pairwise;
// more are checked through a map.
const maxPairwise = 16

// clash returns why some decoder reads an object of keys kvs differently
// ("" if none does): a key repeated (decoded), or two keys that differ
// only by case. A repeated key is also a case clash, so both are found by
// comparing folded keys; the first clash in the object's order is named.
func (a *argsReader) clash(kvs []keyVal) string {
	a.fb, a.fend = a.fb[:0], a.fend[:0]
	for _, e := range kvs {
		a.fb = foldKey(a.fb, e.k)
		a.fend = append(a.fend, len(a.fb))
	}
	folded := func(i int) []byte {
		if i == 0 {
			return a.fb[:a.fend[0]]
		}
		return a.fb[a.fend[i-1]:a.fend[i]]
	}
	why := func(i, j int) string {
		if bytes.Equal(kvs[i].k, kvs[j].k) {
			return "duplicate key " + quoteShort(string(kvs[j].k))
		}
		return "keys " + quoteShort(string(kvs[i].k)) + " and " + quoteShort(string(kvs[j].k)) + " differ only by case"
	}
	if len(kvs) <= maxPairwise {
		for j := 1; j < len(kvs); j++ {
			for i := range j {
				if bytes.Equal(folded(i), folded(j)) {
					return why(i, j)
				}
			}
		}
		return ""
	}
	if a.fold == nil {
		a.fold = map[string]int{}
	}
	clear(a.fold)
	for j := range kvs {
		if i, ok := a.fold[string(folded(j))]; ok {
			return why(i, j)
		}
		a.fold[string(folded(j))] = j
	}
	return ""
}

// read returns the arguments as CEL reads them, or the reason some
// decoder reads them differently. raw is params.arguments as the line
// carries it; absent arguments (has false) read as an empty object, which
// is what servers take them for.
func (a *argsReader) read(raw []byte, has bool) (ref.Val, string) {
	if !has {
		return emptyArgs, ""
	}
	if !json.Valid(raw) {
		return nil, "arguments: not valid JSON"
	}
	if why := unclearText(raw); why != "" {
		return nil, "arguments: " + why
	}
	v, err := a.p.ParseBytes(raw)
	if err != nil {
		return nil, "arguments: nested deeper than " + strconv.Itoa(fastjson.MaxDepth)
	}
	a.objs = a.objs[:0]
	if why := a.check(v); why != "" {
		return nil, "arguments: " + why
	}
	return a.value(v), ""
}

// emptyArgs is absent arguments: an empty object.
var emptyArgs = types.NewMap(types.DefaultTypeAdapter, map[string]ref.Val{})

// check walks v for what decoders read differently: keys that clash in
// an object (clash) and numbers float64 does not hold (number). It
// allocates nothing once the reader has grown to the arguments' shape.
func (a *argsReader) check(v *fastjson.Value) string {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		// An object's keys are checked before its values; a nested
		// object's keys go on the stack above this object's.
		base := len(a.kvs)
		o.Visit(func(key []byte, val *fastjson.Value) {
			a.kvs = append(a.kvs, keyVal{key, val})
		})
		defer func() { a.kvs = a.kvs[:base] }()
		if why := a.clash(a.kvs[base:]); why != "" {
			return why
		}
		for i := base; i < len(a.kvs); i++ {
			if why := a.check(a.kvs[i].v); why != "" {
				return why
			}
		}
	case fastjson.TypeArray:
		arr, _ := v.Array()
		for _, e := range arr {
			if why := a.check(e); why != "" {
				return why
			}
		}
	case fastjson.TypeNumber:
		a.num = v.MarshalTo(a.num[:0])
		if _, _, _, why := number(a.num); why != "" {
			return why
		}
	}
	return ""
}

// value is v, which check passed, as a CEL value. An object's values are
// made when a condition reads them (jsonObject); an array's at once.
func (a *argsReader) value(v *fastjson.Value) ref.Val {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		base := len(a.objs)
		o.Visit(func(key []byte, val *fastjson.Value) {
			a.objs = append(a.objs, keyVal{key, val})
		})
		return &jsonObject{a: a, kvs: a.objs[base:len(a.objs):len(a.objs)]}
	case fastjson.TypeArray:
		arr, _ := v.Array()
		l := make([]ref.Val, len(arr))
		for i, e := range arr {
			l[i] = a.value(e)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, l)
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return types.String(s)
	case fastjson.TypeNumber:
		a.num = v.MarshalTo(a.num[:0])
		n, f, isFloat, _ := number(a.num)
		if isFloat {
			return types.Double(f)
		}
		return types.Int(n)
	case fastjson.TypeTrue:
		return types.True
	case fastjson.TypeFalse:
		return types.False
	}
	return types.NullValue
}

// number reads a JSON number literal (json.Valid checked its grammar): an
// int n when written whole, a double f (isFloat) otherwise, or why
// float64 does not hold it.
func number(lit []byte) (n int64, f float64, isFloat bool, why string) {
	if bytes.IndexAny(lit, ".eE") < 0 {
		n, err := strconv.ParseInt(string(lit), 10, 64)
		if err != nil || n > maxExactInt || n < -maxExactInt {
			return 0, 0, false, "number " + shortText(lit) + " is beyond float64's exact range (±2^53)"
		}
		return n, 0, false, ""
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return 0, 0, true, "number " + shortText(lit) + " is beyond float64's range"
	}
	return 0, f, true, ""
}

// unclearText reports text inside valid JSON that decoders read
// differently: invalid UTF-8, an escaped unpaired surrogate, an escaped
// U+0000. A backslash occurs only inside strings in valid JSON, so escapes
// are found by walking backslashes alone.
func unclearText(raw []byte) string {
	if !utf8.Valid(raw) {
		return "invalid UTF-8"
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1:])
		i += 4
		switch {
		case r == 0:
			return `an escaped U+0000 (\u0000), where some decoders cut the string`
		case utf16.IsSurrogate(r):
			if r < 0xDC00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo := hex4(raw[i+3:]); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return "an escaped unpaired surrogate"
		}
	}
	return ""
}

// hex4 decodes the 4 hex digits json.Valid guarantees after \u.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// foldKey appends to dst one spelling of every key that encoding/json's
// case-insensitive field match takes for k: each rune becomes the
// smallest of its simple-folding orbit (k, K and the Kelvin sign are K).
func foldKey(dst []byte, k []byte) []byte {
	for i := 0; i < len(k); {
		c := k[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(k[i:])
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		dst = utf8.AppendRune(dst, m)
		i += n
	}
	return dst
}

// maxQuoted bounds what a reason quotes of the arguments: a key or a
// number is the client's text, and a reason is recorded.
const maxQuoted = 64

// quoteShort quotes s for a reason, cut to maxQuoted bytes.
func quoteShort(s string) string {
	if len(s) > maxQuoted {
		k := maxQuoted
		for k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		return strconv.Quote(s[:k]) + "…"
	}
	return strconv.Quote(s)
}

// shortText is a number literal for a reason, cut to maxQuoted bytes
// (its bytes are ASCII: json.Valid checked them).
func shortText(lit []byte) string {
	if len(lit) > maxQuoted {
		return string(lit[:maxQuoted]) + "…"
	}
	return string(lit)
}
