package main

import (
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/internal/demo"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal/record"
)

func runDemo(args []string) int {
	fs := newFlags("demo", "aegis demo [--dir DIR] | aegis demo --serve", `  aegis demo              a fresh key and audit log in a new temporary folder
  aegis demo --dir ./d    the same in ./d (appending if it holds a log already)
  aegis wrap -- aegis demo --serve
                          the demo's server, to drive by hand or with a client
`)
	dir := fs.String("dir", "", "keep the key and the audit log in `DIR` (default: a new temporary folder)")
	serve := fs.Bool("serve", false, "be the demo's MCP server on stdin and stdout (tools echo, add, slow, fail)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *serve {
		return runDemoServer(nil)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(1, "demo: cannot find the aegis binary: %v", err)
	}
	files, err := demo.Setup(*dir)
	if err != nil {
		return fail(1, "demo: %v", err)
	}
	keyPath, auditPath := files.Key, files.Audit
	// The commands shown are ones the user can paste: how this aegis was
	// run (aegis, go run ./cmd/aegis, or its path).
	self := demo.SelfCommand()
	fmt.Printf("aegis demo in %s\n  key   %s (public %s)\n  audit %s\n\n", files.Dir, keyPath, record.FormatPublicKey(files.Pub), auditPath)
	fmt.Printf("$ %s wrap --audit %s --signing-key %s -- %s demo --serve\n", self, auditPath, keyPath, self)

	if err := demo.Record(exe, auditPath, keyPath, os.Stdout); err != nil {
		return fail(1, "demo: %v", err)
	}

	fmt.Printf("\n$ %s log %s\n", self, auditPath)
	if code := runLog([]string{auditPath}); code != exitcode.OK {
		return code
	}
	fmt.Printf("\n$ %s verify --key @%s.pub %s\n", self, keyPath, auditPath)
	code := runVerify([]string{"--key", "@" + keyPath + ".pub", auditPath})
	fmt.Printf("\nThe files stay in %s: try '%s log --json %s', or change a byte and verify again.\n", files.Dir, self, auditPath)
	if self == demo.GoRun {
		fmt.Printf("go run builds aegis each time: install it once with 'CGO_ENABLED=0 go install ./cmd/aegis' and these commands are 'aegis …'.\n")
	}
	return code
}

// runDemoServer is the hidden __demo-server: the demo's MCP server on stdio.
func runDemoServer(args []string) int {
	if err := demo.Serve(os.Stdin, os.Stdout); err != nil {
		return fail(1, "demo server: %v", err)
	}
	return exitcode.OK
}
