package main

import (
	"errors"
	"fmt"
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
	opts := clientconfig.Options{Aegis: *aegisPath, Client: *client, Name: userfiles.SafeName, BoolFlag: wrapBoolFlag, All: *all}
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
	act := map[string]clientconfig.Action{"wrap": clientconfig.DoWrap, "unwrap": clientconfig.DoUnwrap}[sub]
	if *list {
		act = clientconfig.List
	}
	for _, path := range targets {
		a, err := clientconfig.Do(path, act, opts, *dryRun, backups)
		w, c, why := clientconfig.Report(os.Stdout, sub, a, err, *dryRun, *list)
		if why != nil {
			fail(c, "config: %v", why)
		}
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
