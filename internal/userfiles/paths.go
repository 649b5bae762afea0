package userfiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	return filepath.Join(d, name+logExt), nil
}

// logExt ends a default log's name.
const logExt = ".jsonl"

// InUseLogPath is the default log of the server called name that the
// n-th wrap of it running at once records to (n ≥ 2): NAME-n.jsonl in
// StateDir, since NAME.jsonl and the ones before are in use.
func InUseLogPath(name string, n int) (string, error) {
	return LogPath(name + "-" + strconv.Itoa(n))
}

// Server is a server's default logs: NAME.jsonl and the NAME-N.jsonl
// wrap records to while it is in use, those that exist, N in order.
// Each is a log's live file; its sealed segments lie beside it.
type Server struct {
	Name string
	Logs []string
}

// ServerLogs returns the default logs in StateDir of the server called
// name (empty if it has none), and the folder.
func ServerLogs(name string) (Server, string, error) {
	d, err := StateDir()
	if err != nil {
		return Server{}, "", err
	}
	all, err := servers(d)
	for _, s := range all {
		if s.Name == name {
			return s, d, err
		}
	}
	return Server{Name: name}, d, err
}

// Servers returns the servers that have default logs in StateDir, by
// name, and the folder; a folder not made yet holds none.
func Servers() ([]Server, string, error) {
	d, err := StateDir()
	if err != nil {
		return nil, "", err
	}
	s, err := servers(d)
	return s, d, err
}

// servers groups the live files in dir: NAME.jsonl and NAME-N.jsonl
// (N ≥ 2, no leading zero) are NAME's when NAME.jsonl is there, else
// NAME-N.jsonl is a server's of its own (a name may end in -N). A sealed
// segment (NAME.jsonl.<first>-<last>.jsonl) is not a live file.
func servers(dir string) ([]Server, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), logExt)
		if ok && stem != "" && !strings.Contains(stem, logExt+".") && !e.IsDir() {
			live[stem] = true
		}
	}
	by := map[string]*Server{}
	var names []string
	add := func(name, stem string) {
		s := by[name]
		if s == nil {
			s = &Server{Name: name}
			by[name] = s
			names = append(names, name)
		}
		s.Logs = append(s.Logs, filepath.Join(dir, stem+logExt))
	}
	for stem := range live {
		if base, n := inUse(stem); n > 0 && live[base] {
			continue // added after base, in order of n
		}
		add(stem, stem)
	}
	slices.Sort(names)
	for _, name := range names {
		var ns []int
		for stem := range live {
			if base, n := inUse(stem); n > 0 && base == name {
				ns = append(ns, n)
			}
		}
		slices.Sort(ns)
		for _, n := range ns {
			add(name, name+"-"+strconv.Itoa(n))
		}
	}
	out := make([]Server, len(names))
	for i, n := range names {
		out[i] = *by[n]
	}
	return out, nil
}

// inUse splits NAME-N (N ≥ 2, no leading zero) into NAME and N; n is 0
// for any other stem.
func inUse(stem string) (string, int) {
	i := strings.LastIndexByte(stem, '-')
	if i <= 0 || i+1 == len(stem) || stem[i+1] == '0' {
		return "", 0
	}
	n, err := strconv.Atoi(stem[i+1:])
	if err != nil || n < 2 || strings.ContainsAny(stem[i+1:], "+-") {
		return "", 0
	}
	return stem[:i], n
}

// A launcher is a program that runs another one named by an argument:
// a package runner (npx, uvx, pipx run, docker run), an interpreter
// (node, python) or env. ServerName names a server started through one
// after what it runs.
type launcher struct {
	// verbs are the words that may come between the launcher and what it
	// runs (uv run X, pnpm dlx X, pipx run X); with needVerb one of them
	// must (docker run IMAGE: docker ps runs nothing).
	verbs    []string
	needVerb bool
	// valued are the options followed by a value that is not what runs
	// (docker run -e NAME IMAGE, node -r ./hook.js server.js).
	valued []string
	// target are the options whose value is what runs (python -m MODULE,
	// java -jar FILE, uvx --from PACKAGE).
	target []string
	// inline are the options whose value is the program's source itself
	// (node -e CODE, python -c CODE): the server is the launcher.
	inline []string
	// assignments: NAME=VALUE arguments set the environment (env).
	assignments bool
	// image: what runs is a container image, named without its registry,
	// tag and digest (ghcr.io/org/server:1.2 is server).
	image bool
}

func opts(s string) []string { return strings.Fields(s) }

var (
	nodeLike = launcher{
		verbs:  opts("run x exec"),
		valued: opts("-r --require --import --loader --experimental-loader -C --conditions --env-file --title --config -c"),
		inline: opts("-e --eval -p --print"),
	}
	pythonLike = launcher{verbs: opts("run"), valued: opts("-W -X"), target: opts("-m"), inline: opts("-c")}
	dockerLike = launcher{
		verbs: opts("run"), needVerb: true, image: true,
		valued: opts("-e --env --env-file -v --volume --mount --name -p --publish -w --workdir -u --user " +
			"--entrypoint --platform -l --label --network --net --add-host --cpus -m --memory --pull " +
			"--cap-add --cap-drop --security-opt --device --tmpfs -h --hostname --ulimit --gpus --runtime " +
			"--ipc --pid --restart --log-driver --log-opt --dns --group-add --shm-size --init-path"),
	}
	packageRunner = launcher{
		verbs:  opts("run dlx exec x tool"),
		valued: opts("-p --package --python --with --with-requirements --directory --project --env-file --index --extra --group --spec --pip-args --cache-dir --registry --node-options"),
		target: opts("--from"),
		inline: opts("-c --call"),
	}
)

// launchers are the launchers ServerName knows, by program name.
var launchers = map[string]launcher{
	"env": {valued: opts("-u --unset -C --chdir -S --split-string"), assignments: true},
	"npx": packageRunner, "bunx": packageRunner, "uvx": packageRunner, "pipx": packageRunner,
	"uv": packageRunner, "pnpm": packageRunner, "yarn": packageRunner, "npm": packageRunner,
	"node": nodeLike, "nodejs": nodeLike, "bun": nodeLike, "deno": nodeLike, "tsx": nodeLike, "ts-node": nodeLike,
	"python": pythonLike, "python3": pythonLike, "py": pythonLike, "pypy3": pythonLike,
	"java":   {valued: opts("-cp -classpath --class-path -p --module-path"), target: opts("-jar -m --module")},
	"go":     {verbs: opts("run"), valued: opts("-C -tags -ldflags -gcflags -mod -modfile -o")},
	"docker": dockerLike, "podman": dockerLike, "nerdctl": dockerLike,
	"cmd": {verbs: opts("/c /C /k /K")},
	// The Python SDK's command: mcp run server.py.
	"mcp": {verbs: opts("run"), needVerb: true},
}

// launcherOf returns the launcher program p is, by its file name without
// .exe and, for python3.12 and the like, without its version.
func launcherOf(p string) (launcher, string, bool) {
	name := strings.TrimSuffix(strings.ToLower(filepath.Base(strings.ReplaceAll(p, "\\", "/"))), ".exe")
	if l, ok := launchers[name]; ok {
		return l, name, true
	}
	if v := strings.TrimLeft(strings.TrimPrefix(name, "python"), "0123456789."); v == "" && name != "python" && strings.HasPrefix(name, "python") {
		return pythonLike, "python", true
	}
	return launcher{}, name, false
}

// ServerName names a child command for its default log: the server it
// runs, in characters that are safe in a file name (SafeName). Through a
// launcher (env, npx, uvx, pipx run, pnpm dlx, docker run, an
// interpreter) that is what the launcher runs, past its options and
// their values and env's NAME=VALUE assignments; a package is named
// without its scope and version (@scope/pkg@1.2 is pkg), a script
// without its folder, extension and generic entry point (dist/index.js is
// its package's folder), an image without its registry and tag. A
// program given its source inline (node -e CODE) is named after the
// interpreter.
func ServerName(argv []string) string {
	// Each launcher step consumes at least one argument, so this ends.
	for len(argv) > 0 {
		l, prog, ok := launcherOf(argv[0])
		if !ok {
			return targetName(argv[0], false)
		}
		rest, image, inline := l.next(argv[1:])
		switch {
		case inline || len(rest) == 0:
			return SafeName(prog)
		case image:
			return targetName(rest[0], true)
		}
		argv = rest
	}
	return "server"
}

// next returns the arguments from what l runs on (empty if it runs
// nothing), whether that is an image, and whether the program is inline.
func (l launcher) next(args []string) (rest []string, image, inline bool) {
	verb := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, _, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			if i+1 < len(args) && (!l.needVerb || verb) {
				return args[i+1:], l.image, false
			}
			return nil, false, false
		case strings.HasPrefix(a, "-") && len(a) > 1:
			switch {
			case slices.Contains(l.inline, opt):
				return nil, false, true
			case slices.Contains(l.target, opt) && hasValue:
				return []string{a[len(opt)+1:]}, false, false
			case slices.Contains(l.target, opt):
				return args[i+1:], false, false
			case slices.Contains(l.valued, opt) && !hasValue:
				i++
			}
		case !verb && slices.Contains(l.verbs, a):
			verb = true
		case l.needVerb && !verb:
			return nil, false, false
		case l.assignments && strings.Contains(a, "=") && !strings.HasPrefix(a, "="):
		default:
			return args[i:], l.image, false
		}
	}
	return nil, false, false
}

// targetName names what a launcher runs, or a program: its last path
// element without a version, an extension or a tag, past generic ones.
func targetName(name string, image bool) string {
	for _, scheme := range []string{"npm:", "jsr:", "pypi:", "docker://"} {
		name = strings.TrimPrefix(name, scheme)
	}
	if image {
		if i := strings.IndexByte(name, '@'); i > 0 { // a digest
			name = name[:i]
		}
	}
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' })
	for i := range parts {
		parts[i] = withoutVersion(parts[i], image)
	}
	for len(parts) > 1 && genericPart(parts[len(parts)-1]) {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 0 {
		name = parts[len(parts)-1]
	}
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".py", ".jar", ".exe", ".git"} {
		name = strings.TrimSuffix(name, ext)
	}
	return SafeName(name)
}

// withoutVersion cuts a version off a path element: pkg@1.2 (npm, uvx,
// go run), pkg==1.2 and pkg>=1 (pip), and image:tag for an image. A
// leading @ is a scope, not a version.
func withoutVersion(p string, image bool) string {
	if i := strings.LastIndexByte(p, '@'); i > 0 {
		p = p[:i]
	}
	if i := strings.IndexAny(p, "=<>~!["); i > 0 {
		p = p[:i]
	}
	if i := strings.LastIndexByte(p, ':'); image && i > 0 {
		p = p[:i]
	}
	return p
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
