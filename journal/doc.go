// Package journal writes aegis's audit log: a hash-chained, Ed25519-signed,
// append-only file of JSON lines, in the format of package record. A
// Journal appends records with group commit (one write and at most one
// fdatasync for every record queued, every waiter released by it), signs
// the last record of every group, pre-zeroes the file ahead of its
// content, rotates it into sealed segments, compresses them, and keeps a
// signed head file. Package segment reads what it writes; package verify
// judges it.
//
// Signatures are RFC 8032 Ed25519, crypto/ed25519's: each nonce is derived
// from the key and the record it signs, never drawn or computed before the
// record is known, so that a copy of the process's memory (a virtual
// machine snapshot restored twice) cannot sign two records with one nonce
// and give the key away (sign.go).
//
// # Signatures
//
// A record is durable when its group is synced and attested when a
// signature covers it. The leader signs no group on its way: the
// attester, a goroutine, signs the group's last line while the group is
// written and synced, and the first record of a later group carries that
// signature (record's "att"; attest.go). A Wait waits for durability as
// its level says, never for a signature. A synced group's signature is
// carried by the next group (whose leader waits for it if it is not made
// yet: it has had the whole sync): a crash leaves at most that one group
// unattested. Groups no one syncs (none, interval, and intents at reply)
// are signed at most once per 10 ms (attestDelay) of their records' ts: a
// crash leaves unattested at most the records of two such spans and the
// group between them (those within attestDelay after the line whose
// signature was last carried, the group that carried it, those within
// attestDelay after that group), and the last group if it was synced.
// Whatever the level, once the unattested lines reach
// record.MaxUnattested bytes the next record is signed itself (its own
// "sig"), as every session_end and the last record Close writes are. So
// verify reads an unattested tail of fewer bytes than that (but for its
// last line) as what a crash leaves, and a longer one as a finding.
//
// A cleanly closed journal leaves no unattested tail. When Close has
// nothing left to write and the last line written is unattested (a Wait
// returned for its group, and no record came after it), Close writes a
// close record (record.Close: no fields, signed) in that line's session.
// It takes a seq like any record, so a caller that closes without ending
// its session sees one more line than it appended; a caller that ends
// each session with a session_end (as aegis does), or whose last record
// only Close writes, never gets one. A journal that wrote nothing writes
// nothing, and a recovery, whose session has not begun, is never signed
// or closed.
//
// # Session keys
//
// Options.Key is the log's root key: an ed25519.PrivateKey, or any
// crypto.Signer of Ed25519, such as a key an ssh-agent holds, which
// never leaves the agent. It signs no record. Open makes a session key
// (Ed25519, from Options.Rand) that lives in the Journal's memory only
// (never in a file, the head file or the log), has the root certify it
// (record.Certify: one signature, through an agent one round trip,
// before any record is on its way), and signs every record with it; each
// session_start appended carries its public half and the certificate
// (record's doc.go, "Session keys"). Sessions of one Journal (Session
// handles) share the key and the certificate. So the root is asked for
// one signature per Open, whatever the number of records, and the
// records' signatures cost what they did with a key file.
//
// The head file and the checkpoints are signed by the root, since a
// witness or a third party knows only the root: each costs one root
// signature (through an agent, one round trip), made by the head writer's
// or the checkpointer's goroutine, never by a leader, so an agent round
// trip never sits on a call's path. An agent that fails to sign one
// fails the journal closed, as a failed write does (an IOError: the
// relay ends the session, wrap exits 74).
//
// # Durability
//
// Every record is write(2)n to the file before Wait returns, at every level;
// the levels (Durability) differ in when fdatasync(2) runs. Writes are grouped:
// one write and at most one fdatasync cover every record queued when the group
// starts, and release every waiter they cover (leader/follower: the first
// waiter to find no group in progress writes for everyone; a group of more
// than a MiB over pre-zeroed space goes in pieces, each synced before the
// next is written: see below). Before a sync,
// with other calls in flight, the leader waits up to two fdatasyncs' time
// for the records those calls are about to produce, so that one sync
// covers them all (linger.go); a lone call never waits. What a call is
// comes from the appender (AppendHint: a record that awaits an answer, a
// record that answers the one at a seq); the journal reads no record's
// kind for it.
//
// At strict and reply, where a sync is on every call's path, records are
// written over pre-zeroed space (prezero.go): a background goroutine keeps
// about a MiB of zeros (less with smaller segments), written and synced,
// ahead of the content, so the
// fdatasync after a group writes data back and commits no new file size
// (BENCHMARKS.md has the difference). The content of a log
// file ends at its last byte that is not NUL (no record holds one): a NUL
// run at the end of a file is unused space, which readers skip
// (ContentReader) and Close and sealing truncate away.
//
// On any write or sync error the journal fails closed: the error is sticky,
// every pending and later Append and Wait returns it, and the file is never
// written or synced again (after a failed fdatasync the kernel may have
// dropped the dirty pages; a retry could report success for lost data).
//
// # Continuing a log
//
// A crash leaves what package segment describes; Open continues it.
// Open never rewrites or truncates existing bytes but that space's NULs, which it
// writes over: it ends a torn line with '\n' and writes a recovery record
// (torn_bytes, torn_digest: of the torn bytes, lines joined by '\n') whose
// prev chains to the last intact line, followed by the new session's
// session_start. Verify reads a line that holds a NUL as the start of torn
// bytes: answered by such a recovery within 2 MiB, or at the end of the
// log, with no signature in its lines, a torn write (incomplete, as a cut
// tail is); otherwise invalid. (So a hole with the group's signed last
// record persisted after it reads as invalid until the next Open answers
// it: the price of never letting NULs pass signed records off as torn.)
//
// Open continues only what a log, or a crash of one, can be: a file whose
// content begins with a record (`{"v":2,"seq":`) or, within the last
// segment.MaxUnsynced bytes, with a hole; whose last intact line is a record; and
// whose torn bytes begin as a record does (or with a hole) and hold no
// byte below 0x20 but NUL and '\n' (the encoder escapes every other). Any
// other non-empty file (a binary, text, JSON that is no record, a log
// followed by what no torn write leaves, a file of NULs alone) is refused
// with ErrNotLog before anything beside it is touched, and closed exactly
// as it was found: no byte written, no NUL run trimmed (Close trims only a
// file this process wrote to). A path that is not a regular file is
// refused with ErrNotRegular without being opened. Options whose head
// file or checkpoint file is a file the journal writes for the log (the
// log, a segment, the spare), or whose checkpoint file or its history is
// the head file (HeadClash), are refused with ErrClash before anything is
// opened; wrap refuses more (Overlaps: any name path.…).
//
// # Rotation
//
// With rotation (Options.MaxSize) a log is a set of files, named as
// package segment says. Rotation, in order (rotate.go); the reason for each step is what a crash
// right after it leaves:
//
//  1. The sealer (a background goroutine) creates FILE.next: empty, locked,
//     its directory synced (but at none), so that no record is written to
//     a file whose name a power loss could take back. A crash leaves an
//     empty spare; Open removes it.
//  2. The leader, between two groups, once FILE holds MaxSize bytes,
//     exchanges FILE and FILE.next with one renameat2(RENAME_EXCHANGE) and
//     writes the next group to the new FILE. FILE is never missing, and
//     the leader does one rename and nothing else (at reply and interval,
//     first an fdatasync of the old file if it holds unsynced records, so
//     that no later sync of the new file can overtake it): sealing never
//     holds the hot path longer than one group commit. A crash leaves the
//     old records in FILE.next and the new ones in FILE; Open seals
//     FILE.next (steps 3 and 4). Were the exchange undone by a power loss,
//     FILE.next would hold the newer records; Open tells the two apart by
//     their first seqs and exchanges them again.
//  3. The sealer fdatasyncs the old file (at none; at the other levels it
//     is synced already), then renames FILE.next to FILE.<first>-<last>.jsonl
//     without replacing anything (RENAME_NOREPLACE): the segment is durable
//     before its name exists. A crash leaves a sealed segment whose
//     directory entry may not be durable yet; the records are under
//     exactly one name either way.
//  4. The sealer creates the next spare (step 1 of the next rotation) and
//     syncs the directory once for both: the seal is durable. At none it
//     skips this sync: nothing is promised across a power loss there, and
//     a lost rename leaves the state after step 2 or 3, which Open
//     finishes. Step 3's fdatasync stays at every level, so that a power
//     loss never leaves a gap inside a log.
//
// A live file that holds no record yet (just swapped in, or removed)
// continues the last sealed segment: Open reads that segment's last line.
// Where the filesystem has no RENAME_EXCHANGE, step 2 is two renames (FILE
// to its segment name, FILE.next to FILE); a crash between them leaves no
// FILE and the newer records in FILE.next, which Open seals as a segment of
// their own. No step copies or rewrites a record, so none can be doubled;
// every record is under exactly one of FILE, FILE.next or a segment name.
//
// Compression (Options.Compress), one segment at a time in another
// goroutine, on a thread at the lowest CPU priority: write
// FILE.<f>-<l>.jsonl.zst.tmp; fdatasync it; read it back, decompressing,
// and compare every byte with the segment; rename it to .jsonl.zst (never
// replacing) and sync the directory; remove the .jsonl. A crash leaves a
// partial .tmp (removed by Open), or both copies (equal: verify reads one
// and says so; the next Open with compression checks them and removes the
// plain one). Its failures (ENOSPC, …) do not fail the journal: the plain
// segment stays.
//
// With Options.Index, each sealed segment's entry in a tlog.Index (package
// tlog's doc, "Index") is written for the file that stays, on the same
// low-priority thread: after the seal, or once the .zst replaces the plain
// segment (or compressing it failed). An entry that cannot be written is
// left out and fails nothing: the index is a cache, filled in by prove.
//
// # Head file
//
// With Options.HeadFile the journal keeps a signed head of the log there
// (its one line is package record's; ReadHead in record reads it). It is
// replaced atomically (write FILE.tmp, fdatasync, rename, sync the
// directory) every
// Options.HeadEvery while records are written, and at Close; the records it
// names are fdatasynced first, at every level, so a head file never names a
// record that a power loss could take back.
//
// The head file and the checkpoint file are publications of the log, not
// the log: when FILE.tmp or the folder cannot be opened for want of a
// file descriptor (EMFILE, ENFILE: a state of the process, such as the
// connections of wrap --listen, not of the storage), the file keeps its
// last content, Options.Logf says so once (and again once it is written),
// and the next replacement tries again with a new FILE.tmp (PublishError;
// it does not match ErrIO). Any other failure of theirs is the storage's
// and fails the journal closed.
//
// # Checkpoints
//
// With Options.Checkpoint.File the journal keeps signed checkpoints of the
// log's RFC 6962 Merkle tree, in package tlog's format (a C2SP
// tlog-checkpoint signed note by the log's root key, origin
// aegis.log/<16 hex digits of the SHA-256 of the line with seq 0>; leaf i is
// the line with seq i as the hash chain runs: journal/tlog/doc.go).
//
// The leader keeps the tree as a compact range: it adds each line's leaf
// as it encodes the line (one SHA-256 beside the chain's, and on average
// one interior hash), and holds at most 64 hashes, whatever the log's
// length. Open rebuilds the range by reading the whole log once, every
// segment, compressed or not (package tlog's ReadSet: what it costs is
// two SHA-256 of every line, spread over every core, about as long as
// sha256sum takes to read the log), and only when checkpoints are asked
// for; a log whose chain does not reach its last record is refused with
// ErrNotLog, since no checkpoint of it would be honest. The checkpoint
// already in Checkpoint.File, signed by the same key, is the one the log
// must extend: a log shorter than it (a cut tail, an older copy put
// back) or whose first records no longer hash to its root (a rewrite, a
// replaced log) is refused with ErrRolledBack and left as it is; a file
// there that holds no checkpoint of this key is refused the same way.
//
// A goroutine writes a checkpoint every Checkpoint.Interval (default 1s)
// and once Checkpoint.Every records (if set) have been written since the
// last, after each head file update, and at Close, if the tree has grown
// since the last; at most one per MinCheckpointGap (100ms) but the last,
// since each costs three flushes to the disk the log syncs on. Each is of the records written and synced (it syncs
// what is written and not synced, as the head file does; it never takes
// queued records from their leader), so no checkpoint names a record a
// power loss can take back. Signing and writing it are off the records'
// path: the leader only asks (a non-blocking send) and the goroutine
// copies the range under the lock. Each checkpoint is:
//
//  1. appended to FILE.history and fdatasynced: the history holds every
//     checkpoint written, one signed note after the other, so that every
//     state a checkpoint named stays checkable (tlog.Split reads it; a
//     power loss during an append can leave its last note torn, which a
//     reader reports as that note's alone);
//  2. written over FILE atomically (FILE.tmp, fdatasync, rename, sync the
//     directory): FILE always holds the latest whole checkpoint, which the
//     history holds too.
//
// A failure of either fails the journal closed, like any audit I/O, but
// for a want of descriptors in step 2 (see "Head file"): the checkpoint,
// in the history already, is not appended again when FILE is tried again.
// The history is locked as the log is: one writer.
//
// With Checkpoint.Sink set, each checkpoint, once in FILE, is handed to
// the sink from the same goroutine (a call that must not block): wrap's
// --witness submits them to C2SP tlog-witness witnesses and keeps the
// witnessed checkpoints, each the note above with the witnesses'
// cosignature lines after the log's, in FILE.witnessed, and the
// witnesses' state in FILE.witnesses (internal/witness/doc.go, "Files").
//
// # Files
//
// Every file of the log (the live file, the spare, the segments and
// their compressed copies), the head file and the checkpoint file and
// history are created, written, synced, renamed, removed, listed and read
// through Options.FS, a vfs.FS (the operating system's by default), and
// so are the reads of package segment and package tlog that Open does
// (the tail it continues, the sealed segments its chain and checkpoint
// tree are read from). On top of the FS the journal keeps what is its
// own: the lock and the directory sync of a new log, the content end
// before the pre-zeroed space (written by vfs.File.Zero), and the trim of
// that space at Close (file.go, prezero.go). Tests wrap Options.FS with
// package errorfs to fail any operation by its kind (OpWrite, OpSync,
// OpZeroSync, OpRenameExchange, OpRead, …) and path, and check the
// contract above at each: fail closed, nothing acknowledged lost. A file
// that cannot be read while Open reads the log or the checkpoint it must
// extend is an IOError, never a finding (ErrNotLog, ErrRolledBack). The
// checks that a path is a regular file, made before it is opened, go to
// the operating system.
//
// # Locking
//
// Open takes an exclusive flock(2) on the file: two writers would fork the
// chain, so a second aegis on the same file is refused with ErrLocked. The
// spare is locked too, so that Open, finding FILE.next, can tell a
// rotation in progress (locked: ErrLocked) from one a crash interrupted.
package journal
