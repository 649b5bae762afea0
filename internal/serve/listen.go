package serve

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aegisrelay/aegis/internal/atomicfile"
	"github.com/aegisrelay/aegis/internal/httpfront"
)

// ParseAddr reads where HTTP serves, wrap's --listen ADDR: unix:PATH, or
// HOST:PORT over TCP. Local reports whether only this machine can connect
// (a unix socket, or a loopback host), where serving without
// authentication is allowed. Its errors begin with the address.
func ParseAddr(addr string) (network, address string, local bool, err error) {
	if p, isUnix := strings.CutPrefix(addr, "unix:"); isUnix {
		if p == "" {
			return "", "", false, errors.New("unix:PATH: no PATH")
		}
		return "unix", p, true, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", false, fmt.Errorf("%q: want 127.0.0.1:PORT, [::1]:PORT, HOST:PORT or unix:PATH", addr)
	}
	return "tcp", addr, loopbackHost(host), nil
}

// loopbackHost reports whether host names only this machine.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TokenPath is the default token file of the log at audit: its name with
// .token for its extension.
func TokenPath(audit string) string {
	return strings.TrimSuffix(audit, filepath.Ext(audit)) + ".token"
}

// maxTokenFile is the largest file read as a token file left by an
// earlier run: a token and its newline.
const maxTokenFile = 64

// WriteToken makes a bearer token (32 random bytes, base64url) for
// httpfront.Config.Token and writes it to path, mode 0600, replacing a
// token file an earlier run left there. Its id (httpfront.Config.TokenID,
// which records name) is the first 16 hex digits of its SHA-256: it
// identifies the token without revealing it.
//
// The token replaces path atomically (atomicfile), so that a client
// reading path sees the old token or the new one, never an empty or
// partial file. Anything at path that is not a token file (another file
// named by mistake) is refused and kept.
func WriteToken(path string) (token, id string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(token))
	id = hex.EncodeToString(sum[:8])
	if fi, err := os.Lstat(path); err == nil {
		old, rerr := os.ReadFile(path)
		if !fi.Mode().IsRegular() || fi.Size() > maxTokenFile || rerr != nil || !isToken(old) {
			return "", "", fmt.Errorf("%s exists and is no token file: it is left as it is", path)
		}
	}
	if err := atomicfile.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return token, id, nil
}

// isToken reports whether b is what WriteToken writes: a base64url token
// of 32 bytes and a newline.
func isToken(b []byte) bool {
	t, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(string(t))
	return err == nil && len(raw) == 32
}

// FitDescriptors lowers conns and sessions (httpfront.Config.MaxConns and
// MaxSessions) to what the process's open-file limit, returned too,
// holds beside the descriptors the log needs (httpfront.FitDescriptors):
// a client's connection that finds no descriptor is refused, never a
// write of the log. The Go runtime has raised the soft limit to the hard
// one at start; a child gets the soft limit aegis was started with.
func FitDescriptors(conns, sessions int) (fitConns, fitSessions int, limit uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, 0, fmt.Errorf("open-file limit: %w", err)
	}
	fitConns, fitSessions, err = httpfront.FitDescriptors(uint64(lim.Cur), conns, sessions)
	if err != nil {
		return 0, 0, uint64(lim.Cur), fmt.Errorf("%w (ulimit -n)", err)
	}
	return fitConns, fitSessions, uint64(lim.Cur), nil
}
