package httpfloor

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"testing"
)

// TestServe runs the floor in front of cat, which answers each line with
// itself, in order: every POST, from many connections at once, is
// answered with its own body (its trailing line ending removed), and a
// GET is 405.
func TestServe(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Fatalf("cat is not on PATH: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(ln, []string{cat}, io.Discard) }()
	url := "http://" + ln.Addr().String() + "/mcp"

	tests := []struct {
		name, body, want string
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"trailing LF", "{\"id\":2}\n", `{"id":2}`},
		{"trailing CRLF", "{\"id\":3}\r\n", `{"id":3}`},
		{"bytes kept", `{"id":4,"s":"\u2028 é"}`, `{"id":4,"s":"\u2028 é"}`},
	}
	for _, tt := range tests {
		if got := post(t, url, tt.body); got != tt.want {
			t.Errorf("%s: POST %q = %q; want %q", tt.name, tt.body, got, tt.want)
		}
	}

	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			for i := range 50 {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d-%d","method":"ping"}`, c, i)
				if got := post(t, url, body); got != body {
					t.Errorf("concurrent POST %q = %q; want its own line back", body, got)
					return
				}
			}
		})
	}
	wg.Wait()

	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s = %d; want 405", url, resp.StatusCode)
	}
	ln.Close()
	if err := <-served; err == nil {
		t.Errorf("Serve after its listener closed = nil; want the error that ended it")
	}
}

func post(t *testing.T, url, body string) string {
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Errorf("POST %q: %v", body, err)
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("POST %q = %d %q, %v; want 200", body, resp.StatusCode, b, err)
	}
	return string(b)
}
