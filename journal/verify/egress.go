package verify

import (
	"fmt"

	"github.com/aegisrelay/aegis/journal/calls"
)

// noteUnclosed notes, as a session is cut off (a crash: the log ends, or
// a recovery follows), each egress connection it opened and did not
// close: the opening record is what a crash leaves of a connection, so
// that this is no problem, only what the log cannot say (its totals). At
// most maxProblems such notes are kept. A session that ended with one
// open is the model's anomaly instead.
func noteUnclosed(rep *Report, s *calls.Session[*SessionReport, struct{}], how calls.How) {
	if how == calls.Ended {
		return
	}
	why := "the log ends"
	if how == calls.CutRecovery {
		why = "a recovery follows"
	}
	for _, n := range s.Unclosed() {
		if len(rep.Notes) >= maxProblems {
			return
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("session %s: egress connection %d opened, not closed (%s)", s.Data.SID, n, why))
	}
}
