package serve

import (
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
)

// ServeApprovals opens the approvals socket beside the log at audit, for
// a stdio session with a policy, and sets c to park the calls its approve
// rules decide (server names the wrap in what approvers see); the
// returned stop closes the socket (and removes it). Without a policy,
// with a timeout of 0, over --listen (listen: its approvers' endpoints
// are not there yet), or when the socket cannot be opened, approve rules
// refuse at once (PENDING_APPROVAL), and logf says why for the last.
func (c *Config) ServeApprovals(audit, server string, timeout time.Duration, listen bool, logf func(string, ...any)) (stop func()) {
	if c.Gate == nil || listen || timeout == 0 {
		return func() {}
	}
	ln, err := approval.Listen(approval.SocketPath(audit))
	if err != nil {
		logf("%v; calls an approve rule decides are refused PENDING_APPROVAL", err)
		return func() {}
	}
	t := approval.NewTable(timeout)
	c.Approvals, c.Server = t, server
	go t.Serve(ln, logf)
	return func() { ln.Close() }
}
