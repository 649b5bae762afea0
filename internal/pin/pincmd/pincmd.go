package pincmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/internal/pin"
	"github.com/aegisrelay/aegis/internal/userfiles"
)

// Usage is aegis pin's help.
const Usage = `usage:
  aegis pin [--pins FILE] [--protocol REV] SERVER -- CMD [ARGS…]
                                      run CMD, list its tools, and pin each as listed now
  aegis pin list [--pins FILE] SERVER           the pins, and the changed tools a wrap saw
  aegis pin diff [--pins FILE] SERVER [TOOL]    what changed, as a unified diff of the definitions
  aegis pin accept [--pins FILE] SERVER TOOL    make the changed definition of TOOL its pin

SERVER is the server's name: wrap's --name, or the name wrap gives the
server when there is none (aegis log lists them). Its pins are in
SERVER.pins.json in the state folder ($XDG_STATE_HOME/aegis, or
~/.local/state/aegis) unless --pins names another file; give wrap the
same --pins.

aegis pin SERVER -- CMD trusts what CMD lists now: each tool's pin is
replaced, and a change a wrap saw of it is forgotten. It asks CMD which
protocol revision it speaks (server/discover) and lists the tools over
2026-07-28 if it names it, else after initialize over 2025-11-25;
--protocol REV (2026-07-28 or 2025-11-25) chooses without asking. It
says which on its first line.

A running wrap sees an acceptance at once, records who accepted, and
lets the tool's calls pass. A renamed tool (a pinned tool's definition
under a new name) is accepted by its new name; its old pin goes.

Exit status: 0; 1 when diff shows a change, accept finds no change to
accept, or pinning left a listed tool unpinned (it says which); 2 for a
usage mistake, a server that cannot be run or listed, or a pin file
that cannot be used.

Examples:
  aegis pin everything -- npx -y @modelcontextprotocol/server-everything
  aegis pin diff everything
  aegis pin accept everything echo
`

// Main runs aegis pin with args (after "pin"), writing to stdout and
// stderr; it returns the exit status: 0, 1 when diff found changes,
// accept had nothing to accept, or pinning ahead left a listed tool
// unpinned (the others are pinned), 2 for a usage mistake or a server or
// pin file that could not be used.
func Main(args []string, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 {
		switch args[0] {
		case "list", "diff", "accept":
			sub, args = args[0], args[1:]
		case "help":
			args = []string{"--help"}
		}
	}
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("pins", "", "the pin file (default: SERVER.pins.json in the state folder)")
	protocol := fs.String("protocol", "", "the revision to list the tools over: "+Modern+" or "+Legacy+" (default: ask the server with server/discover, else "+Legacy+")")
	fs.Usage = func() {}
	// Flags may follow SERVER and TOOL (aegis pin accept SERVER TOOL
	// --pins FILE); pinning ahead takes everything after SERVER as the
	// command.
	var rest []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, Usage)
			return 0
		} else if err != nil {
			fmt.Fprintf(stderr, "aegis pin: see aegis pin --help\n")
			return 2
		}
		args = fs.Args()
		if sub == "" && len(rest) == 1 && len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0] != "--" {
			continue // flags between SERVER and -- CMD
		}
		if len(args) == 0 || (sub == "" && len(rest) == 1) {
			rest = append(rest, args...)
			break
		}
		rest, args = append(rest, args[0]), args[1:]
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "aegis pin: "+format+"\n", a...)
		return code
	}
	if len(rest) == 0 {
		return fail(2, "no SERVER (see aegis pin --help)")
	}
	server := rest[0]
	if userfiles.SafeName(server) != server {
		return fail(2, "SERVER %q: use letters, digits, '.', '_' and '-' only (wrap's --name)", server)
	}
	path, err := pin.PathFor(*file, server)
	if err != nil {
		return fail(2, "%v", err)
	}
	if sub != "" && *protocol != "" {
		return fail(2, "--protocol is for aegis pin SERVER -- CMD")
	}
	switch sub {
	case "list":
		if len(rest) != 1 {
			return fail(2, "list takes SERVER")
		}
		return list(path, server, stdout, stderr)
	case "diff":
		if len(rest) > 2 {
			return fail(2, "diff takes SERVER [TOOL]")
		}
		return diff(path, server, rest[1:], stdout, stderr)
	case "accept":
		if len(rest) != 2 {
			return fail(2, "accept takes SERVER TOOL")
		}
		return accept(path, server, rest[1], stdout, stderr)
	}
	argv := rest[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:] // flag stops at SERVER, and leaves the -- after it
	}
	if len(argv) == 0 {
		return fail(2, "no command to list the tools of: aegis pin SERVER -- CMD [ARGS…]")
	}
	if *protocol != "" && *protocol != Modern && *protocol != Legacy {
		return fail(2, "--protocol %q: aegis pin speaks %s and %s", *protocol, Modern, Legacy)
	}
	return ahead(path, server, *protocol, argv, stdout, stderr)
}

// readPins reads the pin file of server at path for list, diff and
// accept: a file that does not exist is a mistake (a server's name
// mistyped, a wrap given --pins), said so.
func readPins(path, server string, stderr io.Writer) (*pin.File, bool) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "aegis pin: no pins of %s: no file %s (SERVER is wrap's --name; a wrap given --pins FILE keeps them there)\n", server, path)
		return nil, false
	}
	f, err := pin.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err)
		return nil, false
	}
	return f, true
}

func list(path, server string, stdout, stderr io.Writer) int {
	f, ok := readPins(path, server, stderr)
	if !ok {
		return 2
	}
	for _, name := range sortedKeys(f.Tools) {
		p := f.Tools[name]
		fmt.Fprintf(stdout, "%s\t%s\t%s\n", name, p.Digest, p.By)
	}
	for _, name := range sortedKeys(f.Seen) {
		p := f.Seen[name]
		what := "changed"
		if p.From != "" {
			what = "renamed from " + p.From
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s (aegis pin diff, aegis pin accept)\n", name, p.Digest, what)
	}
	return 0
}

func diff(path, server string, tool []string, stdout, stderr io.Writer) int {
	f, ok := readPins(path, server, stderr)
	if !ok {
		return 2
	}
	names := sortedKeys(f.Seen)
	if len(tool) == 1 {
		if _, ok := f.Seen[tool[0]]; !ok {
			fmt.Fprintf(stderr, "aegis pin: %s\n", noChange(f, server, tool[0]))
			return 1
		}
		names = tool
	}
	for i, name := range names {
		s := f.Seen[name]
		from := name
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if s.From != "" {
			from = s.From
			fmt.Fprintf(stdout, "%s is renamed from %s: it carries the definition pinned as %s under a new name. aegis pin accept %s %s pins it as %s, and drops %s's pin.\n", name, from, from, server, name, name, from)
		}
		old, ok := f.Tools[from]
		if !ok {
			fmt.Fprintf(stdout, "%s is no longer pinned (accepted under another name, or pinned again): the diff is against nothing.\n", from)
		}
		fmt.Fprint(stdout, pin.Diff(old.Definition, s.Definition, "pinned "+from+" "+old.Digest, "seen "+name+" "+s.Digest))
	}
	if len(names) == 0 {
		return 0
	}
	return 1
}

// noChange says why tool of f has no change to show or accept.
func noChange(f *pin.File, server, tool string) string {
	if _, ok := f.Tools[tool]; ok {
		return fmt.Sprintf("tool %q of %s is pinned, and no wrap has seen it change (aegis pin list %s)", tool, server, server)
	}
	return fmt.Sprintf("no tool %q among the %d pinned and %d changed tools of %s (aegis pin list %s)", tool, len(f.Tools), len(f.Seen), server, server)
}

func accept(path, server, tool string, stdout, stderr io.Writer) int {
	// Read first: a tool with no change to accept leaves everything as
	// it was (no lock file made, no folder).
	f, ok := readPins(path, server, stderr)
	if !ok {
		return 2
	}
	if _, ok := f.Seen[tool]; !ok {
		fmt.Fprintf(stderr, "aegis pin: %s\n", noChange(f, server, tool))
		return 1
	}
	uid := uint64(os.Getuid())
	name := strconv.FormatUint(uid, 10)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	var got pin.Pin
	_, err := pin.Update(path, func(f *pin.File) (bool, error) {
		s, ok := f.Seen[tool]
		if !ok {
			return false, fmt.Errorf("%w: %s", pin.ErrUsage, noChange(f, server, tool))
		}
		s.By, s.UID, s.User = "accepted by "+name+" (uid "+strconv.FormatUint(uid, 10)+")", &uid, name
		if s.From != "" {
			delete(f.Tools, s.From)
			s.From = ""
		}
		f.Tools[tool] = s
		delete(f.Seen, tool)
		got = s
		return true, nil
	})
	if errors.Is(err, pin.ErrUsage) {
		fmt.Fprintf(stderr, "aegis pin: %s\n", strings.TrimPrefix(err.Error(), pin.ErrUsage.Error()+": "))
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "accepted %s %s\n", tool, got.Digest)
	return 0
}

// MaxPages bounds the pages of one listing aegis pin follows.
const MaxPages = 1000

// The protocol revisions aegis pin speaks: Modern without initialize, its
// _meta on every request; Legacy after initialize.
const (
	Modern = "2026-07-28"
	Legacy = "2025-11-25"
)

// ProbeTimeout is how long aegis pin waits for an answer to server/discover
// before taking the server for one that speaks only Legacy (some do not
// answer a request before initialize).
var ProbeTimeout = 5 * time.Second

// maxNotPinned bounds the lines that say which tools were not pinned.
const maxNotPinned = 20

// ahead runs argv as an MCP server over stdio, lists its tools (every
// page) over protocol (Modern, Legacy, or "" to ask the server with
// server/discover and fall back to Legacy) and pins each, replacing its
// pin.
func ahead(path, server, protocol string, argv []string, stdout, stderr io.Writer) int {
	f, err := pin.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err) // before the server runs for nothing
		return 2
	}
	room := pin.Room(f.Size())
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "aegis pin: cannot start %q: %v\n", argv[0], err)
		return 2
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	c := newConn(in, out, time.Now().Add(60*time.Second))
	rev, how, err := c.open(protocol)
	if err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err)
		return 2
	}
	pins := map[string]pin.Pin{}
	code := 0 // 1: some tool not pinned
	notPinned := 0
	skip := func(format string, a ...any) {
		if notPinned < maxNotPinned {
			fmt.Fprintf(stderr, "aegis pin: "+format+"\n", a...)
		}
		notPinned++
		code = 1
	}
	cursor := ""
	for page := 0; page < MaxPages; page++ {
		params := map[string]any{}
		if page > 0 {
			params["cursor"] = cursor
		}
		msg, err := c.call("tools/list", rev, params, 0)
		if err != nil {
			fmt.Fprintf(stderr, "aegis pin: %v\n", err)
			return 2
		}
		l := pin.ReadMessage(msg)
		if l.Ambiguous != "" && len(l.Tools) == 0 {
			fmt.Fprintf(stderr, "aegis pin: a page of the list not read: %s\n", l.Ambiguous)
			code = 1
		}
		for _, d := range l.Tools {
			p := pin.Pin{Digest: pin.DigestString(d.Digest), Definition: d.Canonical, By: "aegis pin"}
			switch {
			case d.Ambiguous != "":
				skip("tool %q not pinned: %s", d.Name, d.Ambiguous)
			case len(d.Canonical) > pin.MaxDefinition:
				skip("tool %q not pinned: its definition is over %d bytes", d.Name, pin.MaxDefinition)
			case len(pins) >= pin.MaxPinned:
				skip("tool %q not pinned: a pin file holds %d tools at most", d.Name, pin.MaxPinned)
			case pin.EntryBytes(d.Name, p) > room:
				skip("tool %q not pinned: the pin file would be over %d bytes", d.Name, pin.MaxFileSize)
			default:
				room -= pin.EntryBytes(d.Name, p)
				pins[d.Name] = p
			}
		}
		if !l.NextCursor {
			break
		}
		if page == MaxPages-1 {
			fmt.Fprintf(stderr, "aegis pin: the list goes on past %d pages; the tools of later pages are not pinned\n", MaxPages)
			code = 1
		}
		var next struct {
			Result struct {
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		json.Unmarshal(msg, &next)
		cursor = next.Result.NextCursor
	}
	if notPinned > maxNotPinned {
		fmt.Fprintf(stderr, "aegis pin: and %d more tools not pinned\n", notPinned-maxNotPinned)
	}
	if _, err := pin.Update(path, func(f *pin.File) (bool, error) {
		f.Server = server
		for name, p := range pins {
			f.Tools[name] = p
			delete(f.Seen, name)
		}
		return true, nil
	}); err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "protocol %s (%s)\n", rev, how)
	for _, name := range sortedKeys(pins) {
		fmt.Fprintf(stdout, "pinned %s %s\n", name, pins[name].Digest)
	}
	return code
}

func sortedKeys(m map[string]pin.Pin) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
