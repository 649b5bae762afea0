package confine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Unreached is a file a confined command needs before it runs a line of
// its own that no grant of its profile covers, and the grant that would.
type Unreached struct {
	// Path is the file, absolute, as the command names it.
	Path string
	// What is what the file is to the command ("node's script").
	What string
	// Grant is the flag that covers it: "--allow-exec-support", or
	// "--allow-read DIR" with the file's folder (a script's neighbours,
	// its modules, are read from there too).
	Grant string
}

func (u Unreached) String() string {
	return fmt.Sprintf("%s %s is outside every grant (add %s)", u.What, u.Path, u.Grant)
}

// ReachError is Command's error when its command needs files no grant
// covers (Reach): the child would fail with a permission error before it
// ran, so it is not started. It matches ErrUnreached.
type ReachError struct{ Missing []Unreached }

func (e *ReachError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, u := range e.Missing {
		parts[i] = u.String()
	}
	return "confine: the command cannot start under these grants: " + strings.Join(parts, "; ")
}

func (e *ReachError) Is(target error) bool { return target == ErrUnreached }

// Grants are the flags that cover every missing file, each once.
func (e *ReachError) Grants() []string {
	var gs []string
	for _, u := range e.Missing {
		if !slices.Contains(gs, u.Grant) {
			gs = append(gs, u.Grant)
		}
	}
	return gs
}

// unreached is Reach as Command's error: nil when the profile covers
// every file, or when the kernel restricts no file (best effort without
// Landlock).
func unreached(p Profile, argv []string) *ReachError {
	if !filesConfined() {
		return nil
	}
	if miss := Reach(p, argv); len(miss) > 0 {
		return &ReachError{Missing: miss}
	}
	return nil
}

// printUnreached ends PrintProfile's text for a command that cannot
// start: each file outside every grant, and the grants that cover them.
func printUnreached(w io.Writer, e *ReachError) error {
	for _, u := range e.Missing {
		fmt.Fprintf(w, "  outside every grant: %s %s (add %s)\n", u.What, u.Path, u.Grant)
	}
	grants := strings.Join(e.Grants(), " ")
	fmt.Fprintf(w, "wrap would refuse to start it (exit 69): add %s.\n", grants)
	return fmt.Errorf("%w: add %s", ErrUnreached, grants)
}

// An interpreter reads a script named by its first operand (operands):
// node, python, a shell, ruby, perl, php. env runs the program named by
// its first operand past its NAME=VALUE assignments.
var (
	nodeInterp   = options{valued: strings.Fields("-r --require --import --loader --experimental-loader -C --conditions --env-file --title"), inline: strings.Fields("-e --eval -p --print")}
	pythonInterp = options{valued: strings.Fields("-W -X"), inline: strings.Fields("-c -m")}
	shellInterp  = options{valued: strings.Fields("-o +o -O +O"), inline: strings.Fields("-c")}
	interpreters = map[string]options{
		"node": nodeInterp, "nodejs": nodeInterp, "tsx": nodeInterp, "ts-node": nodeInterp,
		"python": pythonInterp, "python3": pythonInterp, "pypy3": pythonInterp,
		"sh": shellInterp, "bash": shellInterp, "dash": shellInterp, "zsh": shellInterp, "ksh": shellInterp,
		"ruby": {valued: strings.Fields("-r -I"), inline: strings.Fields("-e")},
		"perl": {valued: strings.Fields("-I -M -m"), inline: strings.Fields("-e -E")},
		"php":  {valued: strings.Fields("-c -d"), inline: strings.Fields("-r")},
	}
	envOptions = options{valued: strings.Fields("-u --unset -C --chdir"), inline: strings.Fields("-S --split-string"), assignments: true}
)

// options are how a program's arguments read: valued are the options
// followed by a value (node -r FILE), inline those after which no operand
// names a file (node -e CODE, python -m MODULE, sh -c COMMAND, env -S
// 'node x'); with assignments, NAME=VALUE arguments come before the
// operand (env's).
type options struct {
	valued, inline []string
	assignments    bool
}

// interpreterOf is the interpreter program name is, by its file name
// (python3.12 is python's).
func interpreterOf(name string) (options, bool) {
	base := filepath.Base(name)
	if it, ok := interpreters[base]; ok {
		return it, true
	}
	if v, ok := strings.CutPrefix(base, "python"); ok && v != "" && strings.Trim(v, "0123456789.") == "" {
		return pythonInterp, true
	}
	return options{}, false
}

// operands are args from the first that is not an option, an option's
// value or an assignment: an interpreter's script and its arguments,
// env's program and its arguments. None when an inline option comes
// first, or an interpreter's "-" (a program read from stdin).
func (o options) operands(args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, _, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			return args[i+1:]
		case a == "-" && !o.assignments:
			return nil // the program from stdin; env's "-" empties the environment
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			switch {
			case slices.Contains(o.inline, opt) || slices.ContainsFunc(o.inline, func(in string) bool { return len(in) == 2 && strings.HasPrefix(a, in) }):
				return nil // -c CMD, or -cCMD
			case slices.Contains(o.valued, opt) && !hasValue:
				i++
			}
		case o.assignments && strings.Contains(a, "="):
		default:
			return args[i:]
		}
	}
	return nil
}

// shebang is the interpreter a script's #! line names and its one
// argument (Linux passes the rest of the line as one); "" for a file that
// is not a script or cannot be read.
func shebang(path string) (interp, arg string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	// Linux reads at most this much of the #! line (BINPRM_BUF_SIZE).
	line, err := bufio.NewReaderSize(f, 256).ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) && len(line) == 0 {
		return "", ""
	}
	rest, ok := strings.CutPrefix(string(line), "#!")
	if !ok {
		return "", ""
	}
	interp, arg, _ = strings.Cut(strings.TrimSpace(rest), " ")
	return interp, strings.TrimSpace(arg)
}

// Reach returns the files argv needs before it runs that p grants
// nothing on, in the order it needs them: a script's interpreter (its #!
// line, and the program #!/usr/bin/env runs), the program env runs past
// its assignments, and the script an interpreter (node, python, a shell,
// ruby, perl, php) is given as its first argument that is not an option,
// when that names an existing file. The command's own file is always
// granted (the helper's rule for the target). A file Reach cannot find
// or read is left out: the start says what is wrong with it. p's paths
// must be absolute (Check); programs are found on this process's PATH.
func Reach(p Profile, argv []string) []Unreached {
	if len(argv) == 0 {
		return nil
	}
	target, err := exec.LookPath(argv[0])
	if err == nil {
		target, err = filepath.Abs(target)
	}
	if err != nil {
		return nil
	}
	g := newGrants(p, target)
	var miss []Unreached
	need := func(path, what string) {
		if u, ok := g.unreached(path, what); !ok {
			miss = append(miss, u)
		}
	}
	prog, path, args := argv[0], target, argv[1:]
	// Each step (env running a program) takes at least one argument, so
	// this ends; the bound is far beyond any real command's chain.
	for range 8 {
		if interp, arg := shebang(path); interp != "" {
			need(interp, path+"'s interpreter")
			if filepath.Base(interp) == "env" && arg != "" && !strings.HasPrefix(arg, "-") {
				if p, err := exec.LookPath(arg); err == nil {
					need(p, path+"'s #! program")
				}
			}
		}
		name := filepath.Base(prog)
		if name == "env" {
			run := envOptions.operands(args)
			if len(run) == 0 {
				return miss
			}
			next, rest := run[0], run[1:]
			p, err := exec.LookPath(next)
			if err != nil {
				return miss
			}
			if p, err = filepath.Abs(p); err != nil {
				return miss
			}
			need(p, "env's program")
			prog, path, args = next, p, rest
			continue
		}
		if it, ok := interpreterOf(name); ok {
			if run := it.operands(args); len(run) > 0 {
				if abs, err := filepath.Abs(run[0]); err == nil {
					if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() {
						need(abs, name+"'s script")
					}
				}
			}
		}
		return miss
	}
	return miss
}

// grants are a profile's path-beneath rules as Landlock holds them: each
// path resolved, since a rule holds the file or folder its path leads to.
type grants struct {
	paths       []string // every rule's resolved path
	support     []string // --allow-exec-support's trees, resolved, whether granted or not
	execSupport bool
}

func newGrants(p Profile, target string) grants {
	var g grants
	add := func(list *[]string, path string) {
		if r, err := filepath.EvalSymlinks(path); err == nil {
			*list = append(*list, r)
		}
	}
	add(&g.paths, target)
	for _, d := range execSupport {
		add(&g.support, d)
	}
	if p.ExecSupport {
		g.paths = append(g.paths, g.support...)
		g.execSupport = true
	}
	for _, d := range slices.Concat(p.Read, p.Write) {
		add(&g.paths, d)
	}
	return g
}

// unreached reports whether path is beneath a grant (ok), and if not,
// the grant that would cover it: --allow-exec-support for a file in its
// trees, else --allow-read of the file's folder. A path that cannot be
// resolved is ok: the start will say what is wrong with it.
func (g grants) unreached(path, what string) (u Unreached, ok bool) {
	r, err := filepath.EvalSymlinks(path)
	if err != nil || beneath(r, g.paths) {
		return Unreached{}, true
	}
	u = Unreached{Path: path, What: what, Grant: "--allow-read " + filepath.Dir(path)}
	if !g.execSupport && beneath(r, g.support) {
		u.Grant = "--allow-exec-support"
	}
	return u, false
}

// beneath reports whether path is one of roots or beneath one.
func beneath(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || r == "/" || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}
