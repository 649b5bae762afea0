package frame

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func idKey(t *testing.T, raw string) string {
	t.Helper()
	var c Classifier
	var f Frame
	c.Classify([]byte(`{"id":`+raw+`,"result":{}}`), &f)
	if f.Kind != Single || len(f.Msgs) != 1 || !f.Msgs[0].HasID {
		t.Fatalf("Classify(id %s) = %s; want a response with an id", raw, describe(&f))
	}
	return string(f.Msgs[0].ID.Key)
}

func TestIDKey(t *testing.T) {
	tests := []struct {
		raw  string
		want string
	}{
		{`0`, "n0"},
		{`-0`, "n0"},
		{`0.000e-5`, "n0"},
		{`-0.0E+99999999999999999999999`, "n0"},
		{`1`, "n1e0"},
		{`1.0`, "n1e0"},
		{`1e0`, "n1e0"},
		{`10e-1`, "n1e0"},
		{`0.1e1`, "n1e0"},
		{`0.001E3`, "n1e0"},
		{`100`, "n1e2"},
		{`-100.5`, "n-1005e2"},
		{`0.00120`, "n12e-3"},
		{`1E+2`, "n1e2"},
		{`1e-0000000000000000000000002`, "n1e-2"},
		{`9007199254740993`, "n9007199254740993e15"},
		{`9007199254740992`, "n9007199254740992e15"},
		{`123456789012345678901234567890`, "n12345678901234567890123456789e29"},
		{`1e999999999999999999`, "n1e999999999999999999"},
		{`1e9999999999999999999`, "n1e9999999999999999999"},
		{`123e9999999999999999999`, "n123e10000000000000000001"},
		{`0.00123e-9999999999999999999`, "n123e-10000000000000000002"},
		{`0.00123e9999999999999999999`, "n123e9999999999999999996"},
		{`1000e-10000000000000000000`, "n1e-9999999999999999997"},
		{`-1e-10000000000000000000`, "n-1e-10000000000000000000"},
		{`"1"`, "s1"},
		{`"a\u0062"`, "sab"},
		{`""`, "s"},
		{`"\ud800"`, "s\uFFFD"},
		{`null`, "N"},
		{`true`, ""},
		{`{}`, ""},
		{`[1]`, ""},
	}
	for _, tt := range tests {
		if got := idKey(t, tt.raw); got != tt.want {
			t.Errorf("Classify(id %s).ID.Key = %q; want %q", tt.raw, got, tt.want)
		}
	}
}

// refNumberKey is an independent reference for appendNumberKey, using
// math/big for the exponent arithmetic.
func refNumberKey(lit string) string {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(lit), "e")
	e := new(big.Int)
	if exp != "" {
		e.SetString(strings.TrimPrefix(exp, "+"), 10)
	}
	ip, fp, _ := strings.Cut(mant, ".")
	digits := ip + fp
	// value = 0.digits × 10^len(ip) × 10^e
	trimmed := strings.TrimLeft(digits, "0")
	if trimmed == "" {
		return "n0"
	}
	lead := len(digits) - len(trimmed)
	trimmed = strings.TrimRight(trimmed, "0")
	e.Add(e, big.NewInt(int64(len(ip)-lead-1)))
	sign := ""
	if neg {
		sign = "-"
	}
	return "n" + sign + trimmed + "e" + e.String()
}

// TestIDKeyProperty checks number keys against math/big: equal keys for
// equal values (big.Rat), and the reference's formatting for any exponent.
func TestIDKeyProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		return string(b)
	}
	randLit := func() string {
		var sb strings.Builder
		if r.IntN(3) == 0 {
			sb.WriteByte('-')
		}
		if r.IntN(4) == 0 {
			sb.WriteByte('0')
		} else {
			sb.WriteByte(byte('1' + r.IntN(9)))
			sb.WriteString(digits(r.IntN(25)))
		}
		if r.IntN(2) == 0 {
			sb.WriteByte('.')
			sb.WriteString(digits(1 + r.IntN(25)))
		}
		if r.IntN(2) == 0 {
			sb.WriteString([]string{"e", "E"}[r.IntN(2)])
			sb.WriteString([]string{"", "+", "-"}[r.IntN(3)])
			if r.IntN(8) == 0 {
				sb.WriteString(digits(1 + r.IntN(30)))
			} else {
				sb.WriteString(strconv.Itoa(r.IntN(40)))
			}
		}
		return sb.String()
	}
	// sameValue writes m × 10^e (m a digit string without leading zeros) in
	// three ways: plain, with the point moved, and as 0.000m.
	sameValue := func(m string, e int) [3]string {
		p := 1 + r.IntN(len(m))
		frac := m[p:] + strings.Repeat("0", r.IntN(3))
		if frac == "" {
			frac = "0"
		}
		k := r.IntN(4)
		return [3]string{
			m + "e" + strconv.Itoa(e),
			m[:p] + "." + frac + "E" + strings.Replace("+"+strconv.Itoa(e+len(m)-p), "+-", "-", 1),
			"0." + strings.Repeat("0", k) + m + "e" + strconv.Itoa(e+len(m)+k),
		}
	}
	for range 5000 {
		m := string(byte('1'+r.IntN(9))) + digits(r.IntN(30))
		forms := sameValue(m, r.IntN(200)-100)
		k0 := string(appendNumberKey(nil, []byte(forms[0])))
		for _, lit := range forms[1:] {
			if k := string(appendNumberKey(nil, []byte(lit))); k != k0 {
				t.Fatalf("appendNumberKey(%s) = %q; want %q, the key of %s", lit, k, k0, forms[0])
			}
		}
	}
	var c Classifier
	for range 20000 {
		a, b := randLit(), randLit()
		ka := string(appendNumberKey(nil, []byte(a)))
		kb := string(appendNumberKey(nil, []byte(b)))
		if want := refNumberKey(a); ka != want {
			t.Fatalf("appendNumberKey(%s) = %q; want %q", a, ka, want)
		}
		ra, okA := new(big.Rat).SetString(a)
		rb, okB := new(big.Rat).SetString(b)
		if okA && okB && len(a) < 60 && len(b) < 60 && !hugeExp(a) && !hugeExp(b) {
			if (ra.Cmp(rb) == 0) != (ka == kb) {
				t.Fatalf("keys of %s and %s: %q, %q; big.Rat equal = %v", a, b, ka, kb, ra.Cmp(rb) == 0)
			}
		}
		var f Frame
		c.Classify([]byte(`{"id":`+a+`,"result":{}}`), &f)
		if got := string(f.Msgs[0].ID.Key); got != ka {
			t.Fatalf("Classify(id %s).ID.Key = %q; want %q", a, got, ka)
		}
	}
}

func hugeExp(lit string) bool {
	_, e, ok := strings.Cut(strings.ToLower(lit), "e")
	return ok && len(strings.TrimLeft(strings.TrimLeft(e, "+-"), "0")) > 3
}
