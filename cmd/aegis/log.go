package main

import (
	"bufio"
	"bytes"
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
		return fail(exitUsage, "log: no FILE given (see 'aegis log --help')")
	}
	paths, err := expandArgs(fs.Args())
	if err != nil {
		return fail(exitUsage, "log: %v", err)
	}
	in, err := segment.Collect(paths, true)
	if err != nil {
		return fail(exitUsage, "log: %v", err)
	}
	for _, n := range in.Notes {
		fmt.Fprintf(os.Stderr, "aegis: log: note: %s\n", n)
	}
	sets := in.Sets
	if len(sets) == 0 {
		return fail(exitUsage, "log: no log in %s", strings.Join(fs.Args(), ", "))
	}
	if *follow && len(sets) != 1 {
		return fail(exitUsage, "log: -f follows exactly one log (%d given)", len(sets))
	}
	if *tool != "" {
		if _, err := path.Match(*tool, ""); err != nil {
			return fail(exitUsage, "log: --tool %q: %v", *tool, err)
		}
	}
	var after time.Time
	if *since != "" {
		if d, err := time.ParseDuration(*since); err == nil {
			after = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339Nano, *since); err == nil {
			after = t
		} else {
			return fail(exitUsage, "log: --since %q is neither a duration (90m) nor an RFC 3339 time", *since)
		}
	}
	p := &logPrinter{json: *asJSON, tool: *tool, since: after, pending: map[string]*callRow{}}
	if !p.json {
		p.tw = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(p.tw, "TIME\tSESSION\tCALL\tTOOL\tSTATUS\tLATENCY\tPOLICY")
	}
	code := exitOK
	for _, set := range sets {
		var err error
		if *follow {
			err = p.follow(set.Base)
		} else {
			err = p.set(set)
		}
		if err != nil {
			code = fail(exitUsage, "log: %v", err)
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
	seen    uint64 // seq of the last record read, when following
	seenAny bool
	gapAt   time.Time // when following met a gap before the next record
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
		rc, err := segment.OpenSegment(name, bar.add)
		if err != nil {
			return err
		}
		err = p.read(rc, false)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// read prints the calls in r up to its end. When following, records at or
// before the last one seen are skipped: a file may be read again after a
// rotation renamed it.
func (p *logPrinter) read(r io.Reader, follow bool) error {
	ls := lineReader{br: bufio.NewReaderSize(r, 64<<10)}
	for {
		line, err := ls.next()
		if err == io.EOF {
			return nil // and a torn last line, or one being written, is not read
		}
		if skipped(err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := p.line(line, follow); err != nil {
			return err
		}
	}
}

// line prints the record of a line read ('\n' included), if it decodes:
// verify judges lines; log shows what it can read.
func (p *logPrinter) line(line []byte, follow bool) error {
	rec, err := p.dec.Decode(line[:len(line)-1])
	switch {
	case err != nil:
		return nil
	case follow:
		return p.followed(rec)
	}
	p.record(rec, false)
	return nil
}

// lineReader reads whole lines from a reader that may still grow: a line
// not ended at io.EOF is kept, and the next reads complete it. A line
// longer than any record (journal.MaxLine) is not kept but skipped.
type lineReader struct {
	br      *bufio.Reader
	partial []byte
	long    int64 // > 0: the bytes read of a line too long to keep
}

// errLongLine is next's answer to a line longer than any record: no
// record of the journal's, so not shown (verify judges it).
var errLongLine = errors.New("a line longer than any record")

// skipped reports a skipped line on stderr, and whether err is one.
func skipped(err error) bool {
	if !errors.Is(err, errLongLine) {
		return false
	}
	fmt.Fprintf(os.Stderr, "aegis log: %v\n", err)
	return true
}

// next returns the next line, '\n' included, valid until the next call;
// or io.EOF (a partial line kept) or a read error; or errLongLine, once
// a line too long to be a record has been read past.
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.br.ReadSlice('\n')
		if l.long > 0 || len(l.partial)+len(line) > record.MaxLine+1 {
			l.long += int64(len(l.partial) + len(line))
			l.partial = nil
			if err == nil {
				n := l.long - 1
				l.long = 0
				return nil, fmt.Errorf("%w (%d bytes; at most %d): skipped", errLongLine, n, record.MaxLine)
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			continue
		}
		if err == nil {
			if l.partial != nil {
				line = append(l.partial, line...)
				l.partial = nil
			}
			return line, nil
		}
		l.partial = append(l.partial, line...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// rest returns the partial line kept and all that is left to read.
func (l *lineReader) rest() ([]byte, error) {
	rest, err := io.ReadAll(l.br)
	return append(l.partial, rest...), err
}

// follow prints the calls of the log at base, then keeps printing them as
// it grows, across rotations: when the live file is sealed (its name now
// points to a new file), what was written to it last is read, then the
// segments sealed since the last record seen, then the new live file.
//
// Segments are listed, then read in order; a segment that is gone by the
// time it is read (compressed meanwhile: the listing predates its .zst)
// makes it list them again, never skip it: once a later record is seen,
// an earlier one is never printed.
func (p *logPrinter) follow(base string) error {
	for {
		f, err := os.Open(base)
		if errors.Is(err, os.ErrNotExist) {
			f = nil // between the two renames of a rotation without RENAME_EXCHANGE
		} else if err != nil {
			return err
		}
		relist, err := p.segments(base)
		if err != nil || relist || f == nil {
			if f != nil {
				f.Close()
			}
			if err != nil {
				return err
			}
			time.Sleep(relistPoll)
			continue
		}
		err = p.tail(f, base)
		f.Close()
		if err != nil && err != errGap {
			return err
		}
		if err == errGap {
			time.Sleep(relistPoll)
		}
	}
}

// segments prints the calls of the other files of the log at base not
// printed yet, in order: sealed segments, and the spare, which holds the
// records of the live file a rotation swapped out until it seals them.
// relist is true if a file was removed before it could be read, or
// records are missing before the ones read (errGap).
func (p *logPrinter) segments(base string) (relist bool, err error) {
	sets, err := segment.Sets([]string{base}, true)
	if err == nil {
		var files []string
		files, _, err = sets[0].OrderedFiles()
		for _, name := range files {
			if name == base {
				continue
			}
			if s, ok := segment.ParseName(name); ok && p.seenAny && s.Last <= p.seen {
				continue
			}
			rc, oerr := segment.OpenSegment(name, nil)
			if oerr != nil {
				if errors.Is(oerr, os.ErrNotExist) {
					return true, nil
				}
				return false, oerr
			}
			err = p.read(rc, true)
			rc.Close()
			if err == errGap {
				return true, nil
			}
			if err != nil {
				return false, err
			}
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return true, nil // a file listed was gone when looked at
	}
	return false, err
}

// followPoll is how often log -f looks for more records; relistPoll how
// soon it lists the files again when a rotation is under way.
const (
	followPoll = 200 * time.Millisecond
	relistPoll = 10 * time.Millisecond
)

// tail prints the records of the open live file f as they are written,
// until base names another file (a rotation) and f is read to its end.
func (p *logPrinter) tail(f *os.File, base string) error {
	// Records are written over pre-zeroed space: read up to its NULs, and
	// from there again once more is written.
	ls := lineReader{br: bufio.NewReaderSize(segment.NewContentReader(f), 64<<10)}
	for {
		line, err := ls.next()
		if err == io.EOF {
			if p.tw != nil {
				p.tw.Flush()
			}
			// The journal writes nothing to a file after swapping it out:
			// once base names another file, one more read to the end of f
			// finds everything.
			if rotated(f, base) {
				rest, err := ls.rest()
				if err != nil {
					return err
				}
				return unlessGap(p.read(bytes.NewReader(rest), true))
			}
			time.Sleep(followPoll)
			continue
		}
		if skipped(err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := p.line(line, true); err != nil {
			return err
		}
	}
}

// unlessGap is err but errGap: after a rotation the next listing reads on.
func unlessGap(err error) error {
	if err == errGap {
		return nil
	}
	return err
}

// errGap: following, the next record read is not the one after the last
// printed (or, first, seq 0); the ones between are in a file not read yet.
var errGap = errors.New("log -f: records missing before the next one")

// gapWait is how long log -f waits for the records of a gap to appear
// before it prints past them (a log whose seqs jump: verify says why).
const gapWait = 2 * time.Second

// followed prints rec when following, unless it was printed already. A
// record after a gap is not printed but answered with errGap, for the
// caller to list the files again: a listing of the directory made while a
// rotation renames a file may show it under neither name (readdir(3)
// leaves that unspecified). Before the first record printed the one
// wanted is seq 0; a log whose first segments were removed waits gapWait.
func (p *logPrinter) followed(rec *record.Record) error {
	if p.seenAny && rec.Seq <= p.seen {
		return nil
	}
	gap := rec.Seq > 0
	if p.seenAny {
		gap = rec.Seq > p.seen+1
	}
	if gap {
		if p.gapAt.IsZero() {
			p.gapAt = time.Now()
		}
		if time.Since(p.gapAt) < gapWait {
			return errGap
		}
	}
	p.gapAt = time.Time{}
	p.seen, p.seenAny = rec.Seq, true
	p.record(rec, true)
	return nil
}

// rotated reports whether base no longer names the open file f.
func rotated(f *os.File, base string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(base)
	return err != nil || !os.SameFile(a, b)
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
