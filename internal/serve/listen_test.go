package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aegisrelay/aegis/internal/httpfront"
)

func TestParseAddr(t *testing.T) {
	for _, tt := range []struct {
		name, addr            string
		network, address, err string
		local                 bool
	}{
		{name: "loopback v4", addr: "127.0.0.1:0", network: "tcp", address: "127.0.0.1:0", local: true},
		{name: "loopback v6", addr: "[::1]:8080", network: "tcp", address: "[::1]:8080", local: true},
		{name: "localhost", addr: "localhost:1", network: "tcp", address: "localhost:1", local: true},
		{name: "any address", addr: "0.0.0.0:80", network: "tcp", address: "0.0.0.0:80"},
		{name: "a name", addr: "example.com:80", network: "tcp", address: "example.com:80"},
		{name: "unix", addr: "unix:/run/a.sock", network: "unix", address: "/run/a.sock", local: true},
		{name: "unix without path", addr: "unix:", err: "unix:PATH: no PATH"},
		{name: "no port", addr: "127.0.0.1", err: `"127.0.0.1": want 127.0.0.1:PORT, [::1]:PORT, HOST:PORT or unix:PATH`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			network, address, local, err := ParseAddr(tt.addr)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseAddr(%q) = %v; want error %q", tt.addr, err, tt.err)
				}
				return
			}
			if err != nil || network != tt.network || address != tt.address || local != tt.local {
				t.Errorf("ParseAddr(%q) = %q, %q, %v, %v; want %q, %q, %v", tt.addr, network, address, local, err, tt.network, tt.address, tt.local)
			}
		})
	}
}

func TestTokenPath(t *testing.T) {
	for _, tt := range []struct{ audit, want string }{
		{"/s/audit.jsonl", "/s/audit.token"},
		{"/s/audit", "/s/audit.token"},
		{"a.b.jsonl", "a.b.token"},
	} {
		if got := TokenPath(tt.audit); got != tt.want {
			t.Errorf("TokenPath(%q) = %q; want %q", tt.audit, got, tt.want)
		}
	}
}

// TestWriteToken: a token file is made mode 0600, its id is its hash's
// first 16 hex digits, an earlier token file is replaced, and any other
// file at the path is refused and kept.
func TestWriteToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.token")
	token, id, err := WriteToken(path)
	if err != nil {
		t.Fatalf("WriteToken(%s) = %v", path, err)
	}
	sum := sha256.Sum256([]byte(token))
	if id != hex.EncodeToString(sum[:8]) {
		t.Errorf("WriteToken id = %q; want the first 16 hex digits of the token's SHA-256", id)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != token+"\n" {
		t.Fatalf("token file = %q, %v; want %q", b, err, token+"\n")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v; want 0600", fi.Mode().Perm())
	}
	token2, _, err := WriteToken(path)
	if err != nil || token2 == token {
		t.Errorf("WriteToken over a token file = %q, %v; want a new token", token2, err)
	}
	for _, tt := range []struct{ name, content string }{
		{"not base64", "hello\n"},
		{"no newline", strings.TrimSuffix(token, "\n")},
		{"short token", "AAAA\n"},
		{"too long", strings.Repeat("A", 100) + "\n"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
		if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := WriteToken(p); err == nil || !strings.Contains(err.Error(), "is no token file") {
			t.Errorf("WriteToken(%s) = %v; want it refused", tt.name, err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != tt.content {
			t.Errorf("WriteToken(%s) left %q, %v; want %q kept", tt.name, b, err, tt.content)
		}
	}
}

// TestFitDescriptors: what fits is what httpfront.FitDescriptors makes of
// this process's open-file limit, which is returned.
func TestFitDescriptors(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name            string
		conns, sessions int
	}{
		{"few", 2, 1},
		{"more than any limit", 1 << 30, 1 << 20},
	} {
		c, s, limit, err := FitDescriptors(tt.conns, tt.sessions)
		// Rlimit.Cur is uint64 on Linux and int64 on the BSDs.
		cur := uint64(lim.Cur)
		wc, ws, werr := httpfront.FitDescriptors(cur, tt.conns, tt.sessions)
		if limit != cur || c != wc || s != ws || (err == nil) != (werr == nil) {
			t.Errorf("FitDescriptors(%d, %d) [%s] = %d, %d, %d, %v; want %d, %d, %d, %v", tt.conns, tt.sessions, tt.name, c, s, limit, err, wc, ws, cur, werr)
		}
		if err == nil && (c > tt.conns || s > tt.sessions) {
			t.Errorf("FitDescriptors(%d, %d) = %d, %d; want no more than asked", tt.conns, tt.sessions, c, s)
		}
	}
}
