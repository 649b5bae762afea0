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

	"golang.org/x/term"

	"github.com/aegisrelay/aegis/exitcode"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

func runLog(args []string) int {
	fs := newFlags("log", "aegis log [--json] [-f] [--tool T] [--since D] FILE…", `  aegis log audit.jsonl                     every call: time, tool, status, latency, policy verdict
  aegis log --tool 'fs_*' --since 1h audit.jsonl
  aegis log --json audit.jsonl | jq .       one JSON object per call
  aegis log -f audit.jsonl                  follow a live log, across rotations
  aegis log 'audit.jsonl.*.jsonl.zst'       sealed segments, read in seq order

A FILE stands for its whole log: FILE and every sealed segment
FILE.<first>-<last>.jsonl[.zst] beside it, read in seq order (compressed
ones decompressed as they are read). log shows what it can read; verify
judges it.
`)
	asJSON := fs.Bool("json", false, "print one JSON object per call")
	follow := fs.Bool("f", false, "follow: keep reading as the log grows")
	tool := fs.String("tool", "", "only calls of this tool (`NAME` or glob, e.g. 'fs_*')")
	since := fs.String("since", "", "only calls after `D`: a duration back from now (90m) or an RFC 3339 time")
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
	p := &logPrinter{json: *asJSON, tool: *tool, since: after, pending: map[string]*callRow{}}
	if !p.json {
		p.tw = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(p.tw, "TIME\tSESSION\tCALL\tTOOL\tSTATUS\tLATENCY\tPOLICY")
	}
	code := exitcode.OK
	for _, set := range sets {
		var err error
		if *follow {
			err = p.follow(set.Base)
		} else {
			err = p.set(set)
		}
		if err != nil {
			code = fail(exitcode.Usage, "log: %v", err)
		}
	}
	p.flushOpen()
	if p.tw != nil {
		p.tw.Flush()
	}
	return code
}

// callRow is one tools/call: its intent and, once seen, its outcome.
type callRow struct {
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

type logPrinter struct {
	json    bool
	tool    string
	since   time.Time
	tw      *tabwriter.Writer
	pending map[string]*callRow // sid/seq of intents waiting for outcomes
	order   []*callRow          // calls not yet printed, in the order they were made
	dec     record.Decoder
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
	sid := hex.EncodeToString(r.SID[:])
	switch b := r.Body.(type) {
	case *record.Intent:
		row := &callRow{TS: r.TS, SID: sid, Seq: r.Seq, Call: callString(b.Call), Malformed: b.Malformed,
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
		} else {
			p.pending[sid+"/"+strconv.FormatUint(r.Seq, 10)] = row
		}
		p.order = append(p.order, row)
	case *record.Outcome:
		k := sid + "/" + strconv.FormatUint(b.Intent, 10)
		row := p.pending[k]
		if row == nil {
			return
		}
		delete(p.pending, k)
		row.Status, row.Reason, row.done = b.Status, b.Reason, true
		if b.HasResponse {
			l := b.LatencyNS
			row.LatencyNS = &l
		}
	default:
		return
	}
	p.flushDone(follow)
}

// flushDone prints the calls at the front of the order that have their
// outcome, so that the table keeps the order the calls were made in. When
// following, a call is printed as soon as it is done.
func (p *logPrinter) flushDone(follow bool) {
	if follow {
		kept := p.order[:0]
		for _, row := range p.order {
			if row.done {
				p.emit(row)
			} else {
				kept = append(kept, row)
			}
		}
		clear(p.order[len(kept):])
		p.order = kept
		return
	}
	for len(p.order) > 0 && p.order[0].done {
		p.emit(p.order[0])
		p.order[0] = nil
		p.order = p.order[1:]
	}
}

// flushOpen prints the calls still without an outcome at the end.
func (p *logPrinter) flushOpen() {
	for _, row := range p.order {
		if !row.done {
			row.Status = "no outcome"
		}
		p.emit(row)
	}
	p.order = nil
}

func (p *logPrinter) emit(row *callRow) {
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
	fmt.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.TS.Local().Format("2006-01-02 15:04:05.000"),
		row.SID[:8], row.Call, tool, status, latency, verdict)
}

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
