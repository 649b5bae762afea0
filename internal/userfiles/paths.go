package userfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ConfigDir is $XDG_CONFIG_HOME/aegis, or ~/.config/aegis.
func ConfigDir() (string, error) { return xdgDir("XDG_CONFIG_HOME", ".config") }

// StateDir is $XDG_STATE_HOME/aegis, or ~/.local/state/aegis.
func StateDir() (string, error) { return xdgDir("XDG_STATE_HOME", filepath.Join(".local", "state")) }

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

// KeyPath is where keygen writes and wrap reads the signing key when
// neither is told: signing.key in ConfigDir.
func KeyPath() (string, error) {
	d, err := ConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "signing.key"), nil
}

// LogPath is the default log of the server called name: name.jsonl in
// StateDir.
func LogPath(name string) (string, error) {
	d, err := StateDir()
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

// ServerName names a child command for its default log: the program,
// or what a launcher runs (npx -y @modelcontextprotocol/server-memory is
// server-memory), without a version or an extension, in characters that
// are safe in a file name (SafeName).
func ServerName(argv []string) string {
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
	return SafeName(name)
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

// SafeName keeps letters, digits, '.', '_' and '-', and replaces every
// other run of bytes with one '-'; leading and trailing '-' and '.' are
// dropped, and what is left empty is "server".
func SafeName(s string) string {
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

// MkdirParents creates the missing folders above path, each with mode
// 0700, and returns those it made, outermost first.
func MkdirParents(path string) ([]string, error) {
	dir := filepath.Dir(path)
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	made := make([]string, 0, len(missing))
	for i := len(missing) - 1; i >= 0; i-- {
		made = append(made, missing[i])
	}
	return made, nil
}
