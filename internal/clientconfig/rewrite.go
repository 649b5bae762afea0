package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// Errors of package clientconfig; classify with errors.Is.
var (
	// ErrSyntax: the file is not JSONC.
	ErrSyntax = errors.New("clientconfig: not JSON")
	// ErrShape: the file is JSONC but not a configuration the rewrite
	// can read unambiguously (doc.go, "Refusals").
	ErrShape = errors.New("clientconfig: unexpected shape")
	// ErrNotRegular: the path is not a regular file.
	ErrNotRegular = errors.New("clientconfig: not a regular file")
	// ErrChanged: the file changed between reading and replacing it.
	ErrChanged = errors.New("clientconfig: the file changed while it was rewritten")
	// ErrMoved: a folder on the file's path is no longer the one read (it
	// was moved, or swapped for a symbolic link); nothing is written.
	ErrMoved = errors.New("clientconfig: the file's folder was moved or replaced")
	// ErrTooLarge: the file is over MaxFile bytes; it is not read.
	ErrTooLarge = errors.New("clientconfig: file too large")
)

// Error is one of the package's errors with what is wrong in a user's
// words: Reason says it without naming the package. errors.Is matches
// Kind, the sentinel.
type Error struct {
	Kind   error
	Detail string
}

func (e *Error) Error() string { return e.Kind.Error() + ": " + e.Detail }

func (e *Error) Unwrap() error { return e.Kind }

func refuse(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Reason returns err as a message for the user of a command: an Error's
// detail, which names the file or key at fault (with "not JSON: " before
// a syntax error's position), or err's own text for any other error.
func Reason(err error) string {
	var e *Error
	switch {
	case !errors.As(err, &e):
		return err.Error()
	case e.Kind == ErrSyntax:
		return "not JSON: " + e.Detail
	}
	return e.Detail
}

// Kind says what an entry is.
type Kind int

const (
	// Stdio is a stdio server that does not run through aegis.
	Stdio Kind = iota
	// Wrapped is a stdio server that runs through aegis wrap.
	Wrapped
	// Remote is a server the client reaches over the network (a "url",
	// or a type other than stdio); it is never rewritten.
	Remote
	// Other is an entry with neither a command nor a url; it is never
	// rewritten.
	Other
)

func (k Kind) String() string {
	switch k {
	case Stdio:
		return "stdio"
	case Wrapped:
		return "wrapped"
	case Remote:
		return "remote"
	}
	return "other"
}

// Entry is one server of a configuration file.
type Entry struct {
	// Path names the entry as keys from the top: ["mcpServers", NAME], or
	// ["projects", DIR, "mcpServers", NAME].
	Path []string
	Name string
	Kind Kind
	// Argv is the command and its arguments as the client runs them (for
	// a Remote entry, the url).
	Argv []string
	// Changed reports whether the rewrite changed the entry; Note says
	// why an entry that could be rewritten was not.
	Changed bool
	Note    string
}

// Options configure Wrap and Unwrap. The zero value wraps with "aegis"
// (looked up on the client's PATH).
type Options struct {
	// Aegis is the command written into wrapped entries (an absolute path,
	// so that the client need not find aegis on its PATH). An entry whose
	// command is this path, or any file named aegis, counts as aegis.
	Aegis string
	// Name returns the --name written for an entry from its key; nil
	// writes the key itself. aegis wrap names the entry's default audit
	// log after it, so a caller maps keys to what wrap accepts as a file
	// name.
	Name func(key string) string
	// BoolFlag reports whether aegis wrap's flag name (without dashes)
	// is a boolean, which takes no separate value. Unwrap reads a wrapped
	// entry's arguments as wrap's flag parser does, and needs to know;
	// nil takes every flag for one with a value.
	BoolFlag func(name string) bool
	// Client is the MCP client that reads the file ("claude-desktop",
	// "vscode", …; see ClientOf), written into each entry Wrap rewrites as
	// --client=CLIENT: aegis wrap records it in the session's
	// session_start. Wrap needs it; it is also half of Wrap's mark.
	Client string
	// All makes Unwrap unwrap every entry that runs aegis wrap, not only
	// those Wrap marked: a wrap written by hand loses its flags
	// (--policy, --audit, …).
	All bool
}

// Result is the outcome of Wrap, Unwrap or Scan. Out holds the rewritten
// file (Src itself when nothing changed); it and Src stay valid as long
// as the caller keeps them.
type Result struct {
	Src, Out []byte
	Entries  []Entry
	edits    []edit
}

// Changed reports whether the rewrite changed any byte.
func (r *Result) Changed() bool { return len(r.edits) > 0 }

// edit replaces src[start:end] by text.
type edit struct {
	start, end int
	text       string
}

// Scan reads src and lists its entries without changing anything.
func Scan(src []byte, o Options) (*Result, error) { return rewrite(src, o, nil) }

// Wrap rewrites every stdio entry of src that does not already run through
// aegis so that it does (doc.go, "Entries"). It never changes a wrapped or
// remote entry, so wrapping twice changes nothing the second time. It
// needs o.Client.
func Wrap(src []byte, o Options) (*Result, error) {
	if o.Client == "" {
		return nil, errors.New("clientconfig: Wrap without Options.Client")
	}
	return rewrite(src, o, wrapEntry)
}

// Unwrap rewrites every wrapped entry of src back to the command it wraps.
func Unwrap(src []byte, o Options) (*Result, error) { return rewrite(src, o, unwrapEntry) }

// entryFunc returns the edits that rewrite one entry, or a note saying why
// it cannot.
type entryFunc func(src []byte, o Options, e *entryNodes) ([]edit, string)

// entryNodes is one entry's nodes, checked: cmd and args are nil when
// absent.
type entryNodes struct {
	name      string
	obj       object
	cmd, args *member
	cmdStr    string
	argStrs   []string
	kind      Kind
}

func rewrite(src []byte, o Options, f entryFunc) (*Result, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		// A client may create its file empty: no servers, nothing to do.
		return &Result{Src: src, Out: src}, nil
	}
	// The tree's offsets are in body, the file without a byte order mark;
	// the edits are moved to src's at the end.
	bom := 0
	if bytes.HasPrefix(src, []byte("\uFEFF")) {
		bom = len("\uFEFF")
	}
	body := src[bom:]
	tree, err := parse(body)
	if err != nil {
		return nil, err
	}
	if kind(tree) != '{' {
		return nil, refuse(ErrShape, "the top level is not an object")
	}
	root := members(tree)
	// The server maps, each with its path from the top.
	type serverMap struct {
		path []string
		obj  object
	}
	var maps []serverMap
	for _, key := range []string{"mcpServers", "servers"} {
		m, err := child(root, key, nil)
		if err != nil {
			return nil, err
		}
		if m != nil {
			maps = append(maps, serverMap{[]string{key}, m})
		}
	}
	projects, err := child(root, "projects", nil)
	if err != nil {
		return nil, err
	}
	if projects != nil {
		if err := unique(projects, []string{"projects"}); err != nil {
			return nil, err
		}
		for _, p := range projects {
			path := []string{"projects", p.key}
			if kind(p.val) != '{' {
				return nil, refuse(ErrShape, "%s is not an object", dotted(path))
			}
			project := members(p.val)
			if err := unique(project, path); err != nil {
				return nil, err
			}
			m, err := child(project, "mcpServers", path)
			if err != nil {
				return nil, err
			}
			if m != nil {
				maps = append(maps, serverMap{append(path, "mcpServers"), m})
			}
		}
	}
	if err := unique(root, nil); err != nil {
		return nil, err
	}
	r := &Result{Src: src, Out: src}
	for _, m := range maps {
		if err := unique(m.obj, m.path); err != nil {
			return nil, err
		}
		for _, mem := range m.obj {
			path := append(slices.Clip(m.path), mem.key)
			e, err := readEntry(body, mem, path, o)
			if err != nil {
				return nil, err
			}
			entry := Entry{Path: path, Name: mem.key, Kind: e.kind, Argv: append([]string{e.cmdStr}, e.argStrs...)}
			if e.kind == Remote || e.kind == Other {
				entry.Argv = nil
				if u := e.obj.get("url"); u != nil && kind(u.val) == '"' {
					entry.Argv = []string{str(u.val.Value.(hujson.Literal))}
				}
			}
			if f != nil && (e.kind == Stdio || e.kind == Wrapped) {
				edits, note := f(body, o, e)
				entry.Changed, entry.Note = len(edits) > 0, note
				r.edits = append(r.edits, edits...)
			}
			r.Entries = append(r.Entries, entry)
		}
	}
	for i := range r.edits {
		r.edits[i].start += bom
		r.edits[i].end += bom
	}
	if len(r.edits) > 0 {
		r.Out = apply(src, r.edits)
	}
	return r, nil
}

// child returns the members of obj's member key if it is an object, nil
// if there is no such member, and ErrShape if it is something else.
func child(obj object, key string, path []string) (object, error) {
	m := obj.get(key)
	if m == nil {
		return nil, nil
	}
	if kind(m.val) != '{' {
		return nil, refuse(ErrShape, "%s is not an object", dotted(append(slices.Clip(path), key)))
	}
	return members(m.val), nil
}

// unique refuses an object with a key written twice: JSON readers differ
// on which of the two counts.
func unique(obj object, path []string) error {
	seen := make(map[string]bool, len(obj))
	for _, m := range obj {
		if seen[m.key] {
			where := "the top level"
			if len(path) > 0 {
				where = dotted(path)
			}
			return refuse(ErrShape, "%s has the key %s twice, and JSON readers differ on which of the two counts; keep one", where, quote(m.key))
		}
		seen[m.key] = true
	}
	return nil
}

// readEntry checks one entry and classifies it.
func readEntry(src []byte, mem member, path []string, o Options) (*entryNodes, error) {
	if kind(mem.val) != '{' {
		return nil, refuse(ErrShape, "%s is not an object", dotted(path))
	}
	obj := members(mem.val)
	if err := unique(obj, path); err != nil {
		return nil, err
	}
	e := &entryNodes{name: mem.key, obj: obj}
	e.cmd = obj.get("command")
	e.args = obj.get("args")
	text := func(n *node) hujson.Literal { return n.Value.(hujson.Literal) }
	// The keys that pick a transport. Clients do not agree on which wins
	// when they disagree: Claude Code and VS Code run a "command" beside
	// a "url" as stdio, Gemini CLI connects to the url first, and Claude
	// Desktop runs the command whatever the "type". An entry is read only
	// when every reading of it is the same.
	var picks []string // transport keys beside "command", as written
	typeStr := map[string]string{}
	for _, key := range []string{"type", "transport"} {
		m := obj.get(key)
		if m == nil {
			continue
		}
		if kind(m.val) != '"' {
			return nil, refuse(ErrShape, "%s.%s is not a string", dotted(path), key)
		}
		v := str(text(m.val))
		typeStr[key] = v
		if v != "stdio" {
			picks = append(picks, fmt.Sprintf("%q: %s", key, quote(v)))
		}
	}
	for _, key := range []string{"url", "httpUrl", "serverUrl"} {
		if m := obj.get(key); m != nil {
			picks = append(picks, fmt.Sprintf("a %q", key))
		}
	}
	if e.cmd != nil {
		if kind(e.cmd.val) != '"' {
			return nil, refuse(ErrShape, "%s.command is not a string", dotted(path))
		}
		e.cmdStr = str(text(e.cmd.val))
	}
	if e.args != nil {
		if kind(e.args.val) != '[' {
			return nil, refuse(ErrShape, "%s.args is not an array", dotted(path))
		}
		for i := range elems(e.args.val) {
			a := &elems(e.args.val)[i]
			if kind(a) != '"' {
				return nil, refuse(ErrShape, "%s.args[%d] is not a string", dotted(path), i)
			}
			e.argStrs = append(e.argStrs, str(text(a)))
		}
	}
	switch {
	case e.cmd != nil && len(picks) > 0:
		return nil, refuse(ErrShape, "%s has a \"command\" and %s: clients differ on which they start (Claude Code and VS Code run the command beside a url, Gemini CLI the url; Claude Desktop runs the command whatever the type, Claude Code and VS Code only a stdio one); keep only the one meant", dotted(path), strings.Join(picks, " and "))
	case e.cmd == nil && len(picks) > 0:
		e.kind = Remote
	case e.cmd == nil:
		e.kind = Other
	case isAegis(e.cmdStr, o) && len(e.argStrs) > 0 && e.argStrs[0] == "wrap":
		e.kind = Wrapped
	default:
		e.kind = Stdio
	}
	return e, nil
}

// isAegis reports whether cmd names an aegis binary.
func isAegis(cmd string, o Options) bool {
	if o.Aegis != "" && cmd == o.Aegis {
		return true
	}
	base := filepath.Base(strings.ReplaceAll(cmd, `\`, "/"))
	return base == "aegis" || base == "aegis.exe"
}

// The mark Wrap leaves in what it writes, so that Unwrap undoes exactly
// what Wrap did and nothing a user wrote: "wrap", then its --name as one
// argument, "--name=NAME" in an "args" that was there and "-name=NAME"
// in one it added (Go's flag package reads both as --name NAME), then
// "--client=CLIENT", then the child's command (after a "--" only when
// the command begins with '-'). An entry marked so but with anything
// else among wrap's flags (a --policy added since) is not as Wrap left
// it, and neither is a wrap written by hand (the README's "--name", NAME,
// or a --name=NAME without --client=): Unwrap leaves those, with a note,
// unless Options.All.
const (
	markArgs   = "--name="   // args was there
	markAdded  = "-name="    // args was added
	markClient = "--client=" // beside either
)

// marked reports whether args (a wrapped entry's, "wrap" first) are as
// Wrap writes them, and whether Wrap added the entry's "args".
func marked(args []string) (ok, added bool) {
	if len(args) < 4 || !strings.HasPrefix(args[2], markClient) {
		return false, false
	}
	added = strings.HasPrefix(args[1], markAdded)
	if !added && !strings.HasPrefix(args[1], markArgs) {
		return false, false
	}
	if args[3] == "--" {
		return len(args) > 4 && strings.HasPrefix(args[4], "-"), added
	}
	return !strings.HasPrefix(args[3], "-"), added
}

// windowsShell reports whether an entry runs its server through cmd /c
// (or /k), Windows's shell: a file written for Windows, where aegis does
// not run.
func windowsShell(cmd string, args []string) bool {
	base := strings.ToLower(filepath.Base(strings.ReplaceAll(cmd, `\`, "/")))
	return (base == "cmd" || base == "cmd.exe") && len(args) > 0 && (strings.EqualFold(args[0], "/c") || strings.EqualFold(args[0], "/k"))
}

// wrapEntry rewrites a stdio entry to run through aegis.
func wrapEntry(src []byte, o Options, e *entryNodes) ([]edit, string) {
	if e.kind == Wrapped {
		return nil, "already runs through aegis"
	}
	if windowsShell(e.cmdStr, e.argStrs) {
		return nil, "runs cmd " + e.argStrs[0] + ", Windows's shell, and aegis runs on Linux and macOS only; left as it is"
	}
	aegis := o.Aegis
	if aegis == "" {
		aegis = "aegis"
	}
	name := e.name
	if o.Name != nil {
		name = o.Name(name)
	}
	mark := markArgs
	if e.args == nil {
		mark = markAdded
	}
	// No "--" unless the command itself looks like a flag: wrap's flags
	// end at the first argument that is not one, and a client that adds
	// flags of its own after the entry's args (the MCP Inspector's
	// config-file mode appends --method …) must not find them behind a
	// "--" the child would then be given.
	prefix := []string{quote("wrap"), quote(mark + name), quote(markClient + o.Client)}
	if strings.HasPrefix(e.cmdStr, "-") {
		prefix = append(prefix, quote("--"))
	}
	prefix = append(prefix, string(src[e.cmd.val.StartOffset:e.cmd.val.EndOffset]))
	edits := []edit{{e.cmd.val.StartOffset, e.cmd.val.EndOffset, quote(aegis)}}
	switch {
	case e.args == nil:
		// A new "args" goes just before "command", where Unwrap knows to
		// remove it again.
		sep := memberSep(src, e.cmd.keyStart)
		edits = append(edits, edit{e.cmd.keyStart, e.cmd.keyStart, `"args": [` + strings.Join(prefix, ", ") + `],` + sep})
	case len(elems(e.args.val)) == 0:
		// Just inside the brackets: what was between them (white space,
		// a comment) stays, after the arguments.
		at := e.args.val.StartOffset + 1
		edits = append(edits, edit{at, at, strings.Join(prefix, ", ")})
	default:
		sep := elemSep(src, e.args.val)
		first := elems(e.args.val)[0].StartOffset
		edits = append(edits, edit{first, first, strings.Join(prefix, ","+sep) + "," + sep})
	}
	return edits, ""
}

// unwrapEntry rewrites a wrapped entry back to the command it wraps: an
// entry as Wrap left it exactly as it was before, one written by hand
// only with Options.All.
func unwrapEntry(src []byte, o Options, e *entryNodes) ([]edit, string) {
	if e.kind != Wrapped {
		return nil, ""
	}
	isMarked, added := marked(e.argStrs)
	if !isMarked && !o.All {
		return nil, "not as config wrap writes it (written by hand, or changed since); left as it is (unwrap --all unwraps it)"
	}
	c, err := childStart(e.argStrs[1:], o.BoolFlag)
	if err != "" {
		return nil, err + "; left as it is"
	}
	i := c + 1 // in args, after "wrap"
	arr := e.args.val
	el := elems(arr)
	k := i + 1
	// What goes: elements [0, k) and the gaps between them, or the whole
	// "args" member Wrap added. A comment there would go with them.
	var gone [][2]int
	var cut edit
	switch {
	case k < len(el):
		cut = edit{el[0].StartOffset, el[k].StartOffset, ""}
		gone = gaps(el[:k+1])
	case added && isMarked && e.args.keyStart < e.cmd.keyStart && isMemberSep(src[arr.EndOffset:e.cmd.keyStart]):
		cut = edit{e.args.keyStart, e.cmd.keyStart, ""}
		gone = append(gaps(el), [2]int{arr.StartOffset + 1, el[0].StartOffset}, [2]int{el[k-1].EndOffset, arr.EndOffset - 1})
	default:
		cut = edit{el[0].StartOffset, el[k-1].EndOffset, ""}
		gone = gaps(el)
	}
	for _, g := range gone {
		if !isElemSep(src[g[0]:g[1]]) {
			return nil, "a comment among aegis's arguments; left as it is"
		}
	}
	return []edit{{e.cmd.val.StartOffset, e.cmd.val.EndOffset, string(src[el[i].StartOffset:el[i].EndOffset])}, cut}, ""
}

// gaps returns the spans between consecutive elements.
func gaps(el []hujson.Value) [][2]int {
	var g [][2]int
	for j := 1; j < len(el); j++ {
		g = append(g, [2]int{el[j-1].EndOffset, el[j].StartOffset})
	}
	return g
}

// isElemSep reports whether gap holds nothing but white space and at
// most one comma: no comment.
func isElemSep(gap []byte) bool {
	return len(bytes.Trim(gap, " \t\r\n,")) == 0 && bytes.Count(gap, []byte(",")) <= 1
}

// childStart returns the index in args (wrap's arguments) of the child's
// command, read as Go's flag package reads them: flags end at "--" (which
// is dropped) or at the first argument that is not a flag; a flag without
// "=" takes the next argument as its value unless it is a boolean. It
// returns a reason instead when wrap would refuse the arguments.
func childStart(args []string, isBool func(string) bool) (int, string) {
	for i := 0; i < len(args); i++ {
		s := args[i]
		if s == "--" {
			if i+1 == len(args) {
				return 0, "runs aegis wrap without a command"
			}
			return i + 1, ""
		}
		if len(s) < 2 || s[0] != '-' {
			return i, ""
		}
		name := strings.TrimPrefix(s[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return 0, fmt.Sprintf("runs aegis wrap with a bad flag %q", s)
		}
		if strings.Contains(name, "=") || isBool != nil && isBool(name) {
			continue
		}
		if i++; i == len(args) {
			return 0, fmt.Sprintf("runs aegis wrap with no value for %s", s)
		}
	}
	return 0, "runs aegis wrap without a command"
}

// elemSep returns the text to put between elements inserted at the front
// of arr: what is between its first two elements after the comma, or, for
// one element on a line of its own, what is before it.
func elemSep(src []byte, arr *node) string {
	el := elems(arr)
	if len(el) >= 2 {
		gap := src[el[0].EndOffset:el[1].StartOffset]
		if i := bytes.IndexByte(gap, ','); i >= 0 && isSpace(gap[:i]) && isSpace(gap[i+1:]) {
			return string(gap[i+1:])
		}
		return " "
	}
	if gap := src[arr.StartOffset+1 : el[0].StartOffset]; isSpace(gap) && bytes.IndexByte(gap, '\n') >= 0 {
		// From the last line break, with its \r if the file has one.
		at := bytes.LastIndexByte(gap, '\n')
		if at > 0 && gap[at-1] == '\r' {
			at--
		}
		return string(gap[at:])
	}
	return " "
}

// memberSep returns the text to put between a member inserted before the
// one whose key starts at keyStart and that member: a line break and the
// same indentation when it starts a line, otherwise a space.
func memberSep(src []byte, keyStart int) string {
	i := keyStart
	for i > 0 && (src[i-1] == ' ' || src[i-1] == '\t') {
		i--
	}
	if i > 0 && src[i-1] == '\n' {
		j := i - 1
		if j > 0 && src[j-1] == '\r' {
			j--
		}
		return string(src[j:keyStart])
	}
	return " "
}

// isMemberSep reports whether gap is a comma with only white space around.
func isMemberSep(gap []byte) bool {
	i := bytes.IndexByte(gap, ',')
	return i >= 0 && isSpace(gap[:i]) && isSpace(gap[i+1:])
}

func isSpace(b []byte) bool {
	return len(bytes.Trim(b, " \t\r\n")) == 0
}

// quote encodes s as a JSON string, leaving <, > and & as they are.
func quote(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\'
	}
	if plain { // the common case: nothing to escape
		return `"` + s + `"`
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// apply returns src with the edits made; edits are in source order and do
// not overlap.
func apply(src []byte, edits []edit) []byte {
	slices.SortStableFunc(edits, func(a, b edit) int { return a.start - b.start })
	out := make([]byte, 0, len(src)+256*len(edits))
	at := 0
	for _, e := range edits {
		out = append(append(out, src[at:e.start]...), e.text...)
		at = e.end
	}
	return append(out, src[at:]...)
}

// dotted names a path for a message: mcpServers.everything.args.
func dotted(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		if p == "" || strings.ContainsAny(p, ". \t\"") {
			b.WriteString(quote(p))
		} else {
			b.WriteString(p)
		}
	}
	return b.String()
}
