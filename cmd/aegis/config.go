package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/aegisrelay/aegis/internal/clientconfig"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/userfiles"
)

const configHelp = `Usage: aegis config wrap|unwrap [--aegis PATH] [--client ID] [--dry-run] [--list] [--no-backup] [--all] [FILE…]

wrap rewrites an MCP client's configuration so that every stdio server in
it runs through aegis wrap; unwrap rewrites it back. An entry

  "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]

becomes

  "command": "/usr/local/bin/aegis",
  "args": ["wrap", "--name=everything", "--client=claude-desktop",
           "npx", "-y", "@modelcontextprotocol/server-everything"]

where everything is the entry's name, which names its audit log (see
'aegis wrap --help'): ~/.local/state/aegis/everything.jsonl. A name that
is not a file name is made one: each run of bytes other than letters,
digits, '.', '_' and '-' becomes one '-', and '-' and '.' are trimmed
from both ends ("Brave Search/v2" is Brave-Search-v2). The client is the
one whose file it is (claude-desktop, claude-code, cursor, vscode, told by
where the file is; --client ID names it for any other file): aegis wrap
records it in each session's session_start, and 'aegis log' shows it. The
log is named after the entry alone, so one server's sessions from every
client are in one log, each saying its client. Entries with a "url" and
no "command" are remote and left alone, and so are entries that already
run through aegis (wrapping twice changes nothing) and entries that run
cmd /c, written for Windows, where aegis does not run.

"wrap", "--name=NAME", "--client=ID" and the command, each one argument
(-name=NAME when wrap added "args" too), mark the entries config wrap
rewrote: unwrap puts back exactly what wrap changed in those, and leaves
any other wrap as it is, and says so: one written by hand (--name NAME as
two arguments, --name=NAME without --client=, or none), or one you gave a
--policy or --confine since. unwrap --all unwraps those too, dropping
aegis's own flags (--policy, --audit, …); it reads wrap's arguments as
wrap does.

Files read: any JSON or JSONC file with "mcpServers" (Claude Desktop,
Cursor, Claude Code's .mcp.json), "servers" (VS Code's mcp.json) or
"projects".<path>."mcpServers" (Claude Code's ~/.claude.json). With no
FILE, the well-known files that exist are used:
  Claude Desktop  ~/.config/Claude/claude_desktop_config.json
                  (macOS: ~/Library/Application Support/Claude/…)
  Cursor          ~/.cursor/mcp.json, .cursor/mcp.json
  VS Code         ~/.config/Code/User/mcp.json (macOS: ~/Library/Application
                  Support/Code/User/mcp.json), .vscode/mcp.json
  Claude Code     ~/.claude.json, .mcp.json
(the project files in the current folder; ~/.config is $XDG_CONFIG_HOME when
that is set).

What is kept: everything but the rewritten "command" and "args" values, byte
for byte: key order, white space, comments and trailing commas (JSONC),
string escapes, "env", "cwd", "type", "inputs" and every other key. The
original command and arguments move into "args" exactly as they were
written, so unwrap gives back the file wrap was given. An entry that had no
"args" gets one, placed before "command", which unwrap removes again. Lines
wrap adds end as the file's do (CRLF or LF). An entry with a comment among
the arguments unwrap would remove is left as it is, and said so.

Before writing, the file's bytes are kept in one backup per file, outside
the file's folder (a project's would be committed with it): the file's
own path under ~/.local/state/aegis/config-backups ($XDG_STATE_HOME/aegis
when that is set), mode 0600, replaced at each rewrite, so it holds the
file as it was before the last one; --no-backup keeps none. The file is
then replaced atomically (a synced temporary file renamed over it),
keeping its permissions and owner. A symlink there when aegis starts is
followed: the file it names is rewritten. The change is printed as a
unified diff, and where the backup is.

The file's folder is opened once, by a walk that follows no symlink, and
everything after (reading, the backup, the temporary file, the rename) is
done relative to it: run with sudo, a folder on the path swapped for a
symlink while the file is read refuses the file, and writes nothing
anywhere. The new file keeps the original's owner only when that owner
could write the folder; otherwise it stays the writer's. The backup is the
writer's, in the writer's state folder.

A file is refused whole and left exactly as it was (exit 2) when it is not
a regular file with one name (no FIFO, no hard link), is over 16 MiB, is
not JSON or JSONC (a // comment holding a carriage return not before a
line feed, a vertical tab, a form feed, U+2028 or U+2029 counts: VS Code
ends the comment there and reads on), or anything read is not what a
client reads: a server map or entry that is not an object, a "command",
"type" or "transport" that is not a string, "args" that is not an array
of strings, a key written twice, or a "command" beside a "url" (or
"httpUrl", "serverUrl") or a "type" or "transport" other than "stdio":
clients differ on which of the two they start.

Exit status: 0 done (also when nothing needed changing); 2 usage, a file
that cannot be read or is refused, a file wrap cannot tell the client of,
or no file found; 74 a file or its backup could not be written (or the
file changed while it was rewritten).

Flags:
  --aegis PATH
      the aegis to run (default: this binary's absolute path, symlinks
      resolved); an entry whose command is PATH counts as wrapped
  --client ID
      (wrap) the client that reads the files, written as --client=ID
      (default: told by each file's path; needed for any other file)
  --dry-run
      print what would change; write nothing
  --list
      list each file's servers and whether they run through aegis; write
      nothing
  --no-backup
      keep no backup of the files rewritten
  --all
      (unwrap) unwrap wraps written by hand too, not only config wrap's

Examples:
  aegis config wrap --list
  aegis config wrap --dry-run
  aegis config wrap ~/.cursor/mcp.json
  aegis config wrap --client=inspector ./inspector-config.json
  aegis config unwrap .vscode/mcp.json
`

func runConfig(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, configHelp)
		return exitcode.Usage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Print(configHelp)
		return exitcode.OK
	case "wrap", "unwrap":
	default:
		return fail(exitcode.Usage, "config: unknown subcommand %q; want wrap or unwrap (see 'aegis config --help')", args[0])
	}
	sub := args[0]
	fs := newFlags("config "+sub, "aegis config "+sub+" [--aegis PATH] [--client ID] [--dry-run] [--list] [--no-backup] [--all] [FILE…]", "")
	fs.Usage = func() { fmt.Print(configHelp) }
	aegisPath := fs.String("aegis", "", "the aegis to run (default: this binary's absolute path)")
	dryRun := fs.Bool("dry-run", false, "print what would change; write nothing")
	list := fs.Bool("list", false, "list each file's servers; write nothing")
	client := fs.String("client", "", "(wrap) the client that reads the files (default: told by each file's path)")
	noBackup := fs.Bool("no-backup", false, "keep no backup of the files rewritten")
	all := fs.Bool("all", false, "(unwrap) unwrap wraps written by hand too")
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if *client != "" && userfiles.SafeName(*client) != *client {
		return fail(exitcode.Usage, "config: --client %q: use letters, digits, '.', '_' and '-' only", *client)
	}
	opts := clientconfig.Options{Aegis: *aegisPath, Name: userfiles.SafeName, BoolFlag: wrapBoolFlag, All: *all}
	backups := ""
	if !*noBackup && !*dryRun && !*list {
		dir, err := userfiles.StateDir()
		if err != nil {
			return fail(exitcode.Usage, "config: %v; name the state folder with $XDG_STATE_HOME, or keep no backup with --no-backup", err)
		}
		backups = filepath.Join(dir, "config-backups")
	}
	if opts.Aegis == "" {
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			return fail(exitcode.Usage, "config: cannot tell where this aegis is (%v); name it with --aegis PATH", err)
		}
		opts.Aegis = exe
	}

	targets := fs.Args()
	if len(targets) == 0 {
		dir, _ := os.Getwd()
		found, looked := clientconfig.Existing(clientconfig.Env{Home: os.Getenv("HOME"), XDGConfigHome: os.Getenv("XDG_CONFIG_HOME"), Dir: dir, GOOS: runtime.GOOS})
		if len(found) == 0 {
			return fail(exitcode.Usage, "config: no MCP client configuration found; looked for\n  %s\n(name a FILE to use another)", strings.Join(looked, "\n  "))
		}
		fmt.Println("found:")
		for _, l := range found {
			fmt.Printf("  %-15s %s\n", l.Client, l.Path)
			targets = append(targets, l.Path)
		}
	}

	code, wrote := exitcode.OK, false
	for _, path := range targets {
		o := opts
		if o.Client = *client; o.Client == "" {
			o.Client = clientOf(path)
		}
		c, w := configFile(os.Stdout, sub, path, o, *dryRun, *list, backups)
		wrote = wrote || w
		// An I/O failure outranks a refusal: both are reported, the
		// status says the worse.
		if c == exitcode.AuditIO || code == exitcode.OK {
			code = c
		}
	}
	if wrote {
		fmt.Println("\nRestart the client (or reload its MCP servers) to start them as configured.")
	}
	if wrote && sub == "wrap" {
		// A wrapped server without --signing-key needs the default key:
		// without it, every one of them fails to start.
		if p, err := userfiles.KeyPath(); err == nil {
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				fmt.Printf("There is no signing key at %s yet, and the servers need one: run 'aegis keygen' once.\n", p)
			}
		}
	}
	return code
}

// clientOf returns the id of the client that reads the file at path, by
// where it is, as named or as its symlinks resolve; "" if neither tells.
func clientOf(path string) string {
	if c := clientconfig.ClientOf(path); c != "" {
		return c
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return clientconfig.ClientOf(real)
	}
	return ""
}

// configFile rewrites (or lists) one file, prints what it did, and
// returns its exit status and whether it wrote the file.
func configFile(w io.Writer, sub, path string, opts clientconfig.Options, dryRun, list bool, backups string) (int, bool) {
	act := clientconfig.DoWrap
	if sub == "unwrap" {
		act = clientconfig.DoUnwrap
	}
	if list {
		act = clientconfig.List
	}
	// Without a client, wrap reads the file first: a file it refuses says
	// why, and one with nothing to wrap needs no client.
	noClient := act == clientconfig.DoWrap && opts.Client == ""
	if noClient {
		act = clientconfig.List
	}
	a, err := clientconfig.Apply(path, act, opts, dryRun, backups)
	var refused *clientconfig.RefusedError
	switch {
	case errors.As(err, &refused):
		return fail(exitcode.Usage, "config: %s: refused, left as it was: %s", refused.Path, clientconfig.Reason(refused.Err)), false
	case a == nil:
		return fail(exitcode.Usage, "config: %s; left as it was", clientconfig.Reason(err)), false
	}
	r := a.Result
	if noClient && slices.ContainsFunc(r.Entries, func(e clientconfig.Entry) bool { return e.Kind == clientconfig.Stdio }) {
		return fail(exitcode.Usage, "config: %s: which client reads it? aegis cannot tell by its path; name it with --client ID (claude-desktop, claude-code, cursor, vscode, or another name, which aegis log shows); left as it was", a.Path), false
	}
	fmt.Fprintf(w, "\n%s:\n", a.Path)
	if len(r.Entries) == 0 {
		fmt.Fprintln(w, "  no MCP servers")
	}
	for _, e := range r.Entries {
		what := e.Kind.String()
		switch {
		case e.Changed && sub == "wrap":
			what = "wraps"
		case e.Changed:
			what = "unwraps"
		}
		fmt.Fprintf(w, "  %-8s %s: %s", what, strings.Join(e.Path, "."), strings.Join(e.Argv, " "))
		if e.Note != "" {
			fmt.Fprintf(w, " (%s)", e.Note)
		}
		fmt.Fprintln(w)
	}
	if list {
		return exitcode.OK, false
	}
	if !r.Changed() {
		fmt.Fprintln(w, "  nothing to change")
		return exitcode.OK, false
	}
	fmt.Fprint(w, r.Diff(a.Path, a.Path+" ("+sub+"ped)"))
	switch {
	case dryRun:
		fmt.Fprintln(w, "  --dry-run: not written")
		return exitcode.OK, false
	case errors.Is(err, clientconfig.ErrMoved):
		return fail(exitcode.Usage, "config: %s: refused, left as it was: %s (moved while it was read? name the file where it is now)", a.Path, clientconfig.Reason(err)), false
	case errors.Is(err, clientconfig.ErrChanged):
		return fail(exitcode.AuditIO, "config: %s changed while it was rewritten (its client wrote it?); it is left as the client wrote it; run again", a.Path), false
	case err != nil:
		return fail(exitcode.AuditIO, "config: writing %s: %v; it is left as it was", a.Path, err), false
	}
	if a.Backup != "" {
		fmt.Fprintf(w, "  written; the bytes before are kept in %s\n", a.Backup)
	} else {
		fmt.Fprintln(w, "  written; no backup kept (--no-backup)")
	}
	if a.OwnerNote != "" {
		fmt.Fprintf(w, "  owner: %s\n", a.OwnerNote)
	}
	return exitcode.OK, true
}
