package httpfront

import (
	"net/http"
	"strings"
	"testing"
)

// TestReadView: the members headers mirror are read as every decoder
// reads them, or the body is ambiguous.
func TestReadView(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	tests := []struct {
		name      string
		line      string
		method    string
		nameVal   string
		uri       string
		taskID    string
		revision  string
		caps      bool
		ambiguous bool
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + meta + `}}`, "tools/call", "echo", "", "", "2026-07-28", true, false},
		{"escaped name", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"\u0065cho"}}`, "tools/call", "echo", "", "", "", false, false},
		{"resources/read", `{"method":"resources/read","params":{"uri":"file:///a"}}`, "resources/read", "", "file:///a", "", "", false, false},
		{"tasks/get", `{"method":"tasks/get","params":{"taskId":"t"}}`, "tasks/get", "", "", "t", "", false, false},
		{"duplicate method", `{"method":"tools/list","method":"tools/call"}`, "", "", "", "", "", false, true},
		{"case-variant method", `{"method":"tools/list","Method":"tools/call"}`, "", "", "", "", "", false, true},
		{"folded method (long s)", `{"method":"tools/list","method":"x","metho\u017f":"y"}`, "", "", "", "", "", false, true},
		{"case-variant params", `{"method":"tools/call","params":{"name":"a"},"PARAMS":{"name":"b"}}`, "", "", "", "", "", false, true},
		{"duplicate name", `{"method":"tools/call","params":{"name":"a","name":"b"}}`, "", "", "", "", "", false, true},
		{"name spelt with _", `{"method":"tools/call","params":{"name":"a","na_me":"b"}}`, "", "", "", "", "", false, true},
		{"variant meta key", `{"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/PROTOCOLVERSION":"2025-11-25"}}}`, "", "", "", "", "", false, true},
		{"key cut at U+0000", `{"method":"tools/list","params":{"name":"a","name\u0000x":"b"}}`, "", "", "", "", "", false, true},
		{"key with invalid UTF-8", "{\"method\":\"tools/list\",\"meth\xffod\":\"tools/call\"}", "", "", "", "", "", false, true},
		{"U+0000 in name", `{"method":"tools/call","params":{"name":"a\u0000b"}}`, "", "", "", "", "", false, true},
		{"unpaired surrogate in uri", `{"method":"resources/read","params":{"uri":"\ud800"}}`, "", "", "", "", "", false, true},
		{"invalid UTF-8 in taskId", "{\"method\":\"tasks/get\",\"params\":{\"taskId\":\"\xff\"}}", "", "", "", "", "", false, true},
		{"name not a string", `{"method":"tools/call","params":{"name":1}}`, "tools/call", "", "", "", "", false, false},
		{"capabilities not an object", `{"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":[]}}}`, "tools/list", "", "", "", "", false, false},
	}
	for _, tt := range tests {
		v := readView([]byte(tt.line))
		if (v.ambiguous != "") != tt.ambiguous {
			t.Errorf("%s: readView(%s).ambiguous = %q; want ambiguous %v", tt.name, tt.line, v.ambiguous, tt.ambiguous)
			continue
		}
		if tt.ambiguous {
			continue
		}
		if v.method != tt.method || v.name != tt.nameVal || v.uri != tt.uri || v.taskID != tt.taskID || v.revision != tt.revision || v.hasCaps != tt.caps {
			t.Errorf("%s: readView = method %q name %q uri %q taskId %q revision %q caps %v; want %q %q %q %q %q %v",
				tt.name, v.method, v.name, v.uri, v.taskID, v.revision, v.hasCaps, tt.method, tt.nameVal, tt.uri, tt.taskID, tt.revision, tt.caps)
		}
	}
}

// TestDecodeSentinel: the Base64 form is the text it encodes, canonical
// standard Base64 of UTF-8 only; any other value is itself.
func TestDecodeSentinel(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"us-west1", "us-west1", true},
		{"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界", true},
		{"=?base64?IHBhZGRlZCA=?=", " padded ", true},
		{"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?=", true},
		{"=?base64?SGVsbG8?=", "", false},                    // unpadded
		{"=?base64?SGVsbG9=?=", "", false},                   // non-canonical padding bits
		{"=?base64?/w==?=", "", false},                       // not UTF-8
		{"=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?=", true}, // the markers are case-sensitive
	}
	for _, tt := range tests {
		got, err := decodeSentinel(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("decodeSentinel(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestHeaderValue: one header, white space around it dropped, visible
// ASCII, space and tab only.
func TestHeaderValue(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
		has    bool
		ok     bool
	}{
		{"absent", nil, "", false, true},
		{"plain", []string{"tools/call"}, "tools/call", true, true},
		{"white space", []string{" \ttools/call \t"}, "tools/call", true, true},
		{"twice", []string{"a", "a"}, "", true, false},
		{"non-ASCII", []string{"caf\xc3\xa9"}, "", true, false},
		{"control", []string{"a\x01b"}, "", true, false},
	}
	for _, tt := range tests {
		r := &http.Request{Header: http.Header{}}
		for _, v := range tt.values {
			r.Header.Add("Mcp-Method", v)
		}
		got, has, err := headerValue(r, "Mcp-Method")
		if got != tt.want || has != tt.has || (err == nil) != tt.ok {
			t.Errorf("%s: headerValue = %q, %v, %v; want %q, %v, ok %v", tt.name, got, has, err, tt.want, tt.has, tt.ok)
		}
	}
}

// TestErrorStatus: a stateless answer's HTTP status follows its error
// code.
func TestErrorStatus(t *testing.T) {
	tests := []struct {
		answer string
		want   int
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, 200},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`, 404},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`, 400},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m"}}`, 400},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}`, 200},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`, 200},
		// The member as encoding/json reads it: its name in any case, or
		// spelled with escapes; and the word elsewhere, which is no error.
		{`{"jsonrpc":"2.0","id":1,"ERROR":{"code":-32601,"message":"m"}}`, 404},
		{`{"jsonrpc":"2.0","id":1,"eRrOr":{"code":-32602,"message":"m"}}`, 400},
		{`{"jsonrpc":"2.0","id":1,"\u0065rror":{"code":-32601,"message":"m"}}`, 404},
		{`{"jsonrpc":"2.0","id":1,"\u0045\u0052\u0052\u004f\u0052":{"code":-32601,"message":"m"}}`, 404},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"error -32601"}]}}`, 200},
		{`{"jsonrpc":"2.0","id":1,"result":{"text":"a \"quoted\" word"}}`, 200},
		{`{"jsonrpc":"2.0","id":1,"result":{}}` + strings.Repeat(" ", 1<<16), 200},
	}
	for _, tt := range tests {
		if got := errorStatus([]byte(tt.answer)); got != tt.want {
			t.Errorf("errorStatus(%s) = %d; want %d", tt.answer, got, tt.want)
		}
	}
}

// TestValueAt: an argument mirrored in a header is read at its path as
// every decoder reads it, or not at all.
func TestValueAt(t *testing.T) {
	tests := []struct {
		args  string
		path  []string
		want  string
		ok    bool
		clear bool
	}{
		{`{"region":"us"}`, []string{"region"}, `"us"`, true, true},
		{`{"where":{"zone":"b"}}`, []string{"where", "zone"}, `"b"`, true, true},
		{`{"region":null}`, []string{"region"}, "", false, true},
		{`{}`, []string{"region"}, "", false, true},
		{`{"where":1}`, []string{"where", "zone"}, "", false, true},
		{`{"region":"us","region":"eu"}`, []string{"region"}, "", false, false},
		{`{"region":"us","Region":"eu"}`, []string{"region"}, "", false, false},
		{`{"where":{"zone":"a","ZONE":"b"}}`, []string{"where", "zone"}, "", false, false},
	}
	for _, tt := range tests {
		val, ok, clear := valueAt([]byte(tt.args), tt.path)
		if string(val) != tt.want || ok != tt.ok || clear != tt.clear {
			t.Errorf("valueAt(%s, %v) = %s, %v, %v; want %s, %v, %v", tt.args, tt.path, val, ok, clear, tt.want, tt.ok, tt.clear)
		}
	}
}
