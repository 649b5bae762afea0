package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/aegisrelay/aegis/exitcode"
	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// logSynopsis and logExamples are log's --help.
const (
	logSynopsis = "aegis log [--json [--sessions]] [-f] [--tool T] [--since D] FILE…"
	logExamples = `  aegis log audit.jsonl                     every session and its calls
  aegis log --tool 'fs_*' --since 1h audit.jsonl
  aegis log --json audit.jsonl | jq .       one JSON object per call
  aegis log --json --sessions audit.jsonl   and one per session start and end ("type")
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
	since := fs.String("since", "", "only calls and session lines after `D`: a duration back from now (90m) or an RFC 3339 time")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return fail(exitcode.Usage, "log: no FILE given (see 'aegis log --help')")
	}
	paths, err := expandArgs(fs.Args())
	if err != nil {
		return fail(exitcode.Usage, "log: %v", err)
	}
	in, err := segment.Collect(paths, true)
	if err != nil {
		return fail(exitcode.Usage, "log: %v", err)
	}
	for _, n := range in.Notes {
		fmt.Fprintf(os.Stderr, "aegis: log: note: %s\n", n)
	}
	sets := in.Sets
	if len(sets) == 0 {
		return fail(exitcode.Usage, "log: no log in %s", strings.Join(fs.Args(), ", "))
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
	p := &logPrinter{json: *asJSON, sessions: *sessions || !*asJSON, tool: *tool, since: after,
		needHeader: true}
	if !p.json {
		p.tw = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	}
	code := exitcode.OK
	for _, set := range sets {
		p.newBook()
		var err error
		if *follow {
			err = p.follow(set.Base)
		} else {
			err = p.set(set)
		}
		if err != nil {
			code = fail(exitcode.Usage, "log: %v", err)
		}
		p.endOfSet()
	}
	p.flushOpen()
	if p.tw != nil {
		p.tw.Flush()
		if p.passThrough {
			fmt.Println("\nPOLICY pass-through: no --policy was given, so every call was forwarded unjudged.")
		}
	}
	return code
}

// callRow is one tools/call: its intent and, once seen, its outcome.
type callRow struct {
	Type      string    `json:"type"` // "call"
	TS        time.Time `json:"ts"`
	SID       string    `json:"sid"`
	Seq       uint64    `json:"seq"`
	Call      string    `json:"call"`
	Tool      *string   `json:"tool"`
	Batch     string    `json:"batch,omitempty"`
	Malformed string    `json:"malformed,omitempty"`
	Verdict   string    `json:"verdict"`
	Rule      string    `json:"rule,omitempty"`
	Status    string    `json:"status"` // "in flight" until the outcome is seen
	Reason    string    `json:"reason,omitempty"`
	LatencyNS *int64    `json:"latency_ns"`

	// An abbreviated id or tool name (journal.MaxValueBytes): Call or Tool
	// shows its prefix and length, these its digest.
	CallSHA256 string `json:"call_sha256,omitempty"`
	ToolSHA256 string `json:"tool_sha256,omitempty"`

	done bool
}

// sessionRow is a line about a session: its start, its end, or that it
// has no end. JSON is what --json --sessions prints, Text the table's line.
type sessionRow struct {
	JSON any
	Text string
	TS   time.Time // zero: shown whatever --since says
}

// logSessionJSON is a session object of --json --sessions. Type says which
// fields it has: session_start the command, policy and confinement;
// session_end how it ended (reason, the child's exit code or signal,
// wrap's exit status, seccomp_killed, counts); session_open, a session
// with no session_end at the end of what was read, only a note.
type logSessionJSON struct {
	Type string     `json:"type"`
	TS   *time.Time `json:"ts,omitempty"`
	SID  string     `json:"sid"`
	Seq  *uint64    `json:"seq,omitempty"`

	Argv      []string `json:"argv,omitempty"`
	PolicySet string   `json:"policy_set,omitempty"` // "pass-through": no --policy, every call forwarded
	Confine   *bool    `json:"confine,omitempty"`

	Reason        string      `json:"reason,omitempty"`
	Detail        string      `json:"detail,omitempty"`
	ExitCode      *int        `json:"exit_code,omitempty"`
	Signal        string      `json:"signal,omitempty"`
	Exit          *int        `json:"exit,omitempty"` // wrap's exit status
	SeccompKilled *bool       `json:"seccomp_killed,omitempty"`
	Counts        *countsJSON `json:"counts,omitempty"`

	Note string `json:"note,omitempty"`
}

// countsJSON is session_end's counts, under the record's own names.
type countsJSON struct {
	FramesIn   uint64 `json:"frames_in"`
	FramesOut  uint64 `json:"frames_out"`
	Intents    uint64 `json:"intents"`
	Outcomes   uint64 `json:"outcomes"`
	Unanswered uint64 `json:"unanswered"`
	Refused    uint64 `json:"refused"`
	Anomalies  uint64 `json:"anomalies"`
}

// logItem is one line to print, in the order of the records: a call or a
// session line.
type logItem struct {
	call *callRow
	sess *sessionRow
}

func (it logItem) done() bool { return it.call == nil || it.call.done }

type logPrinter struct {
	json     bool
	sessions bool // print session lines (always in the table; --sessions with --json)
	tool     string
	since    time.Time
	tw       *tabwriter.Writer
	book     *calls.Book[struct{}, *callRow] // the sessions and calls of the log being read
	order    []logItem                       // lines not yet printed, in the order of their records
	dec      record.Decoder
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
	for _, name := range files {
		rc, err := segment.Open(name, bar.add)
		if err != nil {
			return err
		}
		err = p.read(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// read prints the calls in r up to its end; a torn last line is not read.
func (p *logPrinter) read(r io.Reader) error {
	lr := segment.NewLineReader(r)
	for {
		line, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if skipped(err) {
			continue
		}
		if err != nil {
			return err
		}
		p.line(line)
	}
}

// follow prints the calls of the log whose live file is base, then keeps
// printing them as it grows, across rotations (segment.Follow).
func (p *logPrinter) follow(base string) error {
	return segment.Follow(context.Background(), base, segment.FollowOptions{
		Idle: func() {
			if p.tw != nil {
				p.tw.Flush()
			}
		},
		Skipped: func(err error) { skipped(err) },
	}, func(rec *record.Record) error {
		p.record(rec, true)
		return nil
	})
}

// skipped reports on stderr a line too long to be a record, and whether
// err is one: no record of the journal's, so not shown (verify judges it).
func skipped(err error) bool {
	var long *segment.LongLineError
	if !errors.As(err, &long) {
		return false
	}
	fmt.Fprintf(os.Stderr, "aegis log: a line longer than any record (%d bytes; at most %d): skipped\n", long.N, record.MaxLine)
	return true
}

// line prints the record of a line read (without its '\n'), if it
// decodes: verify judges lines; log shows what it can read.
func (p *logPrinter) line(line []byte) {
	if rec, err := p.dec.Decode(line); err == nil {
		p.record(rec, false)
	}
}

func (p *logPrinter) record(r *record.Record, follow bool) {
	var row *callRow
	if b, ok := r.Body.(*record.Intent); ok {
		row = intentRow(r, b)
	}
	_, answered := p.book.Add(r, row)
	switch b := r.Body.(type) {
	case *record.SessionStart:
		p.order = append(p.order, logItem{sess: startRow(r, b)})
	case *record.SessionEnd:
		p.order = append(p.order, logItem{sess: endRow(r, b)})
	case *record.Intent:
		// Shown even outside its session: log shows what it can read.
		p.order = append(p.order, logItem{call: row})
	case *record.Outcome:
		if answered == nil {
			return
		}
		row := answered.Data
		row.Status, row.Reason, row.done = b.Status, b.Reason, true
		// A timed-out call has no response but has its latency: the time
		// until aegis answered it.
		if b.HasResponse || b.Status == record.StatusTimeout {
			l := b.LatencyNS
			row.LatencyNS = &l
		}
	}
	p.flushDone(follow)
}

// intentRow is the line of an intent's call, in flight until its outcome
// is read; a notification's is done.
func intentRow(r *record.Record, b *record.Intent) *callRow {
	row := &callRow{Type: "call", TS: r.TS, SID: hex.EncodeToString(r.SID[:]), Seq: r.Seq, Call: callString(b.Call), Malformed: b.Malformed,
		Verdict: b.Verdict, Rule: abbreviated(b.Rule, b.RuleLen), Status: "in flight"}
	if b.Call.Abbreviated() {
		row.CallSHA256 = b.Call.Sum.String()
	}
	if b.HasTool {
		t := abbreviated(string(b.Tool), b.ToolLen)
		row.Tool = &t
		if b.ToolLen > 0 {
			row.ToolSHA256 = b.ToolSum.String()
		}
	}
	if b.BatchSize > 0 {
		row.Batch = fmt.Sprintf("%d/%d", b.BatchIndex+1, b.BatchSize)
	}
	if b.Call.Type == record.IDNull {
		row.Status, row.done = "notification", true
	}
	return row
}

// newBook starts the model of one log's sessions and calls (package
// calls). A stdio session_start ends the sessions live before it
// (Exclusive: a stdio wrap holds its log alone), as a recovery does: they
// never got their end. Any log read may lack its first segments
// (Partial): a call whose session began there is still shown.
func (p *logPrinter) newBook() {
	p.book = calls.New[struct{}, *callRow](calls.Options{Exclusive: true, Partial: true})
	p.book.OnClose = p.closed
}

// closed notes that a session whose start was read is over without its
// session_end, and why, and ends its calls still in flight as "no
// outcome": a session's outcomes come before its end, so none will
// follow.
func (p *logPrinter) closed(s *calls.Session[struct{}, *callRow], how calls.How) {
	if how == calls.Ended {
		return
	}
	s.Each(func(c *calls.Call[*callRow]) { c.Data.Status, c.Data.done = "no outcome", true })
	if !s.Started {
		return
	}
	why := "aegis stopped without ending it (it was killed, or the machine stopped); the next session follows"
	if how == calls.CutEnd {
		why = "it is still running, or aegis was killed, or the log was cut"
	}
	sid := hex.EncodeToString(s.SID[:])
	p.order = append(p.order, logItem{sess: &sessionRow{
		JSON: &logSessionJSON{Type: "session_open", SID: sid, Note: "no session_end: " + why},
		Text: fmt.Sprintf("session %s has no session_end: %s", sid[:8], why),
	}})
}

// endOfSet ends the reading of one log: a session still open there has no
// session_end yet.
func (p *logPrinter) endOfSet() {
	p.book.Close()
	p.flushDone(false)
}

// flushDone prints the lines at the front of the order that are done (a
// call with its outcome, any session line), so that the output keeps the
// order of the records. When following, a call is printed as soon as it
// is done.
func (p *logPrinter) flushDone(follow bool) {
	if follow {
		kept := p.order[:0]
		for _, it := range p.order {
			if it.done() {
				p.emit(it)
			} else {
				kept = append(kept, it)
			}
		}
		clear(p.order[len(kept):])
		p.order = kept
		return
	}
	for len(p.order) > 0 && p.order[0].done() {
		p.emit(p.order[0])
		p.order[0] = logItem{}
		p.order = p.order[1:]
	}
}

// flushOpen prints the lines still waiting at the end: calls without an
// outcome.
func (p *logPrinter) flushOpen() {
	for _, it := range p.order {
		if !it.done() {
			it.call.Status = "no outcome"
		}
		p.emit(it)
	}
	p.order = nil
}

func (p *logPrinter) emit(it logItem) {
	if it.sess != nil {
		p.emitSession(it.sess)
		return
	}
	row := it.call
	if p.tool != "" {
		if row.Tool == nil {
			return
		}
		if ok, _ := path.Match(p.tool, *row.Tool); !ok {
			return
		}
	}
	if !p.since.IsZero() && row.TS.Before(p.since) {
		return
	}
	if p.json {
		json.NewEncoder(os.Stdout).Encode(row)
		return
	}
	if p.needHeader {
		fmt.Fprintln(p.tw, "TIME\tSESSION\tCALL\tTOOL\tSTATUS\tLATENCY\tPOLICY")
		p.needHeader = false
	}
	tool := "(none)"
	if row.Tool != nil {
		tool = *row.Tool
	}
	if row.Batch != "" {
		tool += " [batch " + row.Batch + "]"
	}
	if row.Malformed != "" {
		tool += " [malformed: " + row.Malformed + "]"
	}
	status := row.Status
	if row.Reason != "" {
		status += " (" + row.Reason + ")"
	}
	latency := "-"
	if row.LatencyNS != nil {
		latency = fmtLatency(time.Duration(*row.LatencyNS))
	}
	verdict := row.Verdict
	if row.Rule != "" {
		verdict += " (" + row.Rule + ")"
	}
	if row.Verdict == record.VerdictPassThrough {
		p.passThrough = true
	}
	fmt.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", fmtTime(row.TS),
		row.SID[:8], row.Call, tool, status, latency, verdict)
}

// emitSession prints a session line. In the table it holds no tab, so it
// takes no part in the columns' widths, and the calls after it get the
// column header again.
func (p *logPrinter) emitSession(s *sessionRow) {
	if !p.sessions || !s.TS.IsZero() && !p.since.IsZero() && s.TS.Before(p.since) {
		return
	}
	if p.json {
		json.NewEncoder(os.Stdout).Encode(s.JSON)
		return
	}
	fmt.Fprintln(p.tw, s.Text)
	p.needHeader = true
}

// startRow is the line of a session_start: when, the child's command,
// the policy and the confinement.
func startRow(r *record.Record, b *record.SessionStart) *sessionRow {
	sid := hex.EncodeToString(r.SID[:])
	ts, seq, confined := r.TS, r.Seq, b.Confine != nil
	policy := "policy " + b.PolicySet + " (--policy: each call judged by its rules)"
	if b.PolicySet == record.PassThroughSet {
		policy = "policy pass-through (no --policy: every call forwarded)"
	}
	confinement := "confinement off"
	if confined {
		confinement = "confinement on (--confine)"
	}
	if b.Transport != "" { // wrap --listen: who called
		confinement += fmt.Sprintf("; over %s, peer %s, principal %s", b.Transport, b.Peer, b.Principal)
	}
	return &sessionRow{
		JSON: &logSessionJSON{Type: "session_start", TS: &ts, SID: sid, Seq: &seq, Argv: b.Argv, PolicySet: b.PolicySet, Confine: &confined},
		Text: fmt.Sprintf("session %s started %s: child %s; %s; %s", sid[:8], fmtTime(ts), shortArgv(b.Argv), policy, confinement),
		TS:   ts,
	}
}

// endRow is the line of a session_end: when, and how (endSummary).
func endRow(r *record.Record, b *record.SessionEnd) *sessionRow {
	sid := hex.EncodeToString(r.SID[:])
	ts, seq, killed := r.TS, r.Seq, b.SeccompKilled
	exit := wrapExit(b)
	c := b.Counts
	j := &logSessionJSON{Type: "session_end", TS: &ts, SID: sid, Seq: &seq, Reason: b.Reason, Detail: b.Detail,
		Signal: b.ExitSignal, Exit: &exit, SeccompKilled: &killed,
		Counts: &countsJSON{c.FramesIn, c.FramesOut, c.Intents, c.Outcomes, c.Unanswered, c.Refused, c.Anomalies}}
	if b.ExitSignal == "" {
		code := b.ExitCode
		j.ExitCode = &code
	}
	return &sessionRow{
		JSON: j,
		Text: fmt.Sprintf("session %s ended %s: %s", sid[:8], fmtTime(ts), endSummary(b)),
		TS:   ts,
	}
}

// wrapExit is the exit status wrap gave for a session that ended so
// (relay's exitStatus): a failure's own, else the child's, 128+N for
// signal N.
func wrapExit(e *record.SessionEnd) int {
	switch {
	case e.Reason == record.EndFrameTooLarge:
		return exitcode.FrameTooLarge
	case e.Reason == record.EndAuditIOError:
		return exitcode.AuditIO
	case e.ExitSignal != "":
		return 128 + int(unix.SignalNum(e.ExitSignal))
	}
	return e.ExitCode
}

// shortArgv is the child's command for a line: each argument Go-quoted if
// it holds a space, a quote or a control character, the whole cut at 80
// characters.
func shortArgv(argv []string) string {
	const max = 80
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r == '\\' || r == 0x7f }) {
			q[i] = strconv.Quote(a)
		}
	}
	s := []rune(strings.Join(q, " "))
	if len(s) > max {
		return string(s[:max-1]) + "…"
	}
	return string(s)
}

func fmtTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000") }

func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func callString(c record.Call) string {
	switch c.Type {
	case record.IDNumber:
		return abbreviated(string(c.Text), c.Len)
	case record.IDString:
		if c.Abbreviated() {
			b, _ := json.Marshal(string(c.Text) + "…")
			return fmt.Sprintf("%s (%d bytes)", b, c.Len)
		}
		b, _ := json.Marshal(string(c.Text))
		return string(b)
	}
	return "null"
}

// abbreviated shows a value the record holds the prefix of (n > 0: its
// whole length) as the prefix, an ellipsis and the length.
func abbreviated(prefix string, n int) string {
	if n <= 0 {
		return prefix
	}
	return fmt.Sprintf("%s… (%d bytes)", prefix, n)
}
