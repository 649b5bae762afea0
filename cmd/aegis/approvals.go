package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/userfiles"
)

const approvalsExamples = `  aegis approvals                      # the calls that wait, in every wrap of yours
  aegis approve 3f9c2a7be1d04c55       # release that call to its server, once
  aegis deny 3f9c2a7be1d04c55 --reason "not on prod"
`

// approvalSockets is the socket --socket names, or every approvals socket
// in the state folder (each wrap with a policy serves one beside its log).
func approvalSockets(socket string) ([]string, error) {
	if socket != "" {
		return []string{socket}, nil
	}
	dir, err := userfiles.StateDir()
	if err != nil {
		return nil, err
	}
	return approval.Sockets(dir)
}

// runApprovals is aegis approvals: what waits for a decision.
func runApprovals(args []string) int {
	fs := newFlags("approvals", "aegis approvals [--socket PATH] [--json]", approvalsExamples)
	socket := fs.String("socket", "", "ask the wrap serving the approvals socket `PATH` (default: every *"+approval.SocketExt+" in $XDG_STATE_HOME/aegis)")
	asJSON := fs.Bool("json", false, "print one JSON object per waiting call")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(exitcode.Usage, "approvals: unexpected argument %q (see 'aegis approvals --help')", fs.Arg(0))
	}
	socks, err := approvalSockets(*socket)
	if err != nil {
		return fail(exitcode.Usage, "approvals: %v", err)
	}
	all, errs := approval.List(socks, *socket == "")
	code := exitcode.OK
	for _, err := range errs {
		fmt.Fprintf(os.Stderr, "aegis: approvals: %v\n", err)
		code = exitcode.Invalid
	}
	approval.WriteList(os.Stdout, all, *asJSON, time.Now())
	return code
}

// runApprove is aegis approve ID.
func runApprove(args []string) int { return decideApproval("approve", args) }

// runDeny is aegis deny ID [--reason R].
func runDeny(args []string) int { return decideApproval("deny", args) }

// decideApproval sends op for the id in args to the wrap that holds it.
func decideApproval(op string, args []string) int {
	syn := "aegis approve [--socket PATH] ID"
	if op == "deny" {
		syn = "aegis deny [--socket PATH] [--reason R] ID"
	}
	fs := newFlags(op, syn, approvalsExamples)
	socket := fs.String("socket", "", "send it to the approvals socket `PATH` (default: the wrap, among those in $XDG_STATE_HOME/aegis, that holds ID)")
	var reason *string
	if op == "deny" {
		reason = fs.String("reason", "", "why, in `TEXT` the client receives and the log records (at most 512 bytes)")
	}
	// The id may come before the flags: aegis deny ID --reason R.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
		fs.Parse(fs.Args()[1:])
	}
	if id == "" || fs.NArg() > 0 {
		return fail(exitcode.Usage, "%s: want one approval ID, as 'aegis approvals' lists it (see 'aegis %s --help')", op, op)
	}
	req := approval.Request{Op: op, ID: id}
	if reason != nil {
		req.Reason = *reason
	}
	socks, err := approvalSockets(*socket)
	if err != nil {
		return fail(exitcode.Usage, "%s: %v", op, err)
	}
	switch err := approval.Decide(socks, req, *socket == ""); {
	case err != nil:
		return fail(exitcode.Invalid, "%s %s: %v", op, id, err)
	case op == "approve":
		fmt.Printf("approved %s: the call went to its server\n", id)
	default:
		fmt.Printf("denied %s: the client was refused\n", id)
	}
	return exitcode.OK
}
