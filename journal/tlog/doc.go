// Package tlog makes an aegis audit log checkable by a third party: an
// RFC 6962 Merkle tree over the log's records, checkpoints of it in the
// C2SP tlog-checkpoint format (a signed note, golang.org/x/mod/sumdb/note),
// inclusion and consistency proofs, and the check of a log against its
// checkpoints (Check). It reads logs through package segment; package
// journal writes the checkpoints (journal/doc.go, "Checkpoints"). It
// never imports package journal.
//
// The hash chain already ties every record to the ones before it; what
// the tree adds is evidence that a holder of the public key alone can
// check without the log: a checkpoint commits to the first N records in
// 32 bytes, an inclusion proof shows one record is among them in about
// log2(N) hashes, and a consistency proof shows a later checkpoint extends
// an earlier one, so that a log cannot be rewritten, cut or rolled back
// after a checkpoint left the machine.
//
// # Leaves
//
// Leaf i is the exact bytes of the log's line with seq i, without its
// '\n', as the hash chain runs (Chain): the line with seq i whose prev is
// the SHA-256 of leaf i−1 (64 zeros for seq 0). Lines that are no part of
// the chain are not leaves: a torn line (the bytes a crash left, which a
// recovery record answers), the lines after a hole, a line too long to
// be a record (record.PeekChain reads a line's seq and prev, and
// passes over what cannot be a record). A torn line that was a whole record but for its '\n' has
// the seq and prev of the recovery that answers it; the later of the
// two, the recovery, is the leaf. The segments of a rotated log are read
// as one, in seq order, compressed or not.
//
// The tree is RFC 6962's (RFC 9162 2.1.1): a leaf hash is
// SHA-256(0x00 ‖ line), an interior node SHA-256(0x01 ‖ left ‖ right),
// the tree of n leaves split at the largest power of two below n. The
// root of the empty tree is SHA-256 of nothing; no checkpoint names one.
//
// # Origin
//
// A log's origin is "aegis.log/" and the first 16 hex digits of the
// SHA-256 of its line with seq 0, e.g. aegis.log/d5bb2fd05b3bc3d5. That
// line holds the first session's random id, its start time and its key,
// so two logs never share it (64 bits: a collision among the logs of one
// key is out of reach by chance), and it never changes once written: a
// log keeps one origin through rotation, compression and every later
// session. A verifier derives it from the log itself, and a checkpoint of
// another log (or of a log whose first line was rewritten) is told apart
// at once (ErrOrigin). The origin is also the name of the signing key in
// the note, as C2SP tlog-checkpoint asks; "aegis.log/" is not a domain
// aegis owns, only a prefix no other log format uses.
//
// # Checkpoints
//
// A checkpoint is a signed note whose text is
//
//	<origin>\n<tree size>\n<root: standard base64 of 32 bytes>\n
//
// followed by a blank line and one signature line,
//
//	— <origin> <base64 of 4-byte key hash ‖ 64-byte Ed25519 signature>\n
//
// by the log's root key (Signer: any crypto.Signer of Ed25519, an
// ssh-agent's key included), in the note format: the key hash is the first 4 bytes of
// SHA-256(<origin> ‖ "\n" ‖ 0x01 ‖ public key), and the signature is over
// the text. Any signed-note verifier holding the note verifier key
// <origin>+<key hash hex>+<base64 of 0x01 ‖ public key> (VerifierKey)
// checks it; the tree size is the number of leaves: records seq 0 to
// size−1. Open reads one, its text with torchwood's C2SP parser
// (ParseBody): at most 1 MB, extension lines after the root allowed, each
// non-empty and ended by '\n', and ignored. A history is checkpoints written one after the other (Split).
// A crash during an append can leave its last one cut short, anywhere
// before the '\n' that ends its signature line. SplitHistory sets
// such a torn tail apart, and CheckFiles reports it as ErrTorn, which
// verify calls incomplete when it is all there is (Findings), as it does
// a log's torn last line: no
// checkpoint, and no forgery of one. A last note that ends in a whole
// signature line is a checkpoint or a forgery, whatever it holds.
//
// # Proofs
//
// ProveInclusion and ProveConsistency read the log once, as far as the
// checkpoint's size, passing each leaf hash through a compact range
// (transparency-dev/merkle's compact and proof packages) that keeps the
// proof's nodes as they are made: O(n) time, O(log n) memory. With an
// Index (WithIndex) they read only the segments the proof is about and
// hash the others' bytes ("Index" below). Both check what they make
// before returning it.
//
// An inclusion proof for a tree of n leaves holds at most ⌈log2 n⌉
// hashes, 32 bytes each (RFC 9162 2.1.3: one per level below the root),
// and checking it costs that many SHA-256 of 65 bytes and one of the
// line (BenchmarkInclusionCheck, TestInclusionProofSize).
// A proof is one JSON object (MarshalIndent; encoding/json reads it):
//
//	{"type": "aegis.inclusion/v1", "origin": "<origin>", "tree_size": N,
//	 "root": "<base64>", "leaf_index": I, "line": "<the record's line>",
//	 "proof": ["<base64>", …]}
//
//	{"type": "aegis.consistency/v1", "origin": "<origin>",
//	 "old_size": M, "old_root": "<base64>", "new_size": N,
//	 "new_root": "<base64>", "proof": ["<base64>", …]}
//
// "line" holds the record's bytes exactly (a record is valid UTF-8; no
// HTML escaping), "proof" the RFC 9162 audit path (2.1.3) or consistency
// proof (2.1.4), lowest node first. Inclusion.Check and Consistency.Check
// check a proof against checkpoints with transparency-dev/merkle's
// verifiers; any RFC 6962 verifier (x/mod's sumdb/tlog CheckRecord and
// CheckTree) accepts the same hashes. ProofType and DecodeProof read a
// proof back strictly (no unknown field, one JSON value); FindCheckpoint
// finds the checkpoint of a proof's size in a checkpoint file or history,
// a torn last one passed over.
//
// # Index
//
// Reading a whole log costs two SHA-256 per record and the decompression
// of its segments, for a proof about one record; and most of that work
// is the same every time, a sealed segment never changing. An Index keeps, per sealed
// segment, what the tree needs of it, so that a proof reads only the
// segments that hold a leaf it is about (the record's, the old tree's
// last, the checkpoint's last) and the live file.
//
// An entry is one file in the index's folder, named for the hex SHA-256
// of the segment's bytes as stored (compressed or not), holding one JSON
// object:
//
//	{"v":1, "file":"<hex SHA-256 of the segment's bytes>",
//	 "first":F, "leaves":K, "origin":"<origin, if F is 0>",
//	 "range":["<base64>", …],
//	 "in":"<hex>", "out":"<hex>", "last_prev":"<hex>"}
//
// made by reading the segment on its own: its first record that may be
// one (Chain) is leaf F, whatever it chains to, and the chain follows
// from there; "leaves" counts them (a segment that ends with a record
// that does not chain, or holds none, has no entry); "range" is the
// compact range of leaves F to F+K−1 (RFC 6962 subtrees, left to right,
// transparency-dev/merkle's compact.Range); "in" is the prev of leaf F,
// "out" the SHA-256 of leaf F+K−1, "last_prev" its prev.
//
// Prove hashes every sealed segment's bytes (on every core) and looks its
// entry up; one missing is made and written then (a temporary file
// renamed into place; one that cannot be written is made again next
// time). A segment is passed over, its leaves taken as its range, when
// its entry begins where the chain stands (its "first" is the next leaf
// and its "in" the SHA-256 of the last) and it holds no leaf the proof
// is about; every other file is read in its place, as ReadSet would. A
// record at the head of a file read that would have replaced the last
// leaf of a segment passed over (a recovery answering it: same seq, same
// prev) stops the indexed reading.
//
// What the index holds is trusted only this far: an entry is of the
// exact bytes named (every run hashes them), and the proof made through
// it is checked against the checkpoint's root before it is returned. An
// entry that does not fit (forged, of another log, from a stale format)
// leads to a root that is not the checkpoint's, or stops the reading;
// either way the whole set is then read, as without an index, so what
// Prove returns, a proof or an error, is what reading every record
// gives. The one thing the index spares is reading the records of the
// segments passed over: an entry forged to describe a rewritten
// segment's original records could keep prove from noticing the rewrite
// (the proof is still a true one of the checkpoint). verify --checkpoint
// (Check) reads every record, and is what finds a rewrite.
//
// The index is a cache, kept in a folder its user names (aegis keeps it
// in the user's cache folder), never beside the log: a reader of a copy of the log
// makes its own. aegis wrap, when it rotates, adds each segment's entry as
// the journal seals it (journal.Options.Index), so that the recording
// user's first prove already finds them. An entry holds at most two
// hashes per level of the segment's range: a few KB.
//
// # Files
//
// Every file of a log is read through the vfs.FS of its set
// (segment.Set.FS; nil is the operating system's), and an Index reads its
// entries through its own (NewIndexFS), so that a test can fail any read
// (package errorfs). A file of the log that cannot be read makes ReadSet,
// BuildTree and the proofs fail with that error, naming the file: an I/O
// error is never taken for a finding about the log. An entry that cannot
// be read for an I/O error is computed from its segment as a missing one
// is, and not written over: the disk failed, maybe not the entry.
//
// # What Check decides
//
// Check reads a log once and decides, for each checkpoint, whether the
// log is an append-only extension of it: the log's first size records
// hash to its root. What it finds otherwise is named by ErrRewritten,
// ErrCut, ErrRollback, ErrFork or ErrOrigin (Check's doc says which is
// which). A cut tail and a rollback both leave a log shorter than a
// checkpoint that it agrees with as far as it goes; Check calls it a
// rollback when the log ends where a session ended or where an earlier
// checkpoint ended, states an older copy of the log was in, and a cut
// otherwise: a guess at the cause, the finding (records missing) being
// the same.
//
// Report says what CheckFiles found in the lines verify --checkpoint
// prints, and whether a history's torn tail is all that is wrong.
package tlog
