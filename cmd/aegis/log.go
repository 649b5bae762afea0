package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/logview"
	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// logSynopsis is log's synopsis; help/log.txt is the rest of its --help.
const logSynopsis = "aegis log [--json [--sessions]] [-f] [--expand] [--tool T] [--since D] [FILE | NAME]…"

//go:embed help/log.txt
var logExamples string

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
	opts, err := logview.Filter(*tool, *since, time.Now())
	if err != nil {
		return fail(exitcode.Usage, "log: %v", err)
	}
	if *sessions && !*asJSON {
		return fail(exitcode.Usage, "log: --sessions is for --json; the table always shows sessions")
	}
	p := logview.NewPrinter(os.Stdout, *asJSON, *expand)
	opts.Sessions, opts.Follow = *sessions || !*asJSON, *follow
	view := logview.New(opts, p.Show)
	code = exitcode.OK
	for _, set := range sets {
		if len(sets) > 1 {
			p.Heading(set.Base)
		}
		if *follow {
			err = view.Follow(context.Background(), set.Base, p.Flush, longLine)
		} else {
			err = readLog(view, set, *asJSON)
		}
		if err != nil {
			code = fail(exitcode.Usage, "log: %v", err)
		}
		view.EndLog()
	}
	p.Close()
	return code
}

// readLog passes the records of one log to v, its files read in seq
// order, with a progress bar on a terminal (not when it would be drawn
// over --json on the same terminal).
func readLog(v *logview.View, s *segment.Set, asJSON bool) error {
	files, notes, err := s.OrderedFiles()
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(os.Stderr, "aegis: log: note: %s\n", n)
	}
	bar := &logview.Progress{}
	if !asJSON || !term.IsTerminal(int(os.Stdout.Fd())) {
		bar = logview.NewProgress(os.Stderr, "log "+filepath.Base(s.Base), files, logview.ProgressMin)
	}
	defer bar.Done()
	return v.ReadFiles(files, bar.Add, longLine)
}

// longLine reports on stderr a line too long to be a record: no record
// of the journal's, so not shown (verify judges it).
func longLine(n int64) {
	fmt.Fprintf(os.Stderr, "aegis log: a line longer than any record (%d bytes; at most %d): skipped\n", n, record.MaxLine)
}

// listServers prints the servers that have default logs in the state
// folder, to choose from: a table, or one JSON object each.
func listServers(asJSON bool) int {
	servers, dir, code, ok := stateServers("log")
	if !ok {
		return code
	}
	logview.WriteServers(os.Stdout, dir, servers, asJSON, func(err error) { code = fail(exitcode.Usage, "log: %v", err) })
	return code
}

// stateServers is the servers with default logs in the state folder
// (userfiles.Servers), and the folder, which cmd (log, verify) reads
// when given no FILE; there being none is a usage error.
func stateServers(cmd string) ([]userfiles.Server, string, int, bool) {
	servers, dir, err := userfiles.Servers()
	if err != nil {
		return nil, "", fail(exitcode.Usage, "%s: no FILE given, and %v", cmd, err), false
	}
	if len(servers) == 0 {
		return nil, "", fail(exitcode.Usage, "%s: no FILE given, and no log in %s yet: wrap records there when no --audit names a file (see 'aegis %s --help')", cmd, dir, cmd), false
	}
	return servers, dir, exitcode.OK, true
}

// collectLogs is the logs the arguments of cmd (log, verify) stand for
// (userfiles.FindLogs); it prints the notes, and says none if there is
// none (exit 2).
func collectLogs(cmd, none string, args []string) ([]*segment.Set, int, bool) {
	l, err := userfiles.FindLogs(args)
	for _, n := range l.Notes {
		fmt.Fprintf(os.Stderr, "aegis: %s: note: %s\n", cmd, n)
	}
	if err != nil {
		return nil, fail(exitcode.Usage, "%s: %v", cmd, err), false
	}
	if len(l.Sets) == 0 {
		return nil, fail(exitcode.Usage, "%s: %s in %s", cmd, none, strings.Join(l.Args, ", ")), false
	}
	return l.Sets, 0, true
}
