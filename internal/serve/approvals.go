package serve

import (
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/httpfront"
)

// Approvals is wrap's flags for the calls its policy's approve rules
// park (Flags registers them).
type Approvals struct {
	// Timeout is how long a parked call waits (0: park nothing).
	Timeout time.Duration
	// TokenFile is where wrap --listen writes the approver token
	// ("": ApproverTokenPath of the log).
	TokenFile string
	// Elicitation asks 2026-07-28 clients for approvals inside the
	// protocol (relay.Config.ApprovalURL): with --listen on TCP.
	Elicitation bool
}

// Flags registers a's flags on fs.
func (a *Approvals) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&a.Timeout, "approval-timeout", approval.DefaultTimeout, "how long a call an approve rule parks waits for 'aegis approve' or 'aegis deny' (or, with --listen, the approvals page) before it is refused APPROVAL_TIMEOUT (`D`; 0: park nothing, refuse such calls PENDING_APPROVAL at once)")
	fs.BoolVar(&a.Elicitation, "approval-elicitation", false, "with --listen: answer a 2026-07-28 client's call that an approve rule parks input_required, with a URL-mode elicitation of its row on the approvals page, and run the client's retry of it once approved (off: the call waits unanswered until decided)")
	fs.StringVar(&a.TokenFile, "approver-token-file", "", "with --listen: write the approvers' bearer token, which the approvals page at /approvals/ takes and a client's token never replaces, to `FILE`, mode 0600 (default: the audit log's name with .approver-token)")
}

// Check says what is wrong with a, naming the flag.
func (a *Approvals) Check() error {
	if a.Timeout < 0 {
		return fmt.Errorf("--approval-timeout %v: want a positive duration such as 5m, or 0 to park nothing", a.Timeout)
	}
	return nil
}

// ApproverTokenPath is the default approver token file of the log at
// audit: its name with .approver-token for its extension.
func ApproverTokenPath(audit string) string {
	return strings.TrimSuffix(audit, filepath.Ext(audit)) + ".approver-token"
}

// ServeApprovals opens the approvals socket beside the log at audit, for
// a session with a policy, and sets c to park the calls its approve
// rules decide (server names the wrap in what approvers see); the
// returned stop closes the socket (and removes it). With front on (wrap
// --listen, bound), it also makes the approver token (WriteToken, in
// a.TokenFile or ApproverTokenPath) and has the front serve the
// approvals page and its endpoints with it (httpfront.Approver); logf
// says where. Without a policy, with a timeout of 0, or when the socket
// or the token cannot be made, approve rules refuse at once
// (PENDING_APPROVAL), and logf says why for the last two.
func (c *Config) ServeApprovals(audit, server string, a *Approvals, front *Front, logf func(string, ...any)) (stop func()) {
	if c.Gate == nil || a.Timeout == 0 {
		return func() {}
	}
	var ap *httpfront.Approver
	t := approval.NewTable(a.Timeout)
	if front.On() {
		path := a.TokenFile
		if path == "" {
			path = ApproverTokenPath(audit)
		}
		if tf := front.TokenFile; front.Auth == "token" && (tf == path || tf == "" && TokenPath(audit) == path) {
			logf("--approver-token-file %s is the clients' token file; calls an approve rule decides are refused PENDING_APPROVAL", path)
			return func() {}
		}
		tok, id, err := WriteToken(path)
		if err != nil {
			logf("--approver-token-file: %v; calls an approve rule decides are refused PENDING_APPROVAL", err)
			return func() {}
		}
		ap = &httpfront.Approver{Table: t, Token: tok, TokenID: id}
		front.approver, front.approverNote = ap, path
	}
	ln, err := approval.Listen(approval.SocketPath(audit))
	if err != nil {
		logf("%v; calls an approve rule decides are refused PENDING_APPROVAL", err)
		if front.On() {
			front.approver = nil
		}
		return func() {}
	}
	c.Approvals, c.Server = t, server
	if a.Elicitation {
		c.ApprovalURL = front.approvalURL(logf)
	}
	go t.Serve(ln, logf)
	return func() { ln.Close() }
}

// approvalURL is where the elicitation of an approval points (the
// approvals page's row of the call, which the page reads from #id=), or
// nil, which logf explains, when the front serves no page over TCP.
func (f *Front) approvalURL(logf func(string, ...any)) func(id string) string {
	if f.approver == nil || f.ln == nil || f.ln.Addr().Network() != "tcp" {
		logf("--approval-elicitation needs --listen on a TCP address, where the approvals page is served; calls an approve rule parks wait unanswered until decided")
		return nil
	}
	page := "http://" + f.ln.Addr().String() + httpfront.ApproverPath
	return func(id string) string { return page + "#id=" + id }
}

// approverServing is what the serving line adds when the front serves
// approvers: the page's address and where its token is. The token itself
// is never printed: a page opened as ADDRESS#token=TOKEN reads it from
// the fragment, which the browser does not send.
func approverServing(ln net.Listener, tokenPath string) string {
	page := "unix:" + ln.Addr().String() + " " + httpfront.ApproverPath
	if ln.Addr().Network() != "unix" {
		page = "http://" + ln.Addr().String() + httpfront.ApproverPath
	}
	return fmt.Sprintf("; approvals page at %s (approver token in %s: open %s#token=TOKEN)", page, tokenPath, page)
}
