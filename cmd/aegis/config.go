package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/aegisrelay/aegis/internal/clientconfig"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/userfiles"
)

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
		exe, err := clientconfig.Self()
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
		o.Client = *client
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
		if p, err := userfiles.DefaultKey(); errors.Is(err, userfiles.ErrNoKey) {
			fmt.Printf("There is no signing key at %s yet, and the servers need one: run 'aegis keygen' once.\n", p)
		}
	}
	return code
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
	a, err := clientconfig.Do(path, act, opts, dryRun, backups)
	var refused *clientconfig.RefusedError
	switch {
	case errors.As(err, &refused):
		return fail(exitcode.Usage, "config: %s: refused, left as it was: %s", refused.Path, clientconfig.Reason(refused.Err)), false
	case a == nil:
		return fail(exitcode.Usage, "config: %s; left as it was", clientconfig.Reason(err)), false
	case errors.Is(err, clientconfig.ErrNoClient):
		return fail(exitcode.Usage, "config: %s: %v; name it with --client ID (claude-desktop, claude-code, cursor, vscode, or another name, which aegis log shows); left as it was", a.Path, err), false
	}
	r := a.Result
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
