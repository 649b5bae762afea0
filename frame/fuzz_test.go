package frame

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// FuzzIDKey checks that ids are matched by value (frame/doc.go, "Ids":
// 1 and 1.0 are one id, "1" another), against references independent of
// Key's format: two numbers have equal Keys if and only if math/big reads
// them as the same rational (1, 1.0, 10e-1; 9007199254740993 is not
// 9007199254740992), two strings if and only if encoding/json decodes them
// to the same string, null only equals null, and a string never equals a
// number. a and b are the ids' JSON tokens.
func FuzzIDKey(f *testing.F) {
	for _, p := range [][2]string{
		{"1", "1.0"}, {"1e0", "10e-1"}, {"-0", "0"}, {"-0.0e5", "0e-7"}, {"100", "1E+2"},
		{"9007199254740993", "9007199254740992"}, {"123456789012345678901234567890e-20", "1234567890.1234567890123456789"},
		{"0.001", "1e-3"}, {"1e400", "10e399"}, {"1", `"1"`}, {`"a\u0062"`, `"ab"`}, {`"\ud800"`, `"\ufffd"`},
		{"\"\xff\"", `"\ufffd"`}, {"null", "null"}, {"null", `"null"`}, {"true", "true"}, {"[1]", "[1]"}, {"01", "1"},
	} {
		f.Add(p[0], p[1])
	}
	var ca, cb Classifier
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, ta, ok := idOf(&ca, a)
		if !ok {
			return
		}
		kb, tb, ok := idOf(&cb, b)
		if !ok {
			return
		}
		if (ta == IDInvalid) != (ka == nil) || (tb == IDInvalid) != (kb == nil) {
			t.Fatalf("ids %s (%v, key %q) and %s (%v, key %q): a key must be nil exactly for an invalid id", a, ta, ka, b, tb, kb)
		}
		got := ka != nil && kb != nil && bytes.Equal(ka, kb)
		var want bool
		switch {
		case ta == IDInvalid || tb == IDInvalid || ta != tb:
			want = false
		case ta == IDNull:
			want = true
		case ta == IDString:
			var sa, sb string
			if json.Unmarshal([]byte(a), &sa) != nil || json.Unmarshal([]byte(b), &sb) != nil {
				t.Fatalf("ids %s and %s are strings to the Classifier but not to encoding/json", a, b)
			}
			want = sa == sb
		case ta == IDNumber:
			ra, okA := ratOf(a)
			rb, okB := ratOf(b)
			if !okA || !okB {
				return // exponents too large for math/big in a fuzz exec; TestIDKey covers them
			}
			want = ra.Cmp(rb) == 0
		}
		if got != want {
			t.Fatalf("ids %s (%v, key %q) and %s (%v, key %q): keys equal = %v; the reference says the ids are equal = %v", a, ta, ka, b, tb, kb, got, want)
		}
	})
}

// idOf classifies a response with the id token tok and returns its Key
// (copied) and type; ok is false if tok is not one JSON value.
func idOf(c *Classifier, tok string) ([]byte, IDType, bool) {
	var f Frame
	c.Classify([]byte(`{"id":`+tok+`,"result":{}}`), &f)
	if f.Kind != Single || len(f.Msgs) != 1 || !f.Msgs[0].HasID || f.Anomaly != "" {
		return nil, 0, false
	}
	// The id must be tok itself, not something that swallowed the rest
	// ("1,\"x\":2" would make another object).
	if strings.TrimSpace(string(f.Msgs[0].ID.Raw)) != strings.TrimSpace(tok) && f.Msgs[0].ID.Type != IDInvalid {
		return nil, 0, false
	}
	id := f.Msgs[0].ID
	return bytes.Clone(id.Key), id.Type, true
}

// ratOf reads a JSON number exactly, refusing exponents beyond ±10000 so
// that math/big stays small.
func ratOf(lit string) (*big.Rat, bool) {
	lit = strings.TrimSpace(lit)
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || e > 10000 || e < -10000 {
			return nil, false
		}
	}
	if len(lit) > 2000 {
		return nil, false
	}
	return new(big.Rat).SetString(lit)
}
