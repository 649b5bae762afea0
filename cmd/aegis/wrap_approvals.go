package main

import (
	"flag"

	"github.com/aegisrelay/aegis/internal/serve"
)

// addApprovalFlags adds wrap's flags for the calls its policy's approve
// rules park (serve.Approvals).
func addApprovalFlags(fs *flag.FlagSet) *serve.Approvals {
	a := &serve.Approvals{}
	a.Flags(fs)
	return a
}
