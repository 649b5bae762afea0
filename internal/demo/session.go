package demo

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
)

// Key makes the demo's signing key at path (and path.pub), or reuses the
// one already in place, and returns its public key.
func Key(path string) (ed25519.PublicKey, error) {
	if _, err := os.Lstat(path); err == nil {
		k, err := record.ReadPrivateKeyFile(path, false)
		if err != nil {
			return nil, err
		}
		return k.Public().(ed25519.PublicKey), nil
	}
	k, err := record.GenerateKey()
	if err != nil {
		return nil, err
	}
	if _, err := userfiles.WriteKey(path, k, false); err != nil {
		return nil, err
	}
	return k.Public().(ed25519.PublicKey), nil
}

// Record runs the aegis binary exe as `exe wrap --audit audit
// --signing-key key -- exe demo --serve`, drives it with the scripted
// client (Drive, which prints to out), and waits for wrap to end. It
// returns what wrap wrote on stderr (its own lines: the audit head), and
// why the client or wrap failed.
func Record(exe, audit, key string, out io.Writer) (stderr []byte, err error) {
	cmd := exec.Command(exe, "wrap", "--audit", audit, "--signing-key", key, "--grace", "2s", "--", exe, "demo", "--serve")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	derr := Drive(stdin, stdout, out)
	stdin.Close()
	werr := cmd.Wait()
	switch {
	case derr != nil:
		return errBuf.Bytes(), fmt.Errorf("the scripted client failed: %w", derr)
	case werr != nil:
		return errBuf.Bytes(), fmt.Errorf("aegis wrap: %w", werr)
	}
	return errBuf.Bytes(), nil
}

// SelfCommand is how the user can run this aegis again, for commands the
// demo shows: "aegis" when that is what PATH finds, "go run ./cmd/aegis"
// under go run, else its path.
func SelfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "aegis"
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/aegis"
	}
	if p, err := exec.LookPath("aegis"); err == nil {
		a, err1 := os.Stat(p)
		b, err2 := os.Stat(exe)
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			return "aegis"
		}
	}
	return exe
}
