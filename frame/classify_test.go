package frame

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// describe renders a Frame compactly for table tests:
//
//	kind [anomaly] {msg; msg}
//	msg: type [method=M] [id=type:raw] [call] [tool=T] [mal=reason] [error] [toolerror]
func describe(f *Frame) string {
	var sb strings.Builder
	sb.WriteString(f.Kind.String())
	if f.Anomaly != "" {
		fmt.Fprintf(&sb, " %q", f.Anomaly)
	}
	if f.Kind == Single || f.Kind == Batch {
		sb.WriteString(" {")
		for i := range f.Msgs {
			if i > 0 {
				sb.WriteString("; ")
			}
			m := &f.Msgs[i]
			sb.WriteString(m.Type.String())
			if m.Method != nil {
				fmt.Fprintf(&sb, " method=%q", m.Method)
			}
			if m.HasID {
				fmt.Fprintf(&sb, " id=%s:%s", m.ID.Type, m.ID.Raw)
			}
			if m.IsToolCall {
				sb.WriteString(" call")
			}
			if m.HasTool {
				fmt.Fprintf(&sb, " tool=%q", m.Tool)
			}
			if m.Malformed != "" {
				fmt.Fprintf(&sb, " mal=%q", m.Malformed)
			}
			if m.IsError {
				sb.WriteString(" error")
			}
			if m.ToolError {
				sb.WriteString(" toolerror")
			}
		}
		sb.WriteString("}")
	}
	return sb.String()
}

const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/hosts"}}}`

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string
	}{
		// Shapes.
		{"tools/call", call + "\n", `single {request method="tools/call" id=number:1 call tool="read_file"}`},
		{"crlf", call + "\r\n", `single {request method="tools/call" id=number:1 call tool="read_file"}`},
		{"no newline", call, `single {request method="tools/call" id=number:1 call tool="read_file"}`},
		{"other request", `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`, `single {request method="tools/list" id=string:"a"}`},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `single {notification method="notifications/initialized"}`},
		{"tool call notification", `{"method":"tools/call","params":{"name":"x"}}`, `single {notification method="tools/call" call tool="x"}`},
		{"response ok", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, `single {response id=number:1}`},
		{"response isError", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, `single {response id=number:1 toolerror}`},
		{"response isError false", `{"jsonrpc":"2.0","id":1,"result":{"isError":false}}`, `single {response id=number:1}`},
		{"response error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, `single {response id=number:1 error}`},
		{"response null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, `single {response id=null:null error}`},
		{"response non-object result", `{"id":1,"result":[1,{"isError":true}]}`, `single {response id=number:1}`},
		{"server request id 0", `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[]}}`, `single {request method="sampling/createMessage" id=number:0}`},
		{"request with result member", `{"id":0,"method":"roots/list","result":{}}`, `single {request method="roots/list" id=number:0}`},
		{"id only", `{"id":1}`, `single {invalid id=number:1}`},
		{"empty object", `{}`, `single {invalid}`},
		{"scalar", `42`, `single {}`},
		{"string", `"tools/call"`, `single {}`},
		{"params array", `{"method":"x","params":[1],"id":2}`, `single {request method="x" id=number:2}`},
		{"tools/call params absent", `{"method":"tools/call","id":2}`, `single {request method="tools/call" id=number:2 call}`},
		{"tools/call name absent", `{"method":"tools/call","id":2,"params":{}}`, `single {request method="tools/call" id=number:2 call}`},
		{"tools/call key order", `{"params":{"arguments":{},"name":"w"},"id":"z","method":"tools/call","jsonrpc":"2.0"}`, `single {request method="tools/call" id=string:"z" call tool="w"}`},
		{"jsonrpc missing", `{"id":3,"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=number:3 call tool="a"}`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=number:3 call tool="a"}`},
		{"whitespace inside", " {\t\"id\" :\r1 , \"method\"\n: \"tools/call\" ,\"params\":{ \"name\" : \"a\" } } \n", `single "ambiguous line: a bare CR splits it for readers that end lines there" {request method="tools/call" id=number:1 call tool="a"}`},
		{"whitespace inside, no CR", " {\t\"id\" :\t1 , \"method\"\n: \"tools/call\" ,\"params\":{ \"name\" : \"a\" } } \r\n", `single {request method="tools/call" id=number:1 call tool="a"}`},
		{"nested name not tool", `{"method":"tools/call","id":1,"params":{"arguments":{"name":"evil"},"name":"good"}}`, `single {request method="tools/call" id=number:1 call tool="good"}`},
		{"nested method ignored", `{"method":"ping","id":1,"params":{"method":"tools/call"}}`, `single {request method="ping" id=number:1}`},

		// Batches.
		{"batch mixed", `[` + call + `,{"jsonrpc":"2.0","method":"notifications/progress"},{"id":9,"method":"tools/call","params":{"name":"b"}},{"id":1,"result":{}},7,"x",[],null]`,
			`batch {request method="tools/call" id=number:1 call tool="read_file"; notification method="notifications/progress"; request method="tools/call" id=number:9 call tool="b"; response id=number:1; invalid; invalid; invalid; invalid}`},
		{"batch responses", `[{"id":1,"result":{}},{"id":2,"error":{"code":1}}]`, `batch {response id=number:1; response id=number:2 error}`},
		{"batch empty", `[]`, `batch {}`},
		{"batch nested array", `[[{"method":"tools/call","id":1}]]`, `batch "batch: an array inside the batch holds a message" {invalid}`},
		{"batch nested array without objects", `[[1,[]],2]`, `batch {invalid; invalid}`},
		{"batch malformed element", `[{"id":1,"method":"tools/call","method":"ping"}]`, `batch {request method="ping" id=number:1 call mal="method: duplicate key"}`},
		{"batch trailing comma", `[1,]`, `not-json "not one JSON value: invalid JSON"`},

		// Escapes are decoded before comparing.
		{"escaped slash", `{"id":1,"method":"tools\/call","params":{"name":"a"}}`, `single {request method="tools/call" id=number:1 call tool="a"}`},
		{"unicode escape", `{"id":1,"method":"tools\u002fcall","params":{"name":"\u0061"}}`, `single {request method="tools/call" id=number:1 call tool="a"}`},
		{"escaped key", `{"id":1,"met\u0068od":"tools/call","par\u0061ms":{"n\u0061me":"a"}}`, `single {request method="tools/call" id=number:1 call tool="a"}`},
		{"escaped key duplicate", `{"id":1,"method":"ping","met\u0068od":"tools/call"}`, `single {request method="tools/call" id=number:1 call mal="method: duplicate key"}`},
		{"surrogate pair tool", `{"id":1,"method":"tools/call","params":{"name":"\ud83d\ude00"}}`, "single {request method=\"tools/call\" id=number:1 call tool=\"\U0001F600\"}"},

		// Duplicates.
		{"dup method last ping", `{"id":1,"method":"tools/call","method":"ping"}`, `single {request method="ping" id=number:1 call mal="method: duplicate key"}`},
		{"dup method last call", `{"id":1,"method":"ping","method":"tools/call"}`, `single {request method="tools/call" id=number:1 call mal="method: duplicate key"}`},
		{"dup method same", `{"id":1,"method":"tools/call","method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=number:1 call tool="a" mal="method: duplicate key"}`},
		{"dup method non-tool", `{"id":1,"method":"ping","method":"initialize"}`, `single {request method="initialize" id=number:1}`},
		{"dup id", `{"id":1,"id":2,"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=number:2 call tool="a" mal="id: duplicate key"}`},
		{"dup params", `{"id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}`, `single {request method="tools/call" id=number:1 call mal="params: duplicate key"}`},
		{"dup name", `{"id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, `single {request method="tools/call" id=number:1 call mal="params.name: duplicate key"}`},
		{"dup id response", `{"id":1,"id":2,"result":{}}`, `single {response id=number:2 mal="id: duplicate key"}`},
		{"dup result", `{"id":1,"result":{},"result":{"isError":true}}`, `single {response id=number:1 mal="result: duplicate key" toolerror}`},
		{"dup isError", `{"id":1,"result":{"isError":true,"isError":false}}`, `single {response id=number:1 mal="result.isError: duplicate key" toolerror}`},
		{"result and error", `{"id":1,"result":{},"error":{}}`, `single {response id=number:1 mal="response: both result and error" error}`},

		// Case variants, as Go's encoding/json (v1 and v2) binds them.
		{"Method", `{"id":1,"method":"ping","Method":"tools/call"}`, `single {request method="ping" id=number:1 call mal="method: case-variant key"}`},
		{"METHOD only", `{"id":1,"METHOD":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=number:1 call tool="a" mal="method: case-variant key"}`},
		{"meth_od v2", `{"id":1,"meth_od":"tools/call"}`, `single {request method="tools/call" id=number:1 call mal="method: case-variant key"}`},
		{"ID", `{"ID":1,"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=number:1 call tool="a" mal="id: case-variant key"}`},
		{"long s", `{"id":1,"method":"tools/call","paramſ":{"name":"evil"},"params":{"name":"good"}}`, `single {request method="tools/call" id=number:1 call mal="params: case-variant key"}`},
		{"long s only", `{"id":1,"method":"tools/call","paramſ":{"name":"evil"}}`, `single {request method="tools/call" id=number:1 call mal="params: case-variant key"}`},
		{"escaped long s", `{"id":1,"method":"tools/call","param\u017f":{"name":"evil"}}`, `single {request method="tools/call" id=number:1 call mal="params: case-variant key"}`},
		{"NAME", `{"id":1,"method":"tools/call","params":{"name":"a","NAME":"b"}}`, `single {request method="tools/call" id=number:1 call mal="params.name: case-variant key"}`},
		{"Result", `{"id":1,"Result":{}}`, `single {response id=number:1 mal="result: case-variant key"}`},
		{"Error", `{"id":1,"result":{},"Error":{}}`, `single {response id=number:1 mal="error: case-variant key" error}`},
		{"IsError", `{"id":1,"result":{"is_error":true}}`, `single {response id=number:1 mal="result.isError: case-variant key" toolerror}`},
		{"variant in non-call", `{"id":1,"method":"ping","Params":{}}`, `single {request method="ping" id=number:1}`},
		{"kelvin not a variant", "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"\u212aind\":1}}", `single {request method="tools/call" id=number:1 call tool="a"}`},
		{"dotless i not a variant", "{\"\u0131d\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}", `single {notification method="tools/call" call tool="a"}`},

		// Wrong types.
		{"method number", `{"id":1,"method":7}`, `single {request id=number:1}`},
		{"method number and call", `{"id":1,"method":"tools/call","method":7}`, `single {request id=number:1 call mal="method: duplicate key"}`},
		{"Method number", `{"id":1,"method":"tools/call","Method":7}`, `single {request method="tools/call" id=number:1 call mal="method: case-variant key"}`},
		{"params string", `{"id":1,"method":"tools/call","params":"x"}`, `single {request method="tools/call" id=number:1 call mal="params: not an object"}`},
		{"params null", `{"id":1,"method":"tools/call","params":null}`, `single {request method="tools/call" id=number:1 call mal="params: not an object"}`},
		{"name number", `{"id":1,"method":"tools/call","params":{"name":1}}`, `single {request method="tools/call" id=number:1 call mal="params.name: not a string"}`},
		{"name null", `{"id":1,"method":"tools/call","params":{"name":null}}`, `single {request method="tools/call" id=number:1 call mal="params.name: not a string"}`},
		{"id object", `{"id":{"a":1},"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=invalid:{"a":1} call tool="a" mal="id: not a string, number or null"}`},
		{"id array", `{"id":[1],"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=invalid:[1] call tool="a" mal="id: not a string, number or null"}`},
		{"id bool", `{"id":true,"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=invalid:true call tool="a" mal="id: not a string, number or null"}`},
		{"id bool response", `{"id":false,"result":{}}`, `single {response id=invalid:false mal="id: not a string, number or null"}`},
		{"id null request", `{"id":null,"method":"tools/call","params":{"name":"a"}}`, `single {request method="tools/call" id=null:null call tool="a"}`},

		// Ids of every form.
		{"id string escaped", `{"id":"a\u0062","result":{}}`, `single {response id=string:"a\u0062"}`},
		{"id 1.0", `{"id":1.0,"result":{}}`, `single {response id=number:1.0}`},
		{"id 1e0", `{"id":1e0,"result":{}}`, `single {response id=number:1e0}`},
		{"id -0", `{"id":-0,"result":{}}`, `single {response id=number:-0}`},
		{"id huge", `{"id":123456789012345678901234567890,"result":{}}`, `single {response id=number:123456789012345678901234567890}`},
		{"id huge exponent", `{"id":1e99999999999999999999999,"result":{}}`, `single {response id=number:1e99999999999999999999999}`},

		// Names decoders read differently.
		{"NUL in method", `{"id":1,"method":"tools/call\u0000x","params":{"name":"a"}}`, `single {request method="tools/call\x00x" id=number:1 call tool="a" mal="method: contains U+0000 or U+FFFD"}`},
		{"FFFD in method", "{\"id\":1,\"method\":\"tools/\xffcall\",\"params\":{\"name\":\"a\"}}", `single {request method="tools/�call" id=number:1 call tool="a" mal="method: contains U+0000 or U+FFFD"}`},
		{"lone surrogate in method", `{"id":1,"method":"tools/call\ud800","params":{"name":"a"}}`, `single {request method="tools/call�" id=number:1 call tool="a" mal="method: contains U+0000 or U+FFFD"}`},
		{"FFFD in other method", `{"id":1,"method":"tools/cal\ufffd"}`, `single {request method="tools/cal�" id=number:1}`},
		{"NUL in name", `{"id":1,"method":"tools/call","params":{"name":"delete_file\u0000x"}}`, `single {request method="tools/call" id=number:1 call mal="params.name: contains U+0000 or U+FFFD"}`},
		{"invalid UTF-8 in name", "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"delete\xc0\"}}", `single {request method="tools/call" id=number:1 call mal="params.name: contains U+0000 or U+FFFD"}`},
		{"invalid UTF-8 elsewhere", "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"arguments\":{\"\xff\":\"\xfe\"}}}", `single {request method="tools/call" id=number:1 call tool="a"}`},
		{"valid UTF-8 name", `{"id":1,"method":"tools/call","params":{"name":"héllo"}}`, `single {request method="tools/call" id=number:1 call tool="héllo"}`},

		// Not exactly one JSON value.
		{"empty", "", `empty`},
		{"newline", "\n", `empty`},
		{"crlf only", "\r\n", `empty`},
		{"white space", " \t \r\n", `empty`},
		{"form feed", "\f\n", `not-json "not one JSON value: invalid JSON"`},
		{"BOM", "\xef\xbb\xbf" + call + "\n", `not-json "not one JSON value: byte order mark"`},
		{"BOM only", "\xef\xbb\xbf\n", `not-json "not one JSON value: byte order mark"`},
		{"trailing junk", call + "x\n", `not-json "not one JSON value: unexpected tail"`},
		{"two values", call + call + "\n", `not-json "not one JSON value: unexpected tail"`},
		{"two values spaced", call + " " + call, `not-json "not one JSON value: unexpected tail"`},
		{"two scalars", "1 2", `not-json "not one JSON value: unexpected tail"`},
		{"truncated", `{"id":1,"method":"tools/call",` + "\n", `not-json "not one JSON value: truncated value"`},
		{"truncated string", `{"id":1,"method":"tools/ca`, `not-json "not one JSON value: truncated value"`},
		{"closing half", `"params":{"name":"x"}}` + "\n", `not-json "not one JSON value: unexpected tail"`},
		{"NUL byte", "{\"id\":1,\x00\"method\":\"tools/call\"}", `not-json "not one JSON value: invalid JSON"`},
		{"NUL in string", "{\"id\":1,\"method\":\"tools/call\x00\"}", `not-json "not one JSON value: invalid JSON"`},
		{"raw newline in string", "{\"method\":\"a\nb\"}", `not-json "not one JSON value: invalid JSON"`},
		{"tab in string", "{\"method\":\"a\tb\"}", `not-json "not one JSON value: invalid JSON"`},
		{"bad escape", `{"method":"\x"}`, `not-json "not one JSON value: invalid JSON"`},
		{"bad unicode escape", `{"method":"\u12g4"}`, `not-json "not one JSON value: invalid JSON"`},
		{"single quote escape", `{"method":"\'"}`, `not-json "not one JSON value: invalid JSON"`},
		{"NaN", `{"id":NaN}`, `not-json "not one JSON value: invalid JSON"`},
		{"Infinity", `[-Infinity]`, `not-json "not one JSON value: invalid JSON"`},
		{"leading zero", `{"id":01}`, `not-json "not one JSON value: invalid JSON"`},
		{"plus", `{"id":+1}`, `not-json "not one JSON value: invalid JSON"`},
		{"dot", `{"id":1.}`, `not-json "not one JSON value: invalid JSON"`},
		{"double dot", `{"id":1.2.3}`, `not-json "not one JSON value: invalid JSON"`},
		{"exp no digits", `{"id":1e}`, `not-json "not one JSON value: invalid JSON"`},
		{"trailing comma object", `{"id":1,}`, `not-json "not one JSON value: invalid JSON"`},
		{"single quotes", `{'id':1}`, `not-json "not one JSON value: invalid JSON"`},
		{"unquoted key", `{id:1}`, `not-json "not one JSON value: invalid JSON"`},
		{"comment", `{"id":1}//`, `not-json "not one JSON value: unexpected tail"`},
		{"True", `True`, `not-json "not one JSON value: invalid JSON"`},
		{"nul literal", `nul`, `not-json "not one JSON value: truncated value"`},
		{"huge number", `[` + strings.Repeat("9", 5000) + `.` + strings.Repeat("0", 5000) + `e-99999999999999999999]`, `batch {invalid}`},
		{"deep 10000", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), `batch {invalid}`},
		{"deep 10001", strings.Repeat("[", 10001) + strings.Repeat("]", 10001), `not-json "not one JSON value: nested deeper than 10000"`},
		{"deep in params", `{"id":1,"method":"tools/call","params":{"name":"a","arguments":` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `}}`, `single {request method="tools/call" id=number:1 call tool="a"}`},
		{"deep in params 10001", `{"id":1,"method":"tools/call","params":{"name":"a","arguments":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}}`, `not-json "not one JSON value: nested deeper than 10000"`},
		{"deep unclosed", strings.Repeat(`{"a":`, 20000), `not-json "not one JSON value: nested deeper than 10000"`},
	}
	var c Classifier
	var f Frame
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.Classify([]byte(tt.line), &f)
			if got := describe(&f); got != tt.want {
				t.Errorf("Classify(%.80q) = %s; want %s", tt.line, got, tt.want)
			}
		})
	}
}

// TestClassifyBatchLimit checks that a batch beyond MaxBatch is described
// only in part and flagged, so memory stays bounded.
func TestClassifyBatchLimit(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		wantLen int
		wantAno string
	}{
		{"at limit", MaxBatch, MaxBatch, ""},
		{"over limit", MaxBatch + 1, MaxBatch, AnomalyBatch},
		{"far over", 4 * MaxBatch, MaxBatch, AnomalyBatch},
	}
	var c Classifier
	var f Frame
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := "[" + strings.Repeat(`{"id":1,"method":"tools/call","params":{"name":"a"}},`, tt.n-1) + `{"id":1,"method":"tools/call","params":{"name":"a"}}]`
			c.Classify([]byte(line), &f)
			if f.Kind != Batch || len(f.Msgs) != tt.wantLen || f.Anomaly != tt.wantAno {
				t.Errorf("Classify(batch of %d) = %s, %d msgs, %q; want batch, %d msgs, %q", tt.n, f.Kind, len(f.Msgs), f.Anomaly, tt.wantLen, tt.wantAno)
			}
		})
	}
}

// TestClassifyValidity checks that slices in a Frame stay valid across the
// arena growing within one Classify.
func TestClassifyValidity(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 200 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"id":"k\u00%02x%d","method":"tools\/call","params":{"name":"t\u00%02x%d"}}`, 0x41+i%26, i, 0x61+i%26, i)
	}
	sb.WriteString("]")
	var c Classifier
	var f Frame
	c.Classify([]byte(sb.String()), &f)
	if len(f.Msgs) != 200 {
		t.Fatalf("Classify(batch) = %d msgs; want 200", len(f.Msgs))
	}
	for i, m := range f.Msgs {
		wantID := fmt.Sprintf("k%c%d", 0x41+i%26, i)
		wantTool := fmt.Sprintf("t%c%d", 0x61+i%26, i)
		if string(m.ID.Str) != wantID || string(m.ID.Key) != "s"+wantID || string(m.Tool) != wantTool || string(m.Method) != "tools/call" {
			t.Errorf("Msgs[%d] = id %q key %q tool %q method %q; want id %q tool %q method tools/call", i, m.ID.Str, m.ID.Key, m.Tool, m.Method, wantID, wantTool)
		}
	}
}

// TestClassifyReuse checks that a Frame does not carry anything over from a
// previous Classify.
func TestClassifyReuse(t *testing.T) {
	var c Classifier
	var f Frame
	c.Classify([]byte(`[{"id":1,"method":"tools/call","params":{"name":"a"}},{"id":2,"result":{}}]`), &f)
	c.Classify([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), &f)
	if got, want := describe(&f), `single {notification method="notifications/initialized"}`; got != want {
		t.Errorf("Classify(after batch) = %s; want %s", got, want)
	}
	c.Classify([]byte("x"), &f)
	if f.Msgs != nil {
		t.Errorf("Classify(x).Msgs = %v; want nil", f.Msgs)
	}
}

func TestClassifyAllocs(t *testing.T) {
	lines := [][]byte{
		[]byte(call + "\n"),
		[]byte(`{"id":"\u0041","method":"tools\/call","params":{"n\u0061me":"r\u00e9ad"}}`),
		[]byte(`[{"id":1.5e3,"method":"tools/call","params":{"name":"a"}},{"id":2,"result":{"isError":true}}]`),
		[]byte("\xef\xbb\xbf{}"),
		[]byte(`{"id":1,"method":"tools/call"} trailing`),
		[]byte(strings.Repeat("[", 20000)),
	}
	var c Classifier
	var f Frame
	for _, l := range lines {
		c.Classify(l, &f) // grow buffers
	}
	for _, l := range lines {
		if n := testing.AllocsPerRun(100, func() { c.Classify(l, &f) }); n != 0 {
			t.Errorf("Classify(%.40q) allocs = %v; want 0", l, n)
		}
	}
}

// TestClassifyMemoryBounded checks the inputs that make a tree-building
// parser blow up: lines of many tiny values, and deep nesting. What Classify
// allocates is bounded by MaxBatch Messages (~720 KB, ~3 MB counting the
// slice's growth), whatever the line's length.
func TestClassifyMemoryBounded(t *testing.T) {
	const maxAlloc = 4 << 20
	tests := []struct {
		name string
		line []byte
		want string
	}{
		{"4 MiB of [0,0,...]", []byte("[" + strings.Repeat("0,", 2<<20) + "0]"), AnomalyBatch},
		{"16 MiB of [0,0,...]", []byte("[" + strings.Repeat("0,", 8<<20) + "0]"), AnomalyBatch},
		{"16 MiB of [{},{},...]", []byte("[" + strings.Repeat("{},", 16<<20/3) + "{}]"), AnomalyBatch},
		{"16 MiB of [", []byte(strings.Repeat("[", 16<<20)), AnomalyDepth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Classifier
			var f Frame
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c.Classify(tt.line, &f)
			runtime.ReadMemStats(&after)
			if f.Anomaly != tt.want {
				t.Errorf("Classify(%s).Anomaly = %q; want %q", tt.name, f.Anomaly, tt.want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > maxAlloc {
				t.Errorf("Classify(%s) allocated %d bytes; want at most %d", tt.name, got, maxAlloc)
			}
		})
	}
}

// TestArgs: params.arguments is handed over as its raw span only when every
// decoder binds the same member to it, and text some decoder reads
// differently is reported beside it.
func TestArgs(t *testing.T) {
	const pre = `{"id":1,"method":"tools/call","params":{"name":"a",`
	tests := []struct {
		name      string
		line      string
		args      string // "-" for none
		text      bool   // ArgsText set
		malformed string
	}{
		{"object", pre + `"arguments":{"path":"/etc/hosts"}}}`, `{"path":"/etc/hosts"}`, false, ""},
		{"white space kept", pre + `"arguments": { "p" : [1, 2] } }}`, `{ "p" : [1, 2] }`, false, ""},
		{"before name", `{"id":1,"method":"tools/call","params":{"arguments":{"x":1},"name":"a"}}`, `{"x":1}`, false, ""},
		{"absent", pre + `"other":{}}}`, "-", false, ""},
		{"null", pre + `"arguments":null}}`, `null`, false, ""},
		{"string", pre + `"arguments":"rm -rf /"}}`, `"rm -rf /"`, false, ""},
		{"escaped key", pre + `"argum\u0065nts":{"x":1}}}`, `{"x":1}`, false, ""},
		{"duplicate", pre + `"arguments":{"path":"/tmp/x"},"arguments":{"path":"/etc/shadow"}}}`, "-", false, "params.arguments: duplicate key"},
		{"duplicate escaped", pre + `"arguments":{},"\u0061rguments":{"p":1}}}`, "-", false, "params.arguments: duplicate key"},
		{"case variant alone", pre + `"Arguments":{"path":"/etc/shadow"}}}`, "-", false, "params.arguments: case-variant key"},
		{"case variant beside", pre + `"arguments":{},"ARGUMENTS":{"p":1}}}`, "-", false, "params.arguments: case-variant key"},
		{"long s variant", pre + `"argumentſ":{}}}`, "-", false, "params.arguments: case-variant key"},
		{"underscore variant", pre + `"argu_ments":{}}}`, "-", false, "params.arguments: case-variant key"},
		{"invalid UTF-8", pre + "\"arguments\":{\"p\":\"/etc/ho\xbfsts\"}}}", "{\"p\":\"/etc/ho\xbfsts\"}", true, ""},
		{"invalid UTF-8 in a key", pre + "\"arguments\":{\"\xff\":1}}}", "{\"\xff\":1}", true, ""},
		{"NUL", pre + `"arguments":{"p":"/etc/passwd\u0000.txt"}}}`, `{"p":"/etc/passwd\u0000.txt"}`, true, ""},
		{"lone high surrogate", pre + `"arguments":{"p":"\ud800"}}}`, `{"p":"\ud800"}`, true, ""},
		{"high then text", pre + `"arguments":{"p":"\ud800x\udc00"}}}`, `{"p":"\ud800x\udc00"}`, true, ""},
		{"lone low surrogate", pre + `"arguments":{"p":"\uDC00"}}}`, `{"p":"\uDC00"}`, true, ""},
		{"surrogate pair", pre + `"arguments":{"p":"\ud83d\ude00"}}}`, `{"p":"\ud83d\ude00"}`, false, ""},
		{"escaped backslash then u0000", pre + `"arguments":{"p":"\\u0000"}}}`, `{"p":"\\u0000"}`, false, ""},
		{"odd backslashes then u0000", pre + `"arguments":{"p":"\\\u0000"}}}`, `{"p":"\\\u0000"}`, true, ""},
		{"unclear text in a dropped duplicate", pre + `"arguments":{"p":"\ud800"},"arguments":{}}}`, "-", true, "params.arguments: duplicate key"},
		{"params twice", `{"id":1,"method":"tools/call","params":{"name":"a","arguments":{}},"params":{"name":"a","arguments":{}}}`, "-", false, "params: duplicate key"},
	}
	var c Classifier
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f Frame
			c.Classify([]byte(tt.line), &f)
			if len(f.Msgs) != 1 || !f.Msgs[0].IsToolCall {
				t.Fatalf("Classify(%q) = %s; want one tool call", tt.line, describe(&f))
			}
			m := &f.Msgs[0]
			args := "-"
			if m.HasArgs {
				args = string(m.Args)
			}
			if args != tt.args || (m.ArgsText != "") != tt.text || m.Malformed != tt.malformed {
				t.Errorf("Classify(%q): args %q, text %q, malformed %q; want %q, %v, %q", tt.line, args, m.ArgsText, m.Malformed, tt.args, tt.text, tt.malformed)
			}
		})
	}
}
