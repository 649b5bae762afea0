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
// seq counts 0,1,2,… per file with no gaps. prev is the SHA-256 of the previous
// line's bytes without its '\n'; for seq 0 it is 64 zeros. The kind fields of
// every kind are listed on the types that encode them (SessionStart,
// Enforcement, Intent, Outcome, Anomaly, PolicyReload, Recovery, SessionEnd).
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
// # Durability
//
// Every record is write(2)n to the file before Wait returns, at every level;
// the levels (Durability) differ in when fdatasync(2) runs. Writes are grouped:
// one write and at most one fdatasync cover every record queued when the group
// starts, and release every waiter they cover (leader/follower: the first
// waiter to find no group in progress writes for everyone).
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
// synced, as the level allows. Either may leave a torn last line. Open never
// rewrites or truncates existing bytes: it ends a torn line with '\n' and
// writes a recovery record (torn_bytes, torn_digest) whose prev chains to the
// last intact line, followed by the new session's session_start.
//
// # Locking
//
// Open takes an exclusive flock(2) on the file: two writers would fork the
// chain, so a second aegis on the same file is refused with ErrLocked.
package journal
