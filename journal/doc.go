// Package journal writes and verifies aegis's audit log: a hash-chained,
// Ed25519-signed, append-only file of JSON lines (schema v2).
//
// # Format
//
// The log is UTF-8 text, one record per line, each line ended by a single
// '\n'. Every record is written by aegis's own encoder (never a copy of client
// JSON) in one canonical form: no white space, fields in a fixed order, strings
// escaping only '"', '\\' and bytes below 0x20 (as \n, \r, \t or \u00XX),
// invalid UTF-8 replaced by U+FFFD. Because the form is canonical, Verify
// decodes every line and re-encodes it; a line that does not come back byte for
// byte (an unknown field, another order, other escapes, white space) is
// rejected.
//
// The common fields, in order:
//
//	{"v":2,"seq":N,"ts":"2006-01-02T15:04:05.000000000Z","sid":"<32 hex>",
//	 "kind":"<kind>","prev":"sha256:<64 hex>", <kind fields>[,"sig":"ed25519:<base64>"]}
//
// seq counts 0,1,2,… per log with no gaps (across its segments, below). prev
// is the SHA-256 of the previous line's bytes without its '\n'; for seq 0 it
// is 64 zeros. The kind fields of
// every kind are listed on the types that encode them (SessionStart,
// Enforcement, Intent, Outcome, Anomaly, PolicyReload, Recovery, SessionEnd).
//
// # Bounded values
//
// No line is longer than MaxLine (1 MiB, without its '\n'): that is the
// longest line Verify and Open read, and the journal never writes a
// longer one. What a client controls is bounded in the record itself:
// an intent's and an outcome's "call" (the JSON-RPC id) and an intent's
// "tool" (params.name); so is an intent's policy "rule" (a policy file's
// text), which a call may not fail for. Such a value of at most
// MaxValueBytes (256) bytes as recorded (a number's literal, a string's
// canonical text) is written whole; a longer one is written abbreviated,
// as an object, which no genuine value is (a JSON-RPC id is never an
// object, a tool name and a rule are strings):
//
//	"call":{"type":"number"|"string","prefix":"<text>","bytes":N,"sha256":"sha256:<64 hex>"}
//	"tool":{"prefix":"<text>","bytes":N,"sha256":"sha256:<64 hex>"}
//	"rule":{"prefix":"<text>","bytes":N,"sha256":"sha256:<64 hex>"}
//
// in that order, where N is the value's length in bytes (a number's
// literal as the client wrote it, a string as decoded from the frame),
// sha256 the SHA-256 of those bytes, and prefix, a JSON string in the
// canonical form, its longest leading run of whole characters whose
// canonical text takes at most PrefixBytes (64) bytes (an invalid byte
// counting as the 3 of U+FFFD). Equal values are abbreviated equally, so
// an outcome's call matches its intent's whether whole or abbreviated.
// With the bound, an intent or an outcome takes a few KiB at most,
// whatever a client sends. The other fields hold what aegis itself
// supplies (argv, environment names, confinement paths, statuses, …):
// Append refuses, writing nothing, a record whose kind fields would make
// a line longer than MaxLine, with an error matching ErrRecord.
//
// A line longer than MaxLine is therefore none the journal wrote. Verify
// reports it (invalid) without holding it, hashing it as it streams by,
// and reads on: the next line's prev is checked against that hash, and
// every later line and session is checked as usual.
//
// # Signatures
//
// sig, when present, is always the last field: an Ed25519 signature, by the
// key named in the session's session_start, over the line's bytes before
// `,"sig":`. Through prev it covers every line before it. The journal signs
// the last record of every write (every commit group) and every session_end,
// so a record that is written is, from the moment its group is written, covered
// by a signature at or after it. Records after a session's last signature are
// an unsigned tail: what a torn write leaves, reported and not trusted.
//
// Signatures are standard Ed25519 (RFC 8032 verification, ed25519.Verify),
// made with random nonces whose commitments are precomputed in the
// background (sign.go), so that a signature costs the group ~1.5 µs, not
// ~24 µs; Options.StandardSignatures makes crypto/ed25519's deterministic
// ones instead. A verifier cannot tell the two apart.
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
// covers them all (linger.go); a lone call never waits.
//
// At strict and reply, where a sync is on every call's path, records are
// written over pre-zeroed space (prezero.go): a background goroutine keeps
// about a MiB of zeros (less with smaller segments), written and synced,
// ahead of the content, so the
// fdatasync after a group writes data back and commits no new file size
// (103 µs here, against 138 µs after an append; BENCHMARKS.md). The content of a log
// file ends at its last byte that is not NUL (no record holds one): a NUL
// run at the end of a file is unused space, which readers skip
// (ContentReader) and Close and sealing truncate away.
//
// On any write or sync error the journal fails closed: the error is sticky,
// every pending and later Append and Wait returns it, and the file is never
// written or synced again (after a failed fdatasync the kernel may have
// dropped the dirty pages; a retry could report success for lost data).
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
// the start of its line, lines after the hole included. Open never
// rewrites or truncates existing bytes but that space's NULs, which it
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
// maxUnsynced bytes, with a hole; whose last intact line is a record; and
// whose torn bytes begin as a record does (or with a hole) and hold no
// byte below 0x20 but NUL and '\n' (the encoder escapes every other). Any
// other non-empty file (a binary, text, JSON that is no record, a log
// followed by what no torn write leaves, a file of NULs alone) is refused
// with ErrNotLog before anything beside it is touched, and closed exactly
// as it was found: no byte written, no NUL run trimmed (Close trims only a
// file this process wrote to). A path that is not a regular file is
// refused with ErrNotRegular without being opened.
//
// # Segments
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
// Rotation, in order (rotate.go); the reason for each step is what a crash
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
// goroutine, on a thread at the lowest CPU priority: write FILE.<f>-<l>.jsonl.zst.tmp; fdatasync it; read it back,
// decompressing, and compare every byte with the segment; rename it to
// .jsonl.zst (never replacing) and sync the directory; remove the .jsonl.
// A crash leaves a partial .tmp (removed by Open), or both copies (equal:
// verify reads one and says so; the next Open with compression checks them
// and removes the plain one). Its failures (ENOSPC, …) do not fail the journal: the plain
// segment stays.
//
// verify takes a set of these files in any order, orders them by the
// ranges their names state, and reports by seq range a range in no file (a
// missing segment), in two (a duplicated one), or a segment that does not
// hold the range its name states (a cut segment, or an older copy of it).
//
// # Head file
//
// With Options.HeadFile the journal keeps a signed head there, for
// operators who ship it off the machine: one line,
//
//	{"v":2,"kind":"head","seq":N,"hash":"sha256:<hex>","ts":"<ts>","key":"ed25519:<base64>","sig":"ed25519:<base64>"}
//
// where seq and hash name the last line written (as Journal.Head) and sig
// signs the bytes before `,"sig":` with the log's key. "head" is no record
// kind, so the line cannot pass for a record. It is replaced atomically
// (write FILE.tmp, fdatasync, rename, sync the directory) every
// Options.HeadEvery while records are written, and at Close; the records it
// names are fdatasynced first, at every level, so a head file never names a
// record that a power loss could take back.
//
// # Locking
//
// Open takes an exclusive flock(2) on the file: two writers would fork the
// chain, so a second aegis on the same file is refused with ErrLocked. The
// spare is locked too, so that Open, finding FILE.next, can tell a
// rotation in progress (locked: ErrLocked) from one a crash interrupted.
package journal
