package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/logview"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// logSynopsis and logExamples are log's --help.
const (
	logSynopsis = "aegis log [--json [--sessions]] [-f] [--expand] [--tool T] [--since D] FILE…"
	logExamples = `  aegis log audit.jsonl                     every session and its calls
  aegis log --tool 'fs_*' --since 1h audit.jsonl
  aegis log --json audit.jsonl | jq .       one JSON object per call
  aegis log --json --sessions audit.jsonl   and one per session start and end ("type")
  aegis log --expand audit.jsonl            and under each call its rounds and task
  aegis log -f audit.jsonl                  follow a live log, across rotations
  aegis log 'audit.jsonl.*.jsonl.zst'       sealed segments, read in seq order

Each session is a line when it starts (the child's command, its policy,
its confinement), its calls, and a line when it ends (why, the exit
status, a seccomp kill, its counts), or a line saying it has no end (still
running, or aegis was killed, or the log was cut): a session whose child
died before any call still shows. A call's columns: TIME it was made,
SESSION (the first 8 hex digits of the session id), CALL (its JSON-RPC
id), TOOL, STATUS (its outcome: ok, tool_error, rpc_error, unanswered, …),
LATENCY (from request to response), POLICY (the verdict: pass-through
means no --policy was given, so every call was forwarded unjudged).

A call retried in rounds (MCP 2026-07-28: an input_required answer, then
the client's retry) or that became a task is one line: its STATUS is the
final one, marked [rounds N] or [task STATUS], its LATENCY from the first
request to the final answer; --expand adds a line per round and per task
record, and --json gives them as "rounds" and "task" (their seqs). A
session's protocol revision is shown when initialize settles it, and on
its end line.

A FILE stands for its whole log: FILE and every sealed segment
FILE.<first>-<last>.jsonl[.zst] beside it, read in seq order (compressed
ones decompressed as they are read). log shows what it can read; verify
judges it.
`
)

func runLog(args []string) int {
	fs := newFlags("log", logSynopsis, logExamples)
	asJSON := fs.Bool("json", false, "print one JSON object per call")
	sessions := fs.Bool("sessions", false, "with --json: also one object per session start and end (\"type\": \"session_start\", \"session_end\", or \"session_open\" for a session with no end); calls have \"type\": \"call\"")
	follow := fs.Bool("f", false, "follow: keep reading as the log grows")
	tool := fs.String("tool", "", "only calls of this tool (`NAME` or glob, e.g. 'fs_*'); sessions are still shown")
	expand := fs.Bool("expand", false, "under each call of several rounds or a task, one line per round and per task record")
	since := fs.String("since", "", "only calls and session lines after `D`: a duration back from now (90m) or an RFC 3339 time")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return fail(exitcode.Usage, "log: no FILE given (see 'aegis log --help')")
	}
	sets, code, ok := collectLogs("log", "no log", fs.Args())
	if !ok {
		return code
	}
	if *follow && len(sets) != 1 {
		return fail(exitcode.Usage, "log: -f follows exactly one log (%d given)", len(sets))
	}
	if *tool != "" {
		if _, err := path.Match(*tool, ""); err != nil {
			return fail(exitcode.Usage, "log: --tool %q: %v", *tool, err)
		}
	}
	var after time.Time
	if *since != "" {
		if d, err := time.ParseDuration(*since); err == nil {
			after = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339Nano, *since); err == nil {
			after = t
		} else {
			return fail(exitcode.Usage, "log: --since %q is neither a duration (90m) nor an RFC 3339 time", *since)
		}
	}
	if *sessions && !*asJSON {
		return fail(exitcode.Usage, "log: --sessions is for --json; the table always shows sessions")
	}
	p := &logPrinter{json: *asJSON, expand: *expand, needHeader: true}
	if !p.json {
		p.tw = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	}
	p.view = logview.New(logview.Options{Sessions: *sessions || !*asJSON, Tool: *tool, Since: after, Follow: *follow}, p.show)
	code = exitcode.OK
	for i, set := range sets {
		if i > 0 {
			p.view.NewLog()
		}
		var err error
		if *follow {
			err = p.view.Follow(context.Background(), set.Base, p.flush, longLine)
		} else {
			err = p.set(set)
		}
		if err != nil {
			code = fail(exitcode.Usage, "log: %v", err)
		}
		p.view.EndLog()
	}
	p.view.Flush()
	if p.tw != nil {
		p.flush()
		if p.passThrough {
			fmt.Println("\nPOLICY pass-through: no --policy was given, so every call was forwarded unjudged.")
		}
	}
	return code
}

// logPrinter prints the lines of a logview.View: as a table, or one JSON
// object each.
type logPrinter struct {
	view   *logview.View
	json   bool
	expand bool
	tw     *tabwriter.Writer
	// needHeader: the table's column header is due before the next call,
	// at the start and after every session line, which ends the
	// tabwriter's column block.
	needHeader  bool
	passThrough bool // a call shown said pass-through: the legend is due
}

// set prints the calls of one log, its files read in seq order.
func (p *logPrinter) set(s *segment.Set) error {
	files, notes, err := s.OrderedFiles()
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(os.Stderr, "aegis: log: note: %s\n", n)
	}
	bar := &progress{}
	if !p.json || !term.IsTerminal(int(os.Stdout.Fd())) {
		bar = newProgress(os.Stderr, "log "+filepath.Base(s.Base), files)
	}
	defer bar.done()
	return p.view.ReadFiles(files, bar.add, longLine)
}

// longLine reports on stderr a line too long to be a record: no record
// of the journal's, so not shown (verify judges it).
func longLine(n int64) {
	fmt.Fprintf(os.Stderr, "aegis log: a line longer than any record (%d bytes; at most %d): skipped\n", n, record.MaxLine)
}

// show prints a line. A session line holds no tab, so it takes no part
// in the columns' widths, and the calls after it get the column header
// again.
func (p *logPrinter) show(it logview.Item) {
	if s := it.Session; s != nil {
		if p.json {
			json.NewEncoder(os.Stdout).Encode(s.JSON)
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
		json.NewEncoder(os.Stdout).Encode(it.Call)
		return
	}
	if p.needHeader {
		fmt.Fprintln(p.tw, strings.Join(logview.Header, "\t"))
		p.needHeader = false
	}
	if it.Call.Verdict == record.VerdictPassThrough {
		p.passThrough = true
	}
	for _, cells := range it.Call.Cells(p.expand) {
		fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
	}
}

// flush writes out the table's lines so far.
func (p *logPrinter) flush() {
	if p.tw != nil {
		p.tw.Flush()
	}
}
