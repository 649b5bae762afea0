package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/serve"
)

// approvalFlags are wrap's flags for the calls its policy's approve rules
// park.
type approvalFlags struct {
	timeout *time.Duration
}

func addApprovalFlags(fs *flag.FlagSet) *approvalFlags {
	return &approvalFlags{
		timeout: fs.Duration("approval-timeout", approval.DefaultTimeout, "how long a call an approve rule parks waits for 'aegis approve' or 'aegis deny' before it is refused APPROVAL_TIMEOUT (`D`; 0: park nothing, refuse such calls PENDING_APPROVAL at once)"),
	}
}

func (af *approvalFlags) check() error {
	if *af.timeout < 0 {
		return fmt.Errorf("--approval-timeout %v: want a positive duration such as 5m, or 0 to park nothing", *af.timeout)
	}
	return nil
}

// serve opens the approvals socket beside the log, for a stdio session
// with a policy, and sets c to park the calls its approve rules decide;
// the returned stop closes the socket (and removes it). Without a policy,
// with --approval-timeout 0, over --listen (whose approvers' endpoints
// are not there yet), or when
// the socket cannot be opened, approve rules refuse at once
// (PENDING_APPROVAL), and the last says why.
func (af *approvalFlags) serve(c *serve.Config, audit, name string, listen bool) (stop func()) {
	if c.Gate == nil || listen || *af.timeout == 0 {
		return func() {}
	}
	ln, err := approval.Listen(approval.SocketPath(audit))
	if err != nil {
		logf("%v; calls an approve rule decides are refused PENDING_APPROVAL", err)
		return func() {}
	}
	t := approval.NewTable(*af.timeout)
	c.Approvals, c.Server = t, name
	go t.Serve(ln, logf)
	return func() { ln.Close() }
}
