package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Where aegis keeps its files when no flag names them, by the XDG Base
// Directory specification: the signing key is configuration, the audit
// logs are state. An explicit flag always wins.

// configDir is $XDG_CONFIG_HOME/aegis, or ~/.config/aegis.
func configDir() (string, error) { return xdgDir("XDG_CONFIG_HOME", ".config") }

// stateDir is $XDG_STATE_HOME/aegis, or ~/.local/state/aegis.
func stateDir() (string, error) { return xdgDir("XDG_STATE_HOME", filepath.Join(".local", "state")) }

func xdgDir(env, fallback string) (string, error) {
	// The specification ignores a relative value.
	if d := os.Getenv(env); filepath.IsAbs(d) {
		return filepath.Join(d, "aegis"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", fmt.Errorf("neither $%s nor $HOME names a folder to keep aegis's files in", env)
	}
	return filepath.Join(home, fallback, "aegis"), nil
}

// defaultKeyPath is where keygen writes and wrap reads the signing key
// when neither is told.
func defaultKeyPath() (string, error) {
	d, err := configDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "signing.key"), nil
}

// defaultAuditPath is the log of the server called name.
func defaultAuditPath(name string) (string, error) {
	d, err := stateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name+".jsonl"), nil
}

// launchers run the program their first argument names; a server started
// through one is named after that argument, not after the launcher.
var launchers = map[string]bool{
	"npx": true, "bunx": true, "uvx": true, "pipx": true, "node": true, "deno": true, "bun": true,
	"python": true, "python3": true, "uv": true, "pnpm": true, "yarn": true, "go": true, "java": true,
}

// launcherVerbs are words between a launcher and what it runs
// (uv run X, pnpm dlx X, go run X, deno run X, pipx run X).
var launcherVerbs = map[string]bool{"run": true, "dlx": true, "exec": true, "x": true, "tool": true}

// serverName names a child command for its default log: the program,
// or what a launcher runs (npx -y @modelcontextprotocol/server-memory is
// server-memory), without a version or an extension, in characters that
// are safe in a file name.
func serverName(argv []string) string {
	name := argv[0]
	if launchers[strings.TrimSuffix(filepath.Base(name), ".exe")] {
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") || launcherVerbs[a] {
				continue
			}
			name = a
			break
		}
	}
	// A script's path names the server by its file, or by its package's
	// folder when the file is a generic entry point (dist/index.js).
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' })
	for len(parts) > 1 && genericPart(parts[len(parts)-1]) {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 0 {
		name = parts[len(parts)-1]
	}
	if i := strings.LastIndexByte(name, '@'); i > 0 { // server@1.2.3; not a leading @
		name = name[:i]
	}
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".py", ".jar", ".exe"} {
		name = strings.TrimSuffix(name, ext)
	}
	return safeName(name)
}

// genericPart reports a path element that names no server: an entry
// point's file or a build folder.
func genericPart(p string) bool {
	p = strings.TrimSuffix(p, filepath.Ext(p))
	switch p {
	case "index", "main", "server", "cli", "dist", "build", "out", "lib", "src", "bin":
		return true
	}
	return false
}

// safeName keeps letters, digits, '.', '_' and '-', and replaces every
// other run of bytes with one '-'.
func safeName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
		if ok {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-.")
	if out == "" {
		return "server"
	}
	return out
}

// ensureParent creates the missing folders above path, each with mode
// 0700 (they hold a private key or evidence), and tells which it made.
func ensureParent(cmd, path string) error {
	dir := filepath.Dir(path)
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		fmt.Fprintf(os.Stderr, "aegis %s: created folder %s (mode 0700)\n", cmd, missing[i])
	}
	return nil
}

// selfCommand is how the user can run this aegis again: "aegis" when that
// is what PATH finds, "go run ./cmd/aegis" under go run, else its path.
func selfCommand() string {
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
