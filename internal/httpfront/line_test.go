package httpfront

import (
	"bytes"
	"net/http"
	"testing"
)

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // "" with ok false: refused
		ok   bool
	}{
		{"plain", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, true},
		{"trailing LF is a line ending", "{\"id\":1}\n", `{"id":1}`, true},
		{"trailing CRLF is a line ending", "{\"id\":1}\r\n", `{"id":1}`, true},
		{"white space kept", " {\"id\":1} \t", " {\"id\":1} \t", true},
		{"two lines", "{\"id\":1}\n{\"id\":2}", "", false},
		{"inner CR", "{\"id\":1,\r\"method\":\"x\"}", "", false},
		{"bare trailing CR", "{\"id\":1}\r", "", false},
		{"two line endings", "{\"id\":1}\n\n", "", false},
		{"empty", "", "", false},
		{"only a line ending", "\n", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Line([]byte(tc.body))
			if (err == nil) != tc.ok || !bytes.Equal(got, []byte(tc.want)) {
				t.Errorf("Line(%q) = %q, %v; want %q, ok %v", tc.body, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestEventID(t *testing.T) {
	tests := []struct {
		s, n uint64
		want string
	}{{0, 0, "0-0"}, {1, 7, "1-7"}, {18446744073709551615, 2, "18446744073709551615-2"}}
	for _, tc := range tests {
		id := eventID(tc.s, tc.n)
		s, n, ok := parseEventID(id)
		if id != tc.want || !ok || s != tc.s || n != tc.n {
			t.Errorf("eventID(%d, %d) = %q, parsed %d %d %v; want %q", tc.s, tc.n, id, s, n, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "1", "a-1", "1-b", "-1-2"} {
		if _, _, ok := parseEventID(bad); ok {
			t.Errorf("parseEventID(%q) ok; want refused", bad)
		}
	}
}

func TestAccepts(t *testing.T) {
	tests := []struct {
		accept    string
		sse, json bool
	}{
		{"application/json, text/event-stream", true, true},
		{"text/event-stream", true, false},
		{"Application/JSON;q=0.9", false, true},
		{"text/*", true, false},
		{"*/*", true, true},
		{"application/*; q=1 , text/html", false, true},
		{"text/html", false, false},
		{"", false, false},
		{"text/event-streams", false, false},
	}
	for _, tc := range tests {
		r, _ := http.NewRequest("GET", "/", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if sse, js := accepts(r, "text/event-stream"), accepts(r, "application/json"); sse != tc.sse || js != tc.json {
			t.Errorf("accepts(%q) = sse %v, json %v; want %v, %v", tc.accept, sse, js, tc.sse, tc.json)
		}
	}
}
