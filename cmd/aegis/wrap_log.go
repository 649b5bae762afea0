package main

import (
	"flag"

	"github.com/aegisrelay/aegis/internal/serve"
	"github.com/aegisrelay/aegis/journal"
)

// addLogFlags adds wrap's flags for logs that run for months (serve.Log):
// rotation, compression of sealed segments, a head file kept up to date,
// and Merkle checkpoints (package tlog): where they go and how often.
func addLogFlags(fs *flag.FlagSet) *serve.Log {
	l := &serve.Log{}
	fs.StringVar(&l.MaxSize, "audit-max-size", serve.DefaultMaxSize,
		"seal the audit file as FILE.<firstseq>-<lastseq>.jsonl once it holds `SIZE` bytes (KiB, MiB, GiB suffixes) and continue in a new FILE; 0: never rotate")
	fs.BoolVar(&l.Compress, "compress", false,
		"zstd-compress sealed segments in the background (FILE.<first>-<last>.jsonl.zst); the plain copy is removed once the compressed one is synced and re-read")
	fs.StringVar(&l.HeadFile, "head-file", "",
		"keep a signed head of the audit log in `FILE`, replaced atomically every second while records are written, to ship off the machine (check with verify --head-file)")
	fs.StringVar(&l.CheckpointFile, "checkpoint-file", "",
		"keep a signed Merkle checkpoint of the audit log in `FILE` (replaced atomically; every one also appended to FILE.history), for aegis prove and verify --checkpoint; default with --head-file: HEADFILE.checkpoint, else none")
	fs.IntVar(&l.CheckpointEvery, "checkpoint-every", 0,
		"also write a checkpoint once `N` records have been written since the last; 0: by --checkpoint-interval alone")
	fs.DurationVar(&l.CheckpointInterval, "checkpoint-interval", journal.DefaultCheckpointInterval,
		"write a checkpoint every `D` while records are written (and at the end of the session, and with every head file update); 0: only then")
	return l
}
