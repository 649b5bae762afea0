package main

import (
	"crypto/ed25519"
	"flag"
	"fmt"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// checkCheckpoints is verify --checkpoint FILE…: whether the log set is an
// append-only extension of every checkpoint in files (each one checkpoint
// or a history of them), signed by pub. It returns the exit status
// (exitcode.OK, Invalid, Incomplete when the only finding is a history's
// torn last checkpoint, or Usage for files that cannot be read) and one
// line per finding, for verify to print.
func checkCheckpoints(set *segment.Set, files []string, pub ed25519.PublicKey) (int, []string) {
	res, err := tlog.CheckFiles(set, files, pub)
	lines, torn := tlog.Report(res, err)
	switch {
	case res == nil:
		return exitcode.Usage, lines
	case err == nil:
		return exitcode.OK, lines
	case torn: // as a log's torn tail makes verify's check incomplete
		return exitcode.Incomplete, lines
	}
	return exitcode.Invalid, lines
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
