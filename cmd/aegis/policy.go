package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/policy"
)

func runPolicy(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, policyUsage)
		return exitcode.Usage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Print(policyUsage)
		return exitcode.OK
	case "check":
		return runPolicyCheck(args[1:])
	case "explain":
		return runPolicyExplain(args[1:])
	}
	return fail(exitcode.Usage, "policy: unknown subcommand %q (want check or explain; see 'aegis policy --help')", args[0])
}

func helpArg(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}

func runPolicyCheck(args []string) int {
	if helpArg(args) {
		fmt.Print(policyUsage)
		return exitcode.OK
	}
	if len(args) == 0 {
		return fail(exitcode.Usage, "policy check: no FILE (see 'aegis policy --help')")
	}
	code := exitcode.OK
	for _, path := range args {
		p, err := policy.Load(path)
		var perr *policy.Error
		switch {
		case errors.As(err, &perr):
			printPolicyError(os.Stderr, "policy check", err)
			code = max(code, exitcode.Invalid)
		case err != nil:
			fail(exitcode.Usage, "policy check: %v", err)
			code = exitcode.Usage
		default:
			fmt.Printf("%s: valid: %d rules, default %s, set %s\n", path, len(p.Rules()), p.Default(), p.Set())
		}
	}
	return code
}

func runPolicyExplain(args []string) int {
	if helpArg(args) {
		fmt.Print(policyUsage)
		return exitcode.OK
	}
	if len(args) < 2 {
		return fail(exitcode.Usage, "policy explain: want FILE and at least one TOOL (see 'aegis policy --help')")
	}
	p, err := policy.Load(args[0])
	if err != nil {
		var perr *policy.Error
		if errors.As(err, &perr) {
			printPolicyError(os.Stderr, "policy explain", err)
			return exitcode.Invalid
		}
		return fail(exitcode.Usage, "policy explain: %v", err)
	}
	for _, tool := range args[1:] {
		p.WriteExplanation(os.Stdout, tool)
	}
	return exitcode.OK
}
