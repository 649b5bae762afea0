package demo

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
)

// Files are where a demo keeps its key and its audit log.
type Files struct {
	Dir, Key, Audit string
	Pub             ed25519.PublicKey
}

// Setup makes the folder dir (mode 0700; "": a new temporary folder) and
// the signing key in it (Key), and names the audit log beside it.
func Setup(dir string) (Files, error) {
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "aegis-demo-")
	} else {
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return Files{}, err
	}
	f := Files{Dir: dir, Key: filepath.Join(dir, "signing.key"), Audit: filepath.Join(dir, "audit.jsonl")}
	f.Pub, err = Key(f.Key)
	return f, err
}

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
// client (Drive, which prints to out), and waits for wrap to end. wrap's
// own lines (on its stderr) go to out as they come, each whole: those up
// to the one that says where it records before the client starts, so
// that the transcript reads in the order things happen. It returns why
// the client or wrap failed.
func Record(exe, audit, key string, out io.Writer) error {
	cmd := exec.Command(exe, "wrap", "--audit", audit, "--signing-key", key, "--grace", "2s", "--", exe, "demo", "--serve")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	log := &lineWriter{w: out}
	lines := bufio.NewScanner(stderr)
	lines.Buffer(nil, 1<<20)
	started := false
	for !started && lines.Scan() {
		log.Write(append(lines.Bytes(), '\n'))
		started = bytes.HasPrefix(lines.Bytes(), []byte("aegis: recording "))
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		for lines.Scan() {
			log.Write(append(lines.Bytes(), '\n'))
		}
		io.Copy(io.Discard, stderr) // past a line too long to scan: wrap must not block
	}()
	var derr error
	if started {
		derr = Drive(stdin, stdout, log)
	}
	stdin.Close()
	<-copied // all of stderr is read before Wait closes it
	werr := cmd.Wait()
	switch {
	case derr != nil:
		return fmt.Errorf("the scripted client failed: %w", derr)
	case werr != nil:
		return fmt.Errorf("aegis wrap: %w", werr)
	case !started:
		return fmt.Errorf("aegis wrap ended without recording")
	}
	return nil
}

// lineWriter passes each Write to w whole, one at a time: the client's
// lines and wrap's never interleave within a line.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// GoRun is SelfCommand under go run, which builds aegis again each time
// (and, with cgo on, shares no build cache with CGO_ENABLED=0 go
// install): the demo then says how to install it once.
const GoRun = "go run ./cmd/aegis"

// SelfCommand is how the user can run this aegis again, for commands the
// demo shows: "aegis" when that is what PATH finds, "go run ./cmd/aegis"
// under go run, else its path.
func SelfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "aegis"
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return GoRun
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
