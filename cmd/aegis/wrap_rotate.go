package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// defaultAuditMaxSize keeps a single file small enough for tail, jq and an
// editor, and big enough that a busy server rotates every few minutes, not
// every few seconds.
const defaultAuditMaxSize = "64MiB"

// rotateFlags are wrap's flags for logs that run for months: rotation,
// compression of sealed segments, and a head file kept up to date.
type rotateFlags struct {
	maxSize  *string
	compress *bool
	headFile *string
}

func addRotateFlags(fs *flag.FlagSet) *rotateFlags {
	return &rotateFlags{
		maxSize: fs.String("audit-max-size", defaultAuditMaxSize,
			"seal the audit file as FILE.<firstseq>-<lastseq>.jsonl once it holds `SIZE` bytes (KiB, MiB, GiB suffixes) and continue in a new FILE; 0: never rotate"),
		compress: fs.Bool("compress", false,
			"zstd-compress sealed segments in the background (FILE.<first>-<last>.jsonl.zst); the plain copy is removed once the compressed one is synced and re-read"),
		headFile: fs.String("head-file", "",
			"keep a signed head of the audit log in `FILE`, replaced atomically every second while records are written, to ship off the machine (check with verify --head-file)"),
	}
}

// options adds the flags' settings to o, or says what is wrong with them.
func (rf *rotateFlags) options(audit string, o journal.Options) (journal.Options, error) {
	if s := strings.TrimSpace(*rf.maxSize); s != "0" {
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
		o.Index = tlog.UserIndex()
	}
	o.Compress = *rf.compress
	if *rf.headFile != "" {
		if journal.Overlaps(audit, *rf.headFile) {
			return o, fmt.Errorf("--head-file %s: not the audit file or a name of its segments", *rf.headFile)
		}
		o.HeadFile = *rf.headFile
	}
	o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "aegis: "+format+"\n", args...) }
	return o, nil
}
