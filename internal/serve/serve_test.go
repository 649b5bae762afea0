package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal"
)

// TestListen: a unix socket is made mode 0600 from its creation on, and
// URL names each kind of socket as a client dials it.
func TestListen(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mcp.sock")
	for _, tt := range []struct {
		network, address string
		wantURL          func(addr string) bool
	}{
		{"tcp", "127.0.0.1:0", func(u string) bool {
			return strings.HasPrefix(u, "http://127.0.0.1:") && strings.HasSuffix(u, "/mcp")
		}},
		{"unix", sock, func(u string) bool { return u == "unix:"+sock+" /mcp" }},
	} {
		ln, err := Listen(tt.network, tt.address)
		if err != nil {
			t.Fatalf("Listen(%q, %q) = %v; want a listener", tt.network, tt.address, err)
		}
		if u := URL(ln); !tt.wantURL(u) {
			t.Errorf("URL(Listen(%q, %q)) = %q; want the endpoint a client dials", tt.network, tt.address, u)
		}
		if tt.network == "unix" {
			fi, err := os.Stat(sock)
			if err != nil {
				t.Fatal(err)
			}
			if perm := fi.Mode().Perm(); perm != 0o600 {
				t.Errorf("Listen(unix, %s): mode %v; want 0600", sock, perm)
			}
		}
		ln.Close()
	}
}

// TestNotServed: HTTP's error before serving reads as its cause alone
// (wrap prints it after "wrap: "), is ErrNotServed, and keeps its cause's
// identity (an audit failure stays journal.ErrIO).
func TestNotServed(t *testing.T) {
	cause := journal.ErrIO
	err := error(notServed{cause})
	for _, tt := range []struct {
		name string
		got  bool
	}{
		{"Error() == cause", err.Error() == cause.Error()},
		{"errors.Is(ErrNotServed)", errors.Is(err, ErrNotServed)},
		{"errors.Is(cause)", errors.Is(err, cause)},
	} {
		if !tt.got {
			t.Errorf("notServed{%v}: %s = false; want true", cause, tt.name)
		}
	}
}
