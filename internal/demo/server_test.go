package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// serve runs Serve over the whole input and returns its output lines.
func serve(t *testing.T, input string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := Serve(strings.NewReader(input), &out); err != nil {
		t.Fatalf("Serve(%q) = %v; want nil", input, err)
	}
	if out.Len() == 0 {
		return nil
	}
	if !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		t.Fatalf("Serve(%q) wrote %q; want whole lines", input, out.String())
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

func TestServe(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{
			name:  "initialize with our version",
			input: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}},"protocolVersion":"2025-06-18","serverInfo":{"name":"aegis-demo","version":"1.0.0"}}}`},
		},
		{
			name:  "initialize with a known newer version",
			input: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}},"protocolVersion":"2025-11-25","serverInfo":{"name":"aegis-demo","version":"1.0.0"}}}`},
		},
		{
			name:  "initialize with an unknown version",
			input: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2031-01-01"}}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}},"protocolVersion":"2025-11-25","serverInfo":{"name":"aegis-demo","version":"1.0.0"}}}`},
		},
		{
			name:  "notifications get no answer",
			input: `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}` + "\n",
			want:  nil,
		},
		{
			name:  "ping",
			input: `{"jsonrpc":"2.0","id":"p-1","method":"ping"}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":"p-1","result":{}}`},
		},
		{
			name:  "unknown method",
			input: `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{}}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found: server/discover"}}`},
		},
		{
			name:  "invalid JSON",
			input: `{"jsonrpc":"2.0","id":1,` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: not JSON"}}`},
		},
		{
			name:  "binary junk",
			input: "\x00\xff\xfe junk\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: not JSON"}}`},
		},
		{
			name:  "empty and blank lines are skipped",
			input: "\n  \n\r\n",
			want:  nil,
		},
		{
			name:  "CRLF line and last line without newline",
			input: `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}`,
			want:  []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		},
		{
			name:  "wrong jsonrpc version",
			input: `{"jsonrpc":"1.0","id":3,"method":"ping"}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\""}}`},
		},
		{
			name:  "not an object",
			input: "42\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: json: cannot unmarshal number into Go value of type demo.request"}}`},
		},
		{
			name:  "request without a method",
			input: `{"jsonrpc":"2.0","id":4}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"invalid request: no method"}}`},
		},
		{
			name:  "null id is answered",
			input: `{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"result":{}}`},
		},
		{
			name:  "responses from the client get no answer",
			input: `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}` + "\n" + `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}` + "\n",
			want:  nil,
		},
		{
			name: "batch answered as one array, notifications skipped",
			input: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},` +
				`{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}]` + "\n",
			want: []string{`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method not found: nope"}},` +
				`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"3"}]}}]`},
		},
		{
			name:  "batch of notifications only",
			input: `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]` + "\n",
			want:  nil,
		},
		{
			name:  "empty batch",
			input: "[]\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: empty batch"}}`},
		},
		{
			name:  "batch with a non-object element",
			input: `[1,{"jsonrpc":"2.0","id":9,"method":"ping"}]` + "\n",
			want:  []string{`[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: json: cannot unmarshal number into Go value of type demo.request"}},{"jsonrpc":"2.0","id":9,"result":{}}]`},
		},
		{
			name:  "batch that is not JSON",
			input: `[{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: not JSON"}}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serve(t, tt.input); !slices.Equal(got, tt.want) {
				t.Errorf("Serve(%q) =\n%s\nwant\n%s", tt.input, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestServeToolsCall(t *testing.T) {
	tests := []struct {
		name string
		args string // params of tools/call
		want string // result or error member of the answer
	}{
		{"echo", `{"name":"echo","arguments":{"text":"héllo \"x\""}}`, `"result":{"content":[{"type":"text","text":"héllo \"x\""}]}`},
		{"echo without text", `{"name":"echo","arguments":{}}`, `"error":{"code":-32602,"message":"echo: text is required"}`},
		{"echo with an unknown argument", `{"name":"echo","arguments":{"text":"a","loud":true}}`, `"error":{"code":-32602,"message":"echo: bad arguments: json: unknown field \"loud\""}`},
		{"add", `{"name":"add","arguments":{"a":2,"b":3}}`, `"result":{"content":[{"type":"text","text":"5"}]}`},
		{"add floats", `{"name":"add","arguments":{"a":0.1,"b":0.2}}`, `"result":{"content":[{"type":"text","text":"0.30000000000000004"}]}`},
		{"add a string", `{"name":"add","arguments":{"a":"2","b":3}}`, `"error":{"code":-32602,"message":"add: bad arguments: json: cannot unmarshal string into Go struct field .a of type float64"}`},
		{"add missing b", `{"name":"add","arguments":{"a":2}}`, `"error":{"code":-32602,"message":"add: a and b are required"}`},
		{"arguments not an object", `{"name":"add","arguments":[1,2]}`, `"error":{"code":-32602,"message":"add: arguments must be an object"}`},
		{"slow zero", `{"name":"slow","arguments":{"ms":0}}`, `"result":{"content":[{"type":"text","text":"slept 0ms"}]}`},
		{"slow over the max", `{"name":"slow","arguments":{"ms":5001}}`, `"error":{"code":-32602,"message":"slow: ms must be between 0 and 5000"}`},
		{"slow negative", `{"name":"slow","arguments":{"ms":-1}}`, `"error":{"code":-32602,"message":"slow: ms must be between 0 and 5000"}`},
		{"slow fraction", `{"name":"slow","arguments":{"ms":1.5}}`, `"error":{"code":-32602,"message":"slow: bad arguments: json: cannot unmarshal number 1.5 into Go struct field .ms of type int"}`},
		{"fail", `{"name":"fail","arguments":{}}`, `"result":{"content":[{"type":"text","text":"fail: this tool fails on purpose, to show a tool error"}],"isError":true}`},
		{"fail without arguments", `{"name":"fail"}`, `"result":{"content":[{"type":"text","text":"fail: this tool fails on purpose, to show a tool error"}],"isError":true}`},
		{"unknown tool", `{"name":"rm","arguments":{}}`, `"error":{"code":-32602,"message":"unknown tool: \"rm\""}`},
		{"no name", `{"arguments":{}}`, `"error":{"code":-32602,"message":"tools/call: params must be an object with a name"}`},
		{"params not an object", `[]`, `"error":{"code":-32602,"message":"tools/call: params must be an object with a name"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tt.args + "}\n"
			want := `{"jsonrpc":"2.0","id":1,` + tt.want + `}`
			if got := serve(t, in); len(got) != 1 || got[0] != want {
				t.Errorf("tools/call %s =\n%q\nwant\n%q", tt.args, got, want)
			}
		})
	}
}

func TestServeToolsList(t *testing.T) {
	got := serve(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	if len(got) != 1 {
		t.Fatalf("tools/list answered by %d lines; want 1", len(got))
	}
	var a struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					Type       string                     `json:"type"`
					Properties map[string]json.RawMessage `json:"properties"`
					Required   []string                   `json:"required"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(got[0]), &a); err != nil {
		t.Fatalf("tools/list answer %s: %v", got[0], err)
	}
	want := map[string][]string{"echo": {"text"}, "add": {"a", "b"}, "slow": nil, "fail": nil}
	var names []string
	for _, tl := range a.Result.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema.Type != "object" || tl.InputSchema.Properties == nil {
			t.Errorf("tool %s: description %q, inputSchema type %q, properties %v; want a description and an object schema", tl.Name, tl.Description, tl.InputSchema.Type, tl.InputSchema.Properties)
		}
		if !slices.Equal(tl.InputSchema.Required, want[tl.Name]) {
			t.Errorf("tool %s: required = %v; want %v", tl.Name, tl.InputSchema.Required, want[tl.Name])
		}
	}
	if !slices.Equal(names, []string{"echo", "add", "slow", "fail"}) {
		t.Errorf("tools/list names = %v; want [echo add slow fail]", names)
	}
}

// TestServeSlowIsOvertaken checks that a call sent after a slow one is
// answered first, and that a batch holding a slow call is answered whole.
func TestServeSlowIsOvertaken(t *testing.T) {
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(sr, sw)
		sw.Close()
	}()
	lines := bufio.NewScanner(cr)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("server output ended: %v", lines.Err())
		}
		return lines.Text()
	}
	io.WriteString(cw, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":500}}}`+"\n")
	io.WriteString(cw, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"ms":100}}}]`+"\n")
	io.WriteString(cw, `{"jsonrpc":"2.0","id":4,"method":"ping"}`+"\n")
	cw.Close() // Serve must still answer what is in flight

	want := []string{
		`{"jsonrpc":"2.0","id":4,"result":{}}`,
		`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"slept 100ms"}]}}]`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept 500ms"}]}}`,
	}
	for i, w := range want {
		if got := next(); got != w {
			t.Errorf("answer %d = %s; want %s", i, got, w)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("Serve = %v; want nil at EOF", err)
	}
	if lines.Scan() {
		t.Errorf("extra output %q", lines.Text())
	}
}

var errBroken = errors.New("broken pipe")

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errBroken
}

func TestServeWriteError(t *testing.T) {
	w := &failWriter{}
	in := strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n", 3)
	err := Serve(strings.NewReader(in), w)
	if !errors.Is(err, errBroken) {
		t.Fatalf("Serve to a failing writer = %v; want an error wrapping %v", err, errBroken)
	}
	if w.n != 1 {
		t.Errorf("Serve wrote %d times after the first write failed; want 1 write in all", w.n)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

func TestServeReadError(t *testing.T) {
	if err := Serve(errReader{}, io.Discard); !errors.Is(err, errBroken) {
		t.Errorf("Serve from a failing reader = %v; want an error wrapping %v", err, errBroken)
	}
}

// At EOF Serve answers the calls still in flight before it returns.
func TestServeEOFWaitsForSlow(t *testing.T) {
	start := time.Now()
	got := serve(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":50}}}`)
	if want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"slept 50ms"}]}}`; len(got) != 1 || got[0] != want {
		t.Errorf("slow at EOF = %q; want [%s]", got, want)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("slow 50ms answered after %v; want ≥ 50ms", d)
	}
}
