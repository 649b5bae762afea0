package approval

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteList writes what aegis approvals prints of the calls that wait:
// one JSON object per call, or a table, or a sentence when none waits.
// Tool and arguments are quoted already (Quote): a client's bytes never
// reach the terminal as they are.
func WriteList(w io.Writer, ps []Pending, asJSON bool, now time.Time) {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, p := range ps {
			enc.Encode(p)
		}
		return
	}
	if len(ps) == 0 {
		fmt.Fprintln(w, "no calls await approval")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSERVER\tTOOL\tCALLER\tAGE\tEXPIRES IN\tARGUMENTS")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Server, p.Tool, p.Caller,
			now.Sub(p.Since).Round(time.Second), max(p.Expiry.Sub(now), 0).Round(time.Second), p.Args)
	}
	tw.Flush()
}
