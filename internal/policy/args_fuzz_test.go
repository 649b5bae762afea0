package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"github.com/valyala/fastjson"

	"github.com/aegisrelay/aegis/internal/gate"
)

// FuzzArgs is a differential of the argument reader (argsReader) against
// a second reader built on encoding/json's tokens (refArgs), which reads
// the same bytes with each decoder's habits in view and names every
// reading some decoder makes differently. For any bytes:
//
//   - what argsReader accepts, the second reader finds unambiguous (no
//     repeated key, no two keys bytes.EqualFold takes for one, no number
//     beyond float64's exact integers or its range, no U+0000 and no
//     U+FFFD that the line does not write as such, nesting within
//     fastjson.MaxDepth), and the CEL value a condition sees equals
//     encoding/json's decoding, value by value (numbers as int when
//     written whole, as double otherwise);
//   - what argsReader refuses, the second reader finds a reason for too;
//   - the reader, reused, reads the same bytes the same way again;
//   - a condition over the arguments costs, as CEL's tracking counts it,
//     at most what its static bound allows for a call of that size: the
//     bound under which conditions run without tracking holds.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `"x"`, `{"path":"/srv/data/a"}`,
		`{"path":"/srv/data/a","path":"/etc/passwd"}`,
		`{"path":"/srv/data/a","p\u0061th":"/etc/passwd"}`,
		`{"path":"/srv/data/a","Path":"/etc/passwd"}`,
		`{"o":{"k":1,"\u212a":2}}`, `{"s":"\u017f","S":1}`,
		`{"n":9007199254740992}`, `{"n":9007199254740993}`, `{"n":-9007199254740993}`,
		`{"n":1e400}`, `{"n":1.5e-400}`, `{"n":-0}`, `{"n":1.0}`, `{"n":12345678901234567890123}`,
		`{"p":"\ud800"}`, `{"p":"\ud83d\ude00"}`, `{"p":"\ud800\u0041"}`, `{"p":"\\ud800"}`,
		`{"p":"a\u0000b"}`, "{\"p\":\"\xff\"}", "{\"p\":\"\xef\xbf\xbd\"}", `{"p":"\ufffd"}`,
		`{"l":[1,{"b":true,"c":null}],"m":{"x":[[]]}}`,
		`{"a":` + strings.Repeat("[", 299) + strings.Repeat("]", 299) + `}`,
		`{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
		`{"path":}`, `{"a":1,}`, ` {"a" : 1 } `,
	} {
		f.Add([]byte(s))
	}
	conds := make([]*cond, len(boundConds))
	for i, w := range boundConds {
		c, err := compileCond(w)
		if err != nil {
			f.Fatal(err)
		}
		conds[i] = c
	}
	var a argsReader // reused, as a frameDecider reuses it
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, why := a.read(raw, true)
		want, refWhy := refArgs(raw)
		switch {
		case why == "" && refWhy != "":
			t.Fatalf("argsReader accepts %q; %s", raw, refWhy)
		case why != "" && refWhy == "":
			t.Fatalf("argsReader refuses %q (%s); every reader reads it alike", raw, why)
		case why != "":
			return
		}
		if err := sameValue(v, want, "arguments"); err != nil {
			t.Fatalf("argsReader reads %q otherwise than encoding/json: %v", raw, err)
		}
		v2, why2 := a.read(raw, true)
		if why2 != "" || sameValue(v2, want, "arguments") != nil {
			t.Fatalf("argsReader reused reads %q otherwise (%s)", raw, why2)
		}
		call := &gate.Call{Tool: []byte("t"), Args: raw, HasArgs: true, Caller: &gate.Caller{Principal: "uid:1000"}}
		var vs vars
		vs.reset(call, "t")
		vs.args = v
		for _, c := range conds {
			if vs.size > c.fastMax {
				continue
			}
			if got := trackedCost(t, c, &vs); got > MaxCost {
				t.Fatalf("%s over %q (%d bytes, fastMax %d) costs %d, past MaxCost: the fast path would run it unbounded", c.text, raw, vs.size, c.fastMax, got)
			}
		}
	})
}

// refArgs reads raw with encoding/json (a Decoder's tokens, numbers as
// json.Number) and says what some decoder would read differently: "" and
// the value if nothing.
func refArgs(raw []byte) (any, string) {
	if !json.Valid(raw) {
		return nil, "encoding/json finds it not JSON"
	}
	if !utf8.Valid(raw) {
		return nil, "invalid UTF-8"
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	r := refReader{d: d}
	v := r.value(0)
	if r.why != "" {
		return nil, r.why
	}
	// A U+FFFD in a decoded string is one the line writes (the character
	// itself or its escape) or one encoding/json put for an unpaired
	// surrogate escape, which other decoders read otherwise.
	if w := fffdWritten(raw); r.fffd > w {
		return nil, fmt.Sprintf("%d U+FFFD decoded, %d written: an unpaired surrogate", r.fffd, w)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Sprintf("more after the value: %v", err)
	}
	return v, ""
}

type refReader struct {
	d    *json.Decoder
	why  string
	fffd int // U+FFFD decoded, in keys and strings
}

// fffdWritten counts the U+FFFD raw writes: the character, and the escape
// \ufffd (a backslash that is not itself escaped, any case).
func fffdWritten(raw []byte) int {
	n := bytes.Count(raw, []byte("\uFFFD"))
	for i := 0; i+6 <= len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if !bytes.EqualFold(raw[i+1:i+6], []byte("ufffd")) {
			i++ // an escape of two bytes at least: \\ is not the start of another
			continue
		}
		n++
		i += 5
	}
	return n
}

func (r *refReader) fail(format string, args ...any) {
	if r.why == "" {
		r.why = fmt.Sprintf(format, args...)
	}
}

var maxExact = new(big.Int).Lsh(big.NewInt(1), 53)

func (r *refReader) value(depth int) any {
	tok, err := r.d.Token()
	if err != nil {
		r.fail("token: %v", err)
		return nil
	}
	return r.fromToken(tok, depth)
}

func (r *refReader) fromToken(tok json.Token, depth int) any {
	switch x := tok.(type) {
	case json.Delim:
		if depth+1 > fastjson.MaxDepth {
			r.fail("nested deeper than %d", fastjson.MaxDepth)
		}
		if x == '[' {
			l := []any{}
			for r.d.More() && r.why == "" {
				l = append(l, r.value(depth+1))
			}
			r.d.Token() // ]
			return l
		}
		m := map[string]any{}
		var keys []string
		for r.d.More() && r.why == "" {
			kt, err := r.d.Token()
			if err != nil {
				r.fail("key: %v", err)
				return nil
			}
			k := kt.(string)
			r.text(k)
			for _, prev := range keys {
				switch {
				case prev == k:
					r.fail("key %q repeated: first-wins and last-wins decoders bind different values", k)
				case bytes.EqualFold([]byte(prev), []byte(k)):
					r.fail("keys %q and %q: encoding/json's field match takes either", prev, k)
				}
			}
			keys = append(keys, k)
			m[k] = r.value(depth + 1)
		}
		r.d.Token() // }
		return m
	case string:
		r.text(x)
		return x
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			n, ok := new(big.Int).SetString(s, 10)
			if !ok || n.CmpAbs(maxExact) > 0 {
				r.fail("integer %s beyond float64's exact integers", s)
			}
			return x
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			r.fail("number %s beyond float64's range", s)
		}
		return x
	case bool, nil:
		return x
	}
	r.fail("token %T", tok)
	return nil
}

// text checks a decoded string: U+0000 (only an escape writes it) cuts a
// C decoder's string; and counts its U+FFFD (refArgs).
func (r *refReader) text(s string) {
	if strings.ContainsRune(s, 0) {
		r.fail("U+0000 in %q", s)
	}
	r.fffd += strings.Count(s, "\uFFFD")
}

// sameValue reports how the CEL value v differs from encoding/json's
// decoding w (UseNumber), or nil.
func sameValue(v ref.Val, w any, at string) error {
	switch x := w.(type) {
	case nil:
		if v != types.NullValue {
			return fmt.Errorf("%s: %v; want null", at, v)
		}
	case bool:
		if v != types.Bool(x) {
			return fmt.Errorf("%s: %v; want %v", at, v, x)
		}
	case string:
		if v != types.String(x) {
			return fmt.Errorf("%s: %v; want %q", at, v, x)
		}
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			f, _ := strconv.ParseFloat(string(x), 64)
			if d, ok := v.(types.Double); !ok || float64(d) != f {
				return fmt.Errorf("%s: %v (%T); want double %v", at, v, v, f)
			}
			return nil
		}
		n, err := x.Int64()
		if i, ok := v.(types.Int); err != nil || !ok || int64(i) != n {
			return fmt.Errorf("%s: %v (%T); want int %s", at, v, v, x)
		}
	case []any:
		l, ok := v.(traits.Lister)
		if !ok || l.Size() != types.Int(len(x)) {
			return fmt.Errorf("%s: %v; want a list of %d", at, v, len(x))
		}
		for i, e := range x {
			if err := sameValue(l.Get(types.Int(i)), e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		m, ok := v.(traits.Mapper)
		if !ok || m.Size() != types.Int(len(x)) {
			return fmt.Errorf("%s: %v; want a map of %d", at, v, len(x))
		}
		for k, e := range x {
			got, found := m.Find(types.String(k))
			if !found {
				return fmt.Errorf("%s: no key %q", at, k)
			}
			if err := sameValue(got, e, at+"."+k); err != nil {
				return err
			}
		}
	default:
		return errors.New(at + ": unexpected reference value")
	}
	return nil
}
