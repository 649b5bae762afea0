// Command aegis records every MCP tools/call that crosses it as signed,
// hash-chained evidence. README.md is its reference.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/pin/pincmd"
	buildversion "github.com/aegisrelay/aegis/internal/version"
	_ "github.com/aegisrelay/aegis/internal/warm" // wrap's signing tables, built while aegis starts
)

// version is set with -ldflags "-X main.version=…"; otherwise the
// build's own (internal/version).
var version = ""

func aegisVersion() string { return buildversion.Of(version) }

type command struct {
	name, summary string
	run           func(args []string) int
	hidden        bool
}

var commands []command

func init() {
	commands = []command{
		{name: "keygen", summary: "make an Ed25519 signing key", run: runKeygen},
		{name: "wrap", summary: "relay an MCP stdio server and record every tools/call", run: runWrap},
		{name: "verify", summary: "check an audit log's chain, signatures and completeness", run: runVerify},
		{name: "log", summary: "show the calls recorded in audit logs", run: runLog},
		{name: "prove", summary: "prove a record is in a checkpoint of a log, or one checkpoint extends another; check such proofs", run: runProve},
		{name: "policy", summary: "check a --policy file, or explain which rule decides a tool", run: runPolicy},
		{name: "config", summary: "make an MCP client's stdio servers run through aegis wrap, and back", run: runConfig},
		{name: "approvals", summary: "list the tools/calls that wait for an approval", run: runApprovals},
		{name: "approve", summary: "release a call an approve rule parked, once", run: runApprove},
		{name: "deny", summary: "refuse a call an approve rule parked (APPROVAL_DENIED)", run: runDeny},
		{name: "pin", summary: "pin a server's tool definitions, show what changed, accept a change", run: func(a []string) int { return pincmd.Main(a, os.Stdout, os.Stderr) }},
		{name: "demo", summary: "record a demo session end to end and verify it", run: runDemo},
		{name: "version", summary: "print the version", run: func([]string) int { fmt.Println("aegis", aegisVersion()); return 0 }},
		{name: "__demo-server", hidden: true, run: runDemoServer},
	}
}

func main() {
	// aegis __confine-exec restricts itself and execs the target: it runs
	// before anything else (internal/confine/doc.go, "Mechanism").
	if code, ok := confineExec(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return exitcode.Usage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return exitcode.OK
	case "-version", "--version":
		fmt.Println("aegis", aegisVersion())
		return exitcode.OK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "aegis: unknown command %q\n", args[0])
	usage(os.Stderr)
	return exitcode.Usage
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "aegis %s: signed, hash-chained evidence of every MCP tools/call\n\nUsage: aegis COMMAND [flags]\n\nCommands:\n", aegisVersion())
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintf(w, "\nRun 'aegis COMMAND --help' for a command's flags and examples.\n")
}

// newFlags returns a FlagSet whose --help prints the synopsis, the
// examples and the flags, on stdout.
func newFlags(name, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := os.Stdout
		fmt.Fprintf(w, "Usage: %s\n\nFlags:\n", synopsis)
		printFlags(w, fs)
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s", examples)
		}
	}
	return fs
}

// parseFlags parses args; it returns (exit code, false) when the command
// should stop: --help (0) or a usage error (2).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) { // Parse has printed fs.Usage
		return exitcode.OK, false
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "aegis %s: %v (see 'aegis %s --help')\n", fs.Name(), err, fs.Name())
		return exitcode.Usage, false
	}
	return 0, true
}

// fail prints an aegis: error on stderr and returns code.
func fail(code int, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintln(os.Stderr, "aegis: "+strings.TrimPrefix(msg, "aegis: "))
	return code
}

// printFlags lists the flags the GNU way: two dashes, one for a
// one-letter flag (-f).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name
		}
		if name != "" {
			line += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, usage)
	})
}
