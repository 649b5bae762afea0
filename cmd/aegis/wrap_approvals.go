package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
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
