// Package segment reads the files of an audit log: it finds the files a
// log is made of (Collect, Sets, Siblings), names and parses sealed
// segments (Name, ParseName), opens a segment for reading whether plain or
// compressed (Open), reads lines (LineReader: the one line reader
// of the log's readers) and the content of a file written over
// pre-zeroed space (ContentReader), finds the end of a file (ReadTail,
// StreamTail), and follows a live log across rotations (Follow). It
// writes nothing.
//
// It reads through a vfs.FS: a Set keeps the one it was collected on
// (CollectFS, SetsFS; Collect and Sets use the operating system's) and
// opens its files with it (Set.Open, OpenFS); package journal passes its
// own (Options.FS), so that a test that fails a read (package errorfs)
// reaches the readers as it reaches the writer. A file that cannot be
// listed, stat'ed, opened or read is an error naming it, never a finding:
// a read error under the zstd decoder is returned as it is, not as
// ErrCorruptSegment. Follow reads through FollowOptions.FS.
//
// # Files of a log
//
// With rotation (Options.MaxSize) a log is a set of files: sealed segments
// and the live file FILE that records are appended to. A sealed segment is
// named for the seqs of its first and last records:
//
//	FILE.<first>-<last>.jsonl        e.g. audit.jsonl.0-181233.jsonl
//	FILE.<first>-<last>.jsonl.zst    the same bytes, zstd-compressed
//
// (decimal, no leading zeros). seq and prev run on across the files: the
// first record of each segment and of the live file chains to the last
// record of the segment before, exactly as if the files were one. A segment
// ends with a complete, signed line (it is sealed between two commit
// groups), so each file verifies on its own given the one before.
// Two more names may appear beside a log, never holding the only copy of a
// record but, for FILE.next, during a rotation:
//
//	FILE.next                the spare: an empty file made ahead of time,
//	                         which the next rotation swaps in as FILE
//	FILE.<f>-<l>.jsonl.zst.tmp  a compressed copy still being written
//
// # What a crash leaves
//
// A crash of aegis leaves every record whose write returned in the file (the
// page cache survives a process); a power loss can lose what was not yet
// synced, as the level allows. Either may leave a torn last line, and a
// crash may leave pre-zeroed space at the end of the file. A power loss
// during a write over pre-zeroed space may also keep a later page of the
// write and lose an earlier one, which then reads as NULs: a hole, maybe
// with lines after it. No record holds a NUL, and at most 1 MiB of content
// is ever unsynced over pre-zeroed space, so the first NUL in the last MiB
// is where the certain content ends; the torn bytes are everything from
// the start of its line, lines after the hole included.
// (MaxUnsynced bounds the unsynced content.) ReadTail finds a file's last
// intact line and its torn bytes; ContentReader reads a file up to its
// pre-zeroed tail, and reads on when a hole fills.
package segment
