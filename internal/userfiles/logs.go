package userfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aegisrelay/aegis/journal/segment"
)

// Logs is the logs the arguments of aegis log or verify stand for
// (FindLogs).
type Logs struct {
	// Sets are the logs, each with its sealed segments (segment.Collect).
	Sets []*segment.Set
	// Args are the arguments with every server's name resolved to its
	// logs, before globs are expanded: what a command names when they
	// hold no log.
	Args []string
	// Notes are for the user, in order: each log added for a server's
	// default log, then segment.Collect's notes.
	Notes []string
}

// FindLogs returns the logs args stand for. An argument that names no
// file and holds no path separator or glob is a server's name (NAME, or
// NAME.jsonl): its default logs in StateDir. A server's default log there
// (NAME.jsonl) stands for all its logs: the NAME-2.jsonl and on that wrap
// records to while NAME.jsonl is in use are added, each said in a note.
// An argument that names no file but holds a glob pattern (quoted, so
// that the shell left it alone, or too long for the shell) is expanded.
// Each log comes with its sealed segments (segment.Collect). The notes
// made before an error are returned with it.
func FindLogs(args []string) (Logs, error) {
	var l Logs
	var err error
	if l.Args, l.Notes, err = serverArgs(args); err != nil {
		return l, err
	}
	paths, err := expandArgs(l.Args)
	if err != nil {
		return l, err
	}
	in, err := segment.Collect(paths, true)
	if err != nil {
		return l, err
	}
	l.Sets, l.Notes = in.Sets, append(l.Notes, in.Notes...)
	return l, nil
}

// FindLog returns the one log arg stands for, with its segments: a file,
// or the NAME of a server that has one log in StateDir (aegis prove's
// LOG).
func FindLog(arg string) (*segment.Set, error) {
	paths := []string{arg}
	if _, err := os.Stat(arg); err != nil && !strings.ContainsAny(arg, "/"+string(filepath.Separator)) {
		p, _, err := serverArgs(paths)
		if err != nil {
			return nil, err
		}
		if len(p) > 1 {
			return nil, fmt.Errorf("%s has %d logs (%s): name one", arg, len(p), strings.Join(p, ", "))
		}
		paths = p
	}
	in, err := segment.Collect(paths, true)
	if err != nil {
		return nil, err
	}
	if len(in.Sets) != 1 {
		return nil, fmt.Errorf("%s holds %d logs; name one", arg, len(in.Sets))
	}
	return in.Sets[0], nil
}

// serverArgs resolves the arguments that stand for a server's logs
// (FindLogs); other arguments are passed on as they are.
func serverArgs(args []string) (out, notes []string, err error) {
	for _, a := range args {
		if _, err := os.Stat(a); err == nil {
			others, n := otherLogs(a)
			out, notes = append(append(out, a), others...), append(notes, n...)
			continue
		}
		if a == "" || strings.ContainsAny(a, "*?[/"+string(filepath.Separator)) {
			out = append(out, a)
			continue
		}
		s, dir, err := ServerLogs(strings.TrimSuffix(a, logExt))
		if err != nil {
			out = append(out, a) // its own error follows
			continue
		}
		if len(s.Logs) == 0 {
			return out, notes, fmt.Errorf("%s: no such file, and no server of that name has a log in %s ('aegis log' lists those that do)", a, dir)
		}
		out = append(out, s.Logs...)
	}
	return out, notes, nil
}

// otherLogs returns the logs a server's default log at path stands for
// besides itself, with a note for each; none for any other file.
func otherLogs(path string) (logs, notes []string) {
	abs, err := filepath.Abs(path)
	name, ok := strings.CutSuffix(filepath.Base(abs), logExt)
	if err != nil || !ok {
		return nil, nil
	}
	s, dir, err := ServerLogs(name)
	if err != nil || filepath.Dir(abs) != filepath.Clean(dir) || len(s.Logs) < 2 || s.Logs[0] != abs {
		return nil, nil
	}
	for _, l := range s.Logs[1:] {
		notes = append(notes, fmt.Sprintf("also reading %s, %s's log while %s was in use", l, name, filepath.Base(abs)))
	}
	return s.Logs[1:], notes
}

// expandArgs expands the arguments that name no file but hold a glob
// pattern.
func expandArgs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no file matches", a)
		}
		out = append(out, m...)
	}
	return out, nil
}
