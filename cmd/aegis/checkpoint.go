package main

import (
	"crypto/ed25519"
	"flag"
	"fmt"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// checkpointExt names the default checkpoint file beside a head file.
const checkpointExt = ".checkpoint"

// checkpointFlags are wrap's flags for Merkle checkpoints (package tlog):
// where they go and how often.
type checkpointFlags struct {
	file     *string
	every    *int
	interval *time.Duration
}

func addCheckpointFlags(fs *flag.FlagSet) *checkpointFlags {
	return &checkpointFlags{
		file: fs.String("checkpoint-file", "",
			"keep a signed Merkle checkpoint of the audit log in `FILE` (replaced atomically; every one also appended to FILE.history), for aegis prove and verify --checkpoint; default with --head-file: HEADFILE.checkpoint, else none"),
		every: fs.Int("checkpoint-every", 0,
			"also write a checkpoint once `N` records have been written since the last; 0: by --checkpoint-interval alone"),
		interval: fs.Duration("checkpoint-interval", journal.DefaultCheckpointInterval,
			"write a checkpoint every `D` while records are written (and at the end of the session, and with every head file update); 0: only then"),
	}
}

// options adds the flags' settings to o (after the head file's, which
// the default follows), or says what is wrong with them.
func (cf *checkpointFlags) options(audit string, o journal.Options) (journal.Options, error) {
	file := *cf.file
	if file == "" && o.HeadFile != "" {
		file = o.HeadFile + checkpointExt
	}
	if file == "" {
		if *cf.every != 0 {
			return o, fmt.Errorf("--checkpoint-every: no checkpoint file (--checkpoint-file, or --head-file)")
		}
		return o, nil
	}
	if journal.Overlaps(audit, file) {
		return o, fmt.Errorf("--checkpoint-file %s: not the audit file or a name of its segments", file)
	}
	if o.HeadFile != "" && journal.HeadClash(o.HeadFile, file) {
		return o, fmt.Errorf("--checkpoint-file %s: not the head file", file)
	}
	if *cf.every < 0 {
		return o, fmt.Errorf("--checkpoint-every %d: a count of records, 0 or more", *cf.every)
	}
	o.Checkpoint = journal.CheckpointOptions{File: file, Every: *cf.every, Interval: *cf.interval}
	if *cf.interval <= 0 {
		o.Checkpoint.Interval = -1
	}
	return o, nil
}

// checkCheckpoints is verify --checkpoint FILE…: whether the log set is an
// append-only extension of every checkpoint in files (each one checkpoint
// or a history of them), signed by pub. It returns the exit status
// (exitcode.OK, Invalid, Incomplete when the only finding is a history's
// torn last checkpoint, or Usage for files that cannot be read) and one
// line per finding, for verify to print.
func checkCheckpoints(set *segment.Set, files []string, pub ed25519.PublicKey) (int, []string) {
	res, err := tlog.CheckFiles(set, files, pub)
	if res == nil {
		return exitcode.Usage, []string{fmt.Sprintf("checkpoints: %v", err)}
	}
	if err == nil {
		return exitcode.OK, []string{fmt.Sprintf("checkpoints: the log (%s, %d records) extends all %d", res.Origin, res.Records, res.Checkpoints)}
	}
	// A history's torn tail alone makes the check incomplete, as a log's
	// torn tail makes verify's.
	errs, torn := tlog.Findings(err)
	code := exitcode.Invalid
	var lines []string
	if torn {
		code = exitcode.Incomplete
		lines = append(lines, fmt.Sprintf("checkpoints: the log (%s, %d records) extends every whole checkpoint (%d)", res.Origin, res.Records, res.Checkpoints))
	}
	for _, e := range errs {
		lines = append(lines, "checkpoints: "+e.Error())
	}
	return code, lines
}

// addVerifyCheckpointFlag is verify's --checkpoint FILE (repeatable).
func addVerifyCheckpointFlag(fs *flag.FlagSet) *stringList {
	l := &stringList{}
	fs.Var(l, "checkpoint", "require the log to extend every checkpoint in `FILE` (wrap --checkpoint-file, or its FILE.history); needs --key (repeatable)")
	return l
}

// verifyCheckpoints prints checkCheckpoints's findings for the log set on
// stdout, each line prefixed with the log's name, and returns its exit
// status; with no files it does nothing and returns exitcode.OK.
func verifyCheckpoints(set *segment.Set, files []string, pub ed25519.PublicKey) int {
	if len(files) == 0 {
		return exitcode.OK
	}
	code, lines := checkCheckpoints(set, files, pub)
	for _, l := range lines {
		fmt.Printf("%s: %s\n", set.Base, l)
	}
	return code
}
