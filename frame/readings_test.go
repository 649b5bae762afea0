package frame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// describeHidden renders f.Hidden as describe renders f.Msgs, with each
// message's offset.
func describeHidden(f *Frame) string {
	var sb strings.Builder
	for i := range f.Hidden {
		if i > 0 {
			sb.WriteString("; ")
		}
		m := &f.Hidden[i]
		fmt.Fprintf(&sb, "@%d %s", m.Off, m.Type)
		if m.HasID {
			fmt.Fprintf(&sb, " id=%s", m.ID.Raw)
		}
		if m.IsToolCall {
			sb.WriteString(" call")
		}
		if m.HasTool {
			fmt.Fprintf(&sb, " tool=%q", m.Tool)
		}
		if m.Answers {
			sb.WriteString(" answers")
		}
	}
	return sb.String()
}

func TestReadings(t *testing.T) {
	const c1 = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`
	const c2 = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}`
	const r1 = `{"jsonrpc":"2.0","id":1,"result":{}}`
	tests := []struct {
		name, line string
		anomaly    string
		hidden     string
	}{
		{"plain call", c1 + "\n", "", ""},
		{"CRLF ending", c1 + "\r\n", "", ""},
		{"CR ending at EOF", c1 + "\r", "", ""},
		{"CR before the value", "\r\r" + c1 + "\n", "", ""},
		{"CR after the value", c1 + "\r \r\n", "", ""},
		{"CR in white space inside", "{\"jsonrpc\":\"2.0\",\r\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}\n", AnomalyCR, ""},
		{"call hidden in a member", "{\"x\":\r" + c1 + "\r}\n", AnomalyCR, `@6 request id=1 call tool="a"`},
		{"call hidden after CRCRLF", "{\"x\":\r\r" + c1 + "\r\r}\r\n", AnomalyCR, `@7 request id=1 call tool="a"`},
		{"two calls a CR apart", c1 + "\r" + c2 + "\n", AnomalyTail, `@0 request id=1 call tool="a"; @69 request id=2 call tool="b"`},
		{"batch split by CR", "[" + c1 + ",\r" + c2 + "]\n", AnomalyCR, ""},
		{"batch element alone on a piece", "[\r" + c1 + "\r]\n", AnomalyCR, ""},
		{"batch element and hidden call", "[1,\r" + c1 + "\r,{\"y\":\r" + c2 + "\r}]\n", AnomalyCR, `@80 request id=2 call tool="b"`},
		{"nested array", "[[" + c1 + "]]", AnomalyNested, `@2 request id=1 call tool="a"`},
		{"deeply nested array", "[1,[[[" + c2 + "]]]]", AnomalyNested, `@6 request id=2 call tool="b"`},
		{"call after 5000 numbers in a nested array", "[[" + strings.Repeat("1,", 5000) + c1 + "]]", AnomalyNested, `@10002 request id=1 call tool="a"`},
		{"call after 5000 numbers in a batch behind a CR", "{\"x\":\r[" + strings.Repeat("1,", 5000) + c1 + "]\r}", AnomalyCR, `@10007 request id=1 call tool="a"`},
		{"call after 5000 other objects behind CRs", "{\"x\":\r" + strings.Repeat("{}\r", 5000) + c1 + "\r}", AnomalyInvalid, `@15006 request id=1 call tool="a"`},
		{"nested array without objects", "[[1,[2]],3]", "", ""},
		{"nested non-call object", `[[{"a":1}]]`, AnomalyNested, ""},
		{"two values", c1 + c2, AnomalyTail, `@0 request id=1 call tool="a"; @68 request id=2 call tool="b"`},
		{"value then garbage", c1 + " garbage\n", AnomalyTail, `@0 request id=1 call tool="a"`},
		{"BOM then call", "\xef\xbb\xbf" + c1, AnomalyBOM, `@3 request id=1 call tool="a"`},
		{"truncated", `{"id":1,"method":"tools/call"`, AnomalyTruncated, ""},
		{"garbage then call", "x " + c1, AnomalyInvalid, ""},
		{"CR inside a string", "{\"x\":\"\r" + c1 + "\r\"}\n", AnomalyInvalid, `@7 request id=1 call tool="a"`},
		{"response hidden by CR", "{\"x\":\r" + r1 + "\r}\n", AnomalyCR, `@6 response id=1 answers`},
		{"response with a method too", `{"id":1,"method":"x","result":{}}`, "", ""},
		{"NaN in the arguments", `{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":NaN,"y":-Infinity,"z":[Infinity]}}}`, AnomalyInvalid, `@0 request id=1 call tool="a"`},
		{"NaN as a value of its own", `NaN`, AnomalyInvalid, ""},
		{"stream batch", c1 + "[" + c2 + "]", AnomalyTail, `@0 request id=1 call tool="a"; @69 request id=2 call tool="b"`},
	}
	var c Classifier
	var f Frame
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.Classify([]byte(tt.line), &f)
			if f.Anomaly != tt.anomaly || describeHidden(&f) != tt.hidden {
				t.Errorf("Classify(%q) = %q, hidden [%s]; want %q, hidden [%s]", tt.line, f.Anomaly, describeHidden(&f), tt.anomaly, tt.hidden)
			}
			checkDifferential(t, &c, []byte(tt.line))
		})
	}
}

func TestAltIDs(t *testing.T) {
	tests := []struct {
		line string
		id   string
		alt  string
	}{
		{`{"id":1,"result":{}}`, "1", ""},
		{`{"id":7,"id":1,"result":{}}`, "1", "7"},
		{`{"id":1,"id":1,"result":{}}`, "1", ""},
		{`{"id":1,"id":1.0,"result":{}}`, "1.0", ""},
		{`{"id":2,"ID":3,"result":{}}`, "2", "3"},
		{`{"Id":3,"id":2,"iD":4,"id":5,"id":6,"result":{}}`, "6", "2 3"},
		{`{"id":2,"id":5,"ID":6,"result":{}}`, "5", "2 6"},
		{`{"id":[1],"id":1,"result":{}}`, "1", "[1]"},
	}
	var c Classifier
	var f Frame
	for _, tt := range tests {
		c.Classify([]byte(tt.line), &f)
		m := &f.Msgs[0]
		var alt []string
		for _, id := range m.AltIDs {
			alt = append(alt, string(id.Raw))
		}
		if got := strings.Join(alt, " "); string(m.ID.Raw) != tt.id || got != tt.alt || !m.Answers {
			t.Errorf("Classify(%s): id %s, alt %q, answers %v; want %s, %q, true", tt.line, m.ID.Raw, got, m.Answers, tt.id, tt.alt)
		}
	}
}

// refSplit splits line as a reader in universal-newline mode does (Python's
// text I/O, Node's readline, Java's readLine): at "\r\n", "\r" and "\n".
// A line, as the relay hands it over, has no '\n' but at its end; one
// inside (the fuzzers' lines) is left to the white space it is in JSON.
func refSplit(line []byte) [][]byte {
	s := strings.TrimSuffix(string(line), "\n")
	s = strings.TrimSuffix(s, "\r")
	var out [][]byte
	for _, p := range strings.Split(s, "\r") {
		out = append(out, []byte(p))
	}
	return out
}

// refObjects returns the objects in the array raw, and in arrays inside it
// at any depth, as a handler that takes arrays recursively finds them. raw
// is valid JSON; it walks raw once with a json.Decoder, decoding objects
// whole and stepping into arrays.
func refObjects(raw []byte) [][]byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var out [][]byte
	for depth := 1; depth > 0; {
		k := int(dec.InputOffset())
		for k < len(raw) && bytes.IndexByte([]byte(" \t\r\n,"), raw[k]) >= 0 {
			k++
		}
		if k == len(raw) {
			return out
		}
		switch raw[k] {
		case '[':
			dec.Token()
			depth++
		case ']':
			dec.Token()
			depth--
		default:
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return out
			}
			if v[0] == '{' {
				out = append(out, v)
			}
		}
	}
	return out
}

// refStream returns the objects a stream decoder reads from seg: each
// value in turn until the first that does not decode, an object as itself
// and an array as the objects refObjects finds in it.
func refStream(seg []byte) [][]byte {
	dec := json.NewDecoder(bytes.NewReader(seg))
	var out [][]byte
	for {
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		switch v[0] {
		case '{':
			out = append(out, v)
		case '[':
			out = append(out, refObjects(v)...)
		}
	}
}

// refAnswers reports whether obj has an "id" and a "result" or "error".
func refAnswers(obj []byte) bool {
	var id, res bool
	refMembers(obj, func(key string, _ json.RawMessage) {
		id = id || key == "id"
		res = res || key == "result" || key == "error"
	})
	return id && res
}

// checkReadings checks the property the relay's record rests on: every
// tool call and every answer that some reader finds in line — the line
// read as one value, as a stream of values, split at CRs, arrays taken
// recursively — is among f.Msgs and f.Hidden, at its own offset; and
// whatever only other readings find comes with an anomaly.
func checkReadings(f *Frame, line []byte) string {
	objs := refStream(line)
	for _, p := range refSplit(line) {
		objs = append(objs, refStream(p)...)
	}
	for _, obj := range objs {
		g, gok := readGo(obj)
		e, eok := readExact(obj)
		isCall := gok && g.method != nil && *g.method == "tools/call" || eok && e.method != nil && *e.method == "tools/call"
		answers := refAnswers(obj)
		if !isCall && !answers {
			continue
		}
		found, hidden := false, false
		for k, set := range [][]Message{f.Msgs, f.Hidden} {
			for i := range set {
				m := &set[i]
				if bytes.HasPrefix(line[m.Off:], obj) && (!isCall || m.IsToolCall) && (!answers || m.Answers) {
					found, hidden = true, k == 1
				}
			}
		}
		if !found {
			return fmt.Sprintf("a reader finds %s (call %v, answers %v), which is neither in Msgs nor in Hidden", obj, isCall, answers)
		}
		if hidden && f.Anomaly == "" {
			return fmt.Sprintf("%s is found only by other readings, without an anomaly", obj)
		}
	}
	return ""
}
