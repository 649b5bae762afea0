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
	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// logSynopsis and logExamples are log's --help.
const (
	logSynopsis = "aegis log [--json [--sessions]] [-f] [--expand] [--tool T] [--since D] [FILE | NAME]…"
	logExamples = `  aegis log                                 the servers with logs in the state folder, to choose from
  aegis log server-memory                   every log of the server wrap named server-memory
  aegis log audit.jsonl                     every session and its calls
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
SEQ is the seq of the call's intent record and, after the arrow, of the
outcome that answered it (5→6; no arrow: no outcome yet): either is what
'aegis prove inclusion --seq' takes; --json gives them as "seq" and
"outcome_seq". A session's start line names the server (wrap's --name,
or the name derived from the command) and the client whose configuration
ran it (wrap --client), when its session_start records them.

A call retried in rounds (MCP 2026-07-28: an input_required answer, then
the client's retry) or that became a task is one line: its STATUS is the
final one, marked [rounds N] or [task STATUS], its LATENCY from the first
request to the final answer; --expand adds a line per round and per task
record, and --json gives them as "rounds" and "task" (their seqs). A
session's protocol revision is shown when initialize settles it, and on
its end line.

With no FILE, log lists the servers that have logs in the state folder
($XDG_STATE_HOME/aegis, or ~/.local/state/aegis: where wrap records when
no --audit names a file), each with its logs, size and when it was last
written; --json gives one object per server. Name one to read it: a
NAME that is no file is the server wrap named so (the log's name without
.jsonl), and stands for all its logs: NAME.jsonl, and NAME-2.jsonl and
on, where wrap records while another wrap of the same server holds
NAME.jsonl. The state folder's NAME.jsonl, given as a file, stands for
them too (a note names each one added). 'aegis verify' with no FILE
checks them all.

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
		if *follow || *tool != "" || *since != "" || *expand || *sessions {
			return fail(exitcode.Usage, "log: -f, --tool, --since, --expand and --sessions read a log: name one ('aegis log' lists them)")
		}
		return listServers(*asJSON)
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
		if len(sets) > 1 && !p.json {
			// Several logs (a server's NAME-2.jsonl, a folder): each
			// says which it is.
			fmt.Fprintf(p.tw, "log %s\n", set.Base)
			p.needHeader = true
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
		// A log's calls are answered in it or not at all.
		p.view.Flush()
	}
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

// listServers prints the servers that have default logs in the state
// folder, to choose from: a table, or one JSON object each.
func listServers(asJSON bool) int {
	servers, dir, err := userfiles.Servers()
	if err != nil {
		return fail(exitcode.Usage, "log: no FILE given, and %v", err)
	}
	if len(servers) == 0 {
		return fail(exitcode.Usage, "log: no FILE given, and no log in %s yet: wrap records there when no --audit names a file (see 'aegis log --help')", dir)
	}
	type row struct {
		Name     string    `json:"name"`
		Logs     []string  `json:"logs"`
		Files    int       `json:"files"` // the logs' files, sealed segments included
		Bytes    int64     `json:"bytes"`
		Modified time.Time `json:"modified"`
	}
	var tw *tabwriter.Writer
	if !asJSON {
		fmt.Printf("Logs in %s:\n", dir)
		tw = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tLOGS\tFILES\tSIZE\tLAST WRITTEN")
	}
	code := exitcode.OK
	for _, s := range servers {
		r := row{Name: s.Name, Logs: s.Logs}
		in, err := segment.Collect(s.Logs, true)
		if err != nil {
			code = fail(exitcode.Usage, "log: %v", err)
			continue
		}
		for _, set := range in.Sets {
			for _, p := range set.Paths {
				if n, mod, err := contentSize(p); err == nil {
					r.Files++
					r.Bytes += n
					if mod.After(r.Modified) {
						r.Modified = mod
					}
				}
			}
		}
		if asJSON {
			json.NewEncoder(os.Stdout).Encode(r)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", r.Name, len(r.Logs), r.Files, byteSize(r.Bytes), logview.FormatTime(r.Modified))
	}
	if tw != nil {
		tw.Flush()
		fmt.Println("\nShow a server's calls with 'aegis log NAME'; check every log with 'aegis verify'.")
	}
	return code
}

// contentSize is the size of a log's file without the pre-zeroed space
// at the end of a live file (segment.ContentEnd), and its mtime.
func contentSize(path string) (int64, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, time.Time{}, err
	}
	n, err := segment.ContentEnd(f, st.Size())
	return n, st.ModTime(), err
}

// byteSize is a size for people: bytes, KiB, MiB or GiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, suffix = f/unit, s
	}
	return fmt.Sprintf("%.1f %s", f, suffix)
}

// allServerLogs is every default log in the state folder: what log and
// verify read with no FILE.
func allServerLogs(cmd string) ([]string, int, bool) {
	servers, dir, err := userfiles.Servers()
	if err != nil {
		return nil, fail(exitcode.Usage, "%s: no FILE given, and %v", cmd, err), false
	}
	var logs []string
	for _, s := range servers {
		logs = append(logs, s.Logs...)
	}
	if len(logs) == 0 {
		return nil, fail(exitcode.Usage, "%s: no FILE given, and no log in %s yet: wrap records there when no --audit names a file (see 'aegis %s --help')", cmd, dir, cmd), false
	}
	return logs, 0, true
}

// serverArgs resolves the arguments of log and verify that stand for a
// server's logs. An argument that names no file and holds no path
// separator or glob is a server's name (NAME, or NAME.jsonl): its default
// logs in the state folder. A server's default log there (NAME.jsonl)
// stands for all its logs: the NAME-2.jsonl and on that wrap records to
// while NAME.jsonl is in use are added, each said in a note on stderr.
// Other arguments are passed on as they are.
func serverArgs(cmd string, args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil {
			out = append(out, a)
			out = append(out, otherLogs(cmd, a)...)
			continue
		}
		if a == "" || strings.ContainsAny(a, "*?[/"+string(filepath.Separator)) {
			out = append(out, a)
			continue
		}
		s, dir, err := userfiles.ServerLogs(strings.TrimSuffix(a, ".jsonl"))
		if err != nil {
			out = append(out, a) // its own error follows
			continue
		}
		if len(s.Logs) == 0 {
			return nil, fmt.Errorf("%s: no such file, and no server of that name has a log in %s ('aegis log' lists those that do)", a, dir)
		}
		out = append(out, s.Logs...)
	}
	return out, nil
}

// otherLogs returns the logs a server's default log at path stands for
// besides itself, noting each on stderr; none for any other file.
func otherLogs(cmd, path string) []string {
	abs, err := filepath.Abs(path)
	name, ok := strings.CutSuffix(filepath.Base(abs), ".jsonl")
	if err != nil || !ok {
		return nil
	}
	s, dir, err := userfiles.ServerLogs(name)
	if err != nil || filepath.Dir(abs) != filepath.Clean(dir) || len(s.Logs) < 2 || s.Logs[0] != abs {
		return nil
	}
	for _, l := range s.Logs[1:] {
		fmt.Fprintf(os.Stderr, "aegis: %s: note: also reading %s, %s's log while %s was in use\n", cmd, l, name, filepath.Base(abs))
	}
	return s.Logs[1:]
}
