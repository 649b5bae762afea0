package pincmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/aegisrelay/aegis/internal/pin"
	"github.com/aegisrelay/aegis/internal/userfiles"
)

// Usage is aegis pin's help.
const Usage = `usage:
  aegis pin [--pins FILE] SERVER -- CMD [ARGS…]   pin the tools CMD lists now, ahead of any wrap
  aegis pin list [--pins FILE] SERVER             the pinned tools, and the changed ones a wrap saw
  aegis pin diff [--pins FILE] SERVER [TOOL]      what changed, as a unified diff of the definitions
  aegis pin accept [--pins FILE] SERVER TOOL      make the changed definition of TOOL its pin

SERVER is the server's name, wrap's --name; its pins are in
$XDG_STATE_HOME/aegis/SERVER.pins.json unless --pins names another file.
A running wrap sees an acceptance at once and records who accepted.
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
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, Usage)
			return 0
		}
	}
	fs := flag.NewFlagSet("pin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("pins", "", "the pin file (default: SERVER.pins.json in the state folder)")
	fs.Usage = func() { fmt.Fprint(stderr, Usage) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
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
	switch sub {
	case "list":
		return list(path, stdout, stderr)
	case "diff":
		if len(rest) > 2 {
			return fail(2, "diff takes SERVER [TOOL]")
		}
		return diff(path, rest[1:], stdout, stderr)
	case "accept":
		if len(rest) != 2 {
			return fail(2, "accept takes SERVER TOOL")
		}
		return accept(path, rest[1], stdout, stderr)
	}
	argv := rest[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:] // flag stops at SERVER, and leaves the -- after it
	}
	if len(argv) == 0 {
		return fail(2, "no command to list the tools of: aegis pin SERVER -- CMD [ARGS…]")
	}
	return ahead(path, server, argv, stdout, stderr)
}

func list(path string, stdout, stderr io.Writer) int {
	f, err := pin.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err)
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

func diff(path string, tool []string, stdout, stderr io.Writer) int {
	f, err := pin.Read(path)
	if err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err)
		return 2
	}
	names := sortedKeys(f.Seen)
	if len(tool) == 1 {
		if _, ok := f.Seen[tool[0]]; !ok {
			fmt.Fprintf(stderr, "aegis pin: no change seen to tool %q\n", tool[0])
			return 1
		}
		names = tool
	}
	for _, name := range names {
		s := f.Seen[name]
		from := name
		if s.From != "" {
			from = s.From
		}
		old := f.Tools[from]
		fmt.Fprint(stdout, pin.Diff(old.Definition, s.Definition, "pinned "+from+" "+old.Digest, "seen "+name+" "+s.Digest))
	}
	if len(names) == 0 {
		return 0
	}
	return 1
}

func accept(path, tool string, stdout, stderr io.Writer) int {
	uid := uint64(os.Getuid())
	name := strconv.FormatUint(uid, 10)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	var got pin.Pin
	_, err := pin.Update(path, func(f *pin.File) (bool, error) {
		s, ok := f.Seen[tool]
		if !ok {
			return false, fmt.Errorf("%w: no change seen to tool %q", pin.ErrUsage, tool)
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
		fmt.Fprintf(stderr, "aegis pin: %v\n", errors.Unwrap(err))
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

// ahead runs argv as an MCP server over stdio, lists its tools (every
// page) and pins each, replacing its pin.
func ahead(path, server string, argv []string, stdout, stderr io.Writer) int {
	if _, err := pin.Read(path); err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err) // before the server runs for nothing
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "aegis pin: cannot start %q: %v\n", argv[0], err)
		return 2
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	call := func(id int, method string, params any) ([]byte, error) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := in.Write(append(b, '\n')); err != nil {
			return nil, err
		}
		for sc.Scan() {
			var m struct {
				ID    *int            `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil && *m.ID == id {
				if m.Error != nil {
					return nil, fmt.Errorf("%s: %s", method, m.Error)
				}
				return slices.Clone(sc.Bytes()), nil
			}
		}
		return nil, fmt.Errorf("%s: the server closed its output (%v)", method, sc.Err())
	}
	if _, err := call(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "aegis-pin", "version": "1"}}); err != nil {
		fmt.Fprintf(stderr, "aegis pin: %v\n", err)
		return 2
	}
	in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	pins := map[string]pin.Pin{}
	code := 0 // 1: some tool not pinned
	cursor := ""
	for page := 0; page < MaxPages; page++ {
		params := map[string]any{}
		if page > 0 {
			params["cursor"] = cursor
		}
		msg, err := call(2+page, "tools/list", params)
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
			switch {
			case d.Ambiguous != "":
				fmt.Fprintf(stderr, "aegis pin: tool %q not pinned: %s\n", d.Name, d.Ambiguous)
			case len(d.Canonical) > pin.MaxDefinition:
				fmt.Fprintf(stderr, "aegis pin: tool %q not pinned: its definition is over %d bytes\n", d.Name, pin.MaxDefinition)
			case len(pins) >= pin.MaxPinned:
				fmt.Fprintf(stderr, "aegis pin: tool %q not pinned: a pin file holds %d tools at most\n", d.Name, pin.MaxPinned)
			default:
				pins[d.Name] = pin.Pin{Digest: pin.DigestString(d.Digest), Definition: d.Canonical, By: "aegis pin"}
				continue
			}
			code = 1
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
