package record

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testTracestate  = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

// TestValidTraceparent: version 00 in W3C Trace Context's form alone.
func TestValidTraceparent(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{testTraceparent, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false}, // upper case
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false}, // trace-id zero
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false}, // parent-id zero
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false}, // another version
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{testTraceparent + "-extra", false},
		{testTraceparent[:54], false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := ValidTraceparent([]byte(tt.s)); got != tt.want {
			t.Errorf("ValidTraceparent(%q) = %v; want %v", tt.s, got, tt.want)
		}
	}
}

// TestValidTracestate: the W3C grammar, at most 32 members, no key
// twice, at most MaxTracestate bytes.
func TestValidTracestate(t *testing.T) {
	many := func(n int) string {
		var m []string
		for i := range n {
			m = append(m, "k"+strconv.Itoa(i)+"=v")
		}
		return strings.Join(m, ",")
	}
	tests := []struct {
		s    string
		want bool
	}{
		{testTracestate, true},
		{"", true},
		{"a=b, c=d ,\t,e=f", true},
		{"tenant@sys=v", true},
		{"0tenant@sys=v", true},
		{"a=b c", true},
		{`a="\`, true}, // " and \ are value characters
		{many(32), true},
		{many(33), false},
		{"a=b,a=c", false},
		{"A=b", false},
		{"0a=b", false},
		{"a", false},
		{"a=", false},
		{"a=b ", true}, // trailing white space belongs to the list, not the value
		{"a=b=c", false},
		{"a=\x01", false},
		{"a=é", false},
		{"tenant@=v", false},
		{"tenant@0sys=v", false},
		{"tenant@systemnamelong1=v", false},
		{"a=" + strings.Repeat("v", 257), false},
		{"a=" + strings.Repeat("v", MaxTracestate-1), false},
	}
	for _, tt := range tests {
		if got := ValidTracestate([]byte(tt.s)); got != tt.want {
			t.Errorf("ValidTracestate(%q) = %v; want %v", tt.s, got, tt.want)
		}
	}
}

// TestIntentTrace: an intent's trace encodes after input_responses and
// before policy, decodes back by both decoders and re-encodes byte for
// byte; an intent without one holds no "trace"; a trace the encoder
// never writes is rejected by both decoders alike.
func TestIntentTrace(t *testing.T) {
	ts := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	sid := [32]byte([]byte(strings.Repeat("0", 32)))
	line := func(b Body) []byte {
		dst := AppendCommon(nil, 3, ts, &sid, b.Kind(), Digest{})
		return append(b.AppendFields(dst), '}')
	}
	in := &Intent{Call: Call{Type: IDNumber, Text: []byte("7")}, Tool: []byte("echo"), HasTool: true,
		InputResponses: []InputResponse{{Key: BoundedOf([]byte("k")), Action: ActionAccept}},
		Trace:          Trace{Parent: []byte(testTraceparent), State: []byte(`a="\,` + testTracestate)}}
	l := line(in)
	want := `"input_responses":[{"key":"k","action":"accept"}],"trace":{"traceparent":"` + testTraceparent +
		`","tracestate":"a=\"\\,` + testTracestate + `"},"policy":`
	if !strings.Contains(string(l), want) {
		t.Fatalf("%s\ndoes not hold\n%s", l, want)
	}
	var d Decoder
	r, err := d.Decode(l)
	if err != nil {
		t.Fatalf("Decode(%s) = %v", l, err)
	}
	got := r.Body.(*Intent).Trace
	if string(got.Parent) != testTraceparent || string(got.State) != string(in.Trace.State) {
		t.Errorf("decoded trace %q, %q", got.Parent, got.State)
	}
	if re := line(r.Body); string(re) != string(l) {
		t.Errorf("re-encoded\n%s\nwant\n%s", re, l)
	}
	checkAgree(t, l)
	in.Trace.State = nil
	checkAgree(t, line(in))
	in.Trace = Trace{}
	if l := line(in); strings.Contains(string(l), "trace") {
		t.Errorf("an intent without a trace: %s", l)
	}

	in.Trace = Trace{Parent: []byte(testTraceparent), State: []byte(testTracestate)}
	good := string(line(in))
	for _, tt := range []struct{ name, old, new string }{
		{"traceparent upper-case", "4bf92f", "4BF92F"},
		{"traceparent version 01", `"traceparent":"00-`, `"traceparent":"01-`},
		{"traceparent missing", `"traceparent":"` + testTraceparent + `",`, ``},
		{"traceparent null", `"` + testTraceparent + `"`, `null`},
		{"tracestate bad", "rojo=", "Rojo="},
		{"tracestate key twice", "rojo=00f067aa0ba902b7", "congo=x"},
		{"member unknown", `"},"policy"`, `","baggage":"a=b"},"policy"`},
		{"trace after policy", `,"trace":{"traceparent":"` + testTraceparent + `","tracestate":"` + testTracestate + `"}`, ``},
		{"trace empty", `"traceparent":"` + testTraceparent + `","tracestate":"` + testTracestate + `"`, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := strings.Replace(good, tt.old, tt.new, 1)
			if tt.name == "trace after policy" {
				bad = strings.Replace(bad, `"capability":`, `"trace":{"traceparent":"`+testTraceparent+`"},"capability":`, 1)
			}
			if bad == good {
				t.Fatalf("%q is not in %s", tt.old, good)
			}
			var d Decoder
			if _, err := d.Decode([]byte(bad)); err == nil {
				t.Errorf("Decode(%s) accepted it", bad)
			}
			checkAgree(t, []byte(bad))
		})
	}
}
