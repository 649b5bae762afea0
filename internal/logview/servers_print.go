package logview

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/aegisrelay/aegis/internal/userfiles"
)

// WriteServers writes aegis log's list of the servers with default logs
// in the state folder dir: a table with a heading and a hint, or one JSON
// object per server (Server). A server that cannot be summarized is
// passed to skip, when it is met, and left out.
func WriteServers(w io.Writer, dir string, servers []userfiles.Server, asJSON bool, skip func(error)) {
	var tw *tabwriter.Writer
	if !asJSON {
		fmt.Fprintf(w, "Logs in %s:\n", dir)
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tLOGS\tFILES\tSIZE\tLAST WRITTEN")
	}
	for _, s := range servers {
		r, err := Summarize(s)
		switch {
		case err != nil:
			skip(err)
		case asJSON:
			json.NewEncoder(w).Encode(r)
		default:
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Name, len(r.Logs), r.Files, FormatSize(r.Bytes), FormatTime(r.Modified))
		}
	}
	if tw != nil {
		tw.Flush()
		fmt.Fprintln(w, "\nShow a server's calls with 'aegis log NAME'; check every log with 'aegis verify'.")
	}
}
