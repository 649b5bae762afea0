package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/relay"
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
		e := p.Explain(tool)
		verdict := map[policy.Action]string{policy.Allow: "allowed", policy.Deny: "denied (" + relay.CodePolicyDenied + ")",
			policy.Approve: "parked for approval"}[e.Action]
		if e.Malformed != "" {
			fmt.Printf("%q: refused (%s) whatever the rules: %s\n", tool, relay.CodePolicyDenied, e.Malformed)
			continue
		}
		var why string
		switch {
		case e.Rule < 0:
			why = fmt.Sprintf("by the default (%s:%d): no rule matches", p.File(), e.Line)
		case e.Exact:
			why = fmt.Sprintf("by %s (%s:%d): the exact name", e.Label, p.File(), e.Line)
		default:
			why = fmt.Sprintf("by %s (%s:%d): the glob %q matches", e.Label, p.File(), e.Line, p.Rules()[e.Rule].Tool)
		}
		fmt.Printf("%q: %s %s\n", tool, verdict, why)
		if e.Action == policy.Approve {
			fmt.Printf("  over stdio the call waits for aegis approve ID (sent to the server) or aegis deny ID (%s), at most --approval-timeout (%s); refused at once (%s) over --listen, with --approval-timeout 0, in a batch, or when the parked calls are at their bound\n",
				relay.CodeApprovalDenied, relay.CodeApprovalTimeout, relay.CodePendingApproval)
		}
		if e.When != "" {
			fmt.Printf("  only when its condition holds for the call; otherwise the next rule that matches decides, or the default\n")
		}
		if e.Rate.N > 0 {
			fmt.Printf("  rate %s: %d calls at once, then one every %v; over it, %s with retry_after_ms\n",
				e.Rate, e.Rate.N, e.Rate.Per/time.Duration(e.Rate.N), relay.CodeRateLimited)
		}
		for _, i := range e.Also {
			r := p.Rules()[i]
			fmt.Printf("  %s (line %d, %s) matches too but comes later: first match wins\n", r.Label(), r.Line, r.Action)
		}
	}
	return exitcode.OK
}
