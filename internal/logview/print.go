package logview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal/record"
)

// Printer prints the lines a View shows (Show is the View's show): a
// table, or one JSON object each (aegis log --json).
type Printer struct {
	w      io.Writer
	json   bool
	expand bool
	tw     *tabwriter.Writer // the table's; nil for JSON
	// needHeader: the table's column header is due before the next call,
	// at the start and after every session line, which ends the
	// tabwriter's column block.
	needHeader  bool
	passThrough bool // a call shown said pass-through: the legend is due
}

// NewPrinter returns a Printer to w: one JSON object a line if asJSON,
// else a table, with a line per round and per task record under a call
// if expand (Call.Cells).
func NewPrinter(w io.Writer, asJSON, expand bool) *Printer {
	p := &Printer{w: w, json: asJSON, expand: expand, needHeader: true}
	if !asJSON {
		p.tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	}
	return p
}

// Heading starts the lines of the log whose live file is base, in a
// table: when several logs are shown (a server's NAME-2.jsonl, a
// folder), each says which it is.
func (p *Printer) Heading(base string) {
	if p.tw != nil {
		fmt.Fprintf(p.tw, "log %s\n", base)
		p.needHeader = true
	}
}

// Show prints a line. A session line holds no tab, so it takes no part
// in the columns' widths, and the calls after it get the column header
// again.
func (p *Printer) Show(it Item) {
	if s := it.Session; s != nil {
		if p.json {
			json.NewEncoder(p.w).Encode(s.JSON)
			return
		}
		text := s.Text
		if s.End != nil {
			text += supervise.Summary(s.End)
		}
		fmt.Fprintln(p.tw, text)
		p.needHeader = true
		return
	}
	if p.json {
		json.NewEncoder(p.w).Encode(it.Call)
		return
	}
	if p.needHeader {
		fmt.Fprintln(p.tw, strings.Join(header, "\t"))
		p.needHeader = false
	}
	if it.Call.Verdict == record.VerdictPassThrough {
		p.passThrough = true
	}
	for _, cells := range it.Call.Cells(p.expand) {
		fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
	}
}

// Flush writes out the table's lines so far (aegis log -f, whenever it
// waits for more).
func (p *Printer) Flush() {
	if p.tw != nil {
		p.tw.Flush()
	}
}

// Close writes out the table, and after it the legend of pass-through
// if a call shown said it.
func (p *Printer) Close() {
	if p.tw == nil {
		return
	}
	p.tw.Flush()
	if p.passThrough {
		fmt.Fprintln(p.w, "\nPOLICY pass-through: no --policy was given, so every call was forwarded unjudged.")
	}
}
