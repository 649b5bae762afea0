package serve

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal"
)

// DefaultMaxSize keeps a single file small enough for tail, jq and an
// editor, and big enough that a busy server rotates every few minutes,
// not every few seconds.
const DefaultMaxSize = "64MiB"

// CheckpointExt names the default checkpoint file beside a head file.
const CheckpointExt = ".checkpoint"

// MaxLogsInUse bounds the default logs one server name may have in use
// at once: NAME.jsonl, NAME-2.jsonl, … NAME-16.jsonl.
const MaxLogsInUse = 16

// Log is what wrap's flags say of an audit log that runs for months:
// rotation (--audit-max-size, "0": never), compression of sealed segments
// (--compress), a head file kept up to date (--head-file), and Merkle
// checkpoints (--checkpoint-file, default HeadFile+CheckpointExt with a
// head file; --checkpoint-every; --checkpoint-interval, 0 or less: only at
// the end of the session and with every head file update).
type Log struct {
	MaxSize            string
	Compress           bool
	HeadFile           string
	CheckpointFile     string
	CheckpointEvery    int
	CheckpointInterval time.Duration
}

// Options adds l's settings for the audit log at audit to o, or says
// what is wrong with them, naming the flag at fault.
func (l Log) Options(audit string, o journal.Options) (journal.Options, error) {
	if s := strings.TrimSpace(l.MaxSize); s != "0" {
		n, err := journal.ParseSize(s)
		if err != nil {
			return o, fmt.Errorf("--audit-max-size: %v", err)
		}
		if n < 4096 {
			return o, fmt.Errorf("--audit-max-size %s: below 4KiB a segment would hold a handful of records", s)
		}
		o.MaxSize = int64(n)
		// Each sealed segment's index entry, written as it is sealed, makes
		// the recording user's first prove as quick as a later one
		// (journal/tlog/doc.go, "Index"). Without a cache folder, none.
		o.Index = userfiles.TlogIndex()
	}
	o.Compress = l.Compress
	if l.HeadFile != "" {
		if journal.Overlaps(audit, l.HeadFile) {
			return o, fmt.Errorf("--head-file %s: not the audit file or a name of its segments", l.HeadFile)
		}
		o.HeadFile = l.HeadFile
	}
	file := l.CheckpointFile
	if file == "" && o.HeadFile != "" {
		file = o.HeadFile + CheckpointExt
	}
	if file == "" {
		if l.CheckpointEvery != 0 {
			return o, errors.New("--checkpoint-every: no checkpoint file (--checkpoint-file, or --head-file)")
		}
		return o, nil
	}
	if journal.Overlaps(audit, file) {
		return o, fmt.Errorf("--checkpoint-file %s: not the audit file or a name of its segments", file)
	}
	if o.HeadFile != "" && journal.HeadClash(o.HeadFile, file) {
		return o, fmt.Errorf("--checkpoint-file %s: not the head file", file)
	}
	if l.CheckpointEvery < 0 {
		return o, fmt.Errorf("--checkpoint-every %d: a count of records, 0 or more", l.CheckpointEvery)
	}
	o.Checkpoint = journal.CheckpointOptions{File: file, Every: l.CheckpointEvery, Interval: l.CheckpointInterval}
	if l.CheckpointInterval <= 0 {
		o.Checkpoint.Interval = -1
	}
	return o, nil
}

// OpenLog opens the audit log at path. The same server run twice at once
// (two clients, two sessions of one) finds its default log locked: with
// name, the server's name whose default log path is, the second records
// to NAME-2.jsonl (userfiles.InUseLogPath), and so on up to MaxLogsInUse,
// rather than fail to start, saying so through logf. It returns the path
// it opened, or the last it tried with the error.
func OpenLog(path, name string, o journal.Options, logf func(string, ...any)) (*journal.Journal, string, error) {
	j, err := journal.Open(path, o)
	for n := 2; name != "" && errors.Is(err, journal.ErrLocked) && n <= MaxLogsInUse; n++ {
		p, perr := userfiles.InUseLogPath(name, n)
		if perr != nil {
			break
		}
		logf("%s is in use by another aegis wrap; trying %s", path, p)
		path = p
		j, err = journal.Open(path, o)
	}
	return j, path, err
}
