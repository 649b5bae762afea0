// Package verify judges an audit log: Stream checks one file or stream,
// Set the files of one log as one chain. A log is Valid when every line
// is a canonical record (exactly the bytes the encoder writes for it,
// package record), seqs run on without gaps, every prev is the hash of the line
// before, every signature verifies against the session's key, the
// session's key is its root or certified by it for the place the log
// gives it and, in a v2 certificate, for the session that carries it
// (certs.go), the root is
// Options' pinned key if one is given, and no record lies after the last
// signature of its session; Incomplete when the only fault is a cut or torn tail,
// which a crash leaves; Invalid otherwise. Which session each record
// belongs to and how calls pair are package calls' rules: every anomaly
// it reports is a problem here, a cut one (a session without its end, a
// recovery without the session after it) a gap. So are the links of
// rounds and tasks: a round that answers no input_required outcome of
// its session, or one a round already answered; a task record that names
// no call of its session that became that task, a second end of a task,
// a task without its end at its session_end, an outcome naming the
// task_id of a task of its session not ended; a server_request naming a
// seq that is no call of its session in flight, a client_answer to no
// server_request of its session. And so are approvals: an approval record
// naming no parked (pending_approval) intent of its session waiting for
// its decision, or not its id and request_digest; a second decision of
// one call; an approval id that parks two calls; a grant other than
// approval:<id> for an approved call and deny_all for any other; a parked
// call's outcome before its decision (unless it says the session ended
// awaiting one), or not host_denied after a denial or an expiry.
//
// # Problems
//
// Problems are reported by line and seq, in file order: the set-level
// ones (a missing or duplicated segment) first, then the lines' in the
// order of the files (sealed segments in seq order, then the live file)
// and of the lines in each, a file's own (it does not hold what its name
// says) after its lines, and the kept head's last; at most 100 problems
// and 100 gaps, the first in that order, the rest counted. Verify reads
// a log once, in chunks of lines (segment.LineReader) decoded and hashed
// in parallel, and holds no more of it than the chunks and signature
// batches in flight.
//
// # Signatures
//
// Signatures are checked in batches on every core (a log of fewer than
// 64 on the verifier's own goroutine, as it ends): one multi-scalar
// multiplication (filippo.io/edwards25519) checks a batch of up to 64,
// and a batch that fails is checked again signature by signature with
// crypto/ed25519, so that each bad one is named. A batch checks the
// cofactored equation RFC 8032 allows, crypto/ed25519 the cofactorless
// one, and the encodings as crypto/ed25519 does. The two differ only for
// a signature its key's holder made, on purpose, to hold for one and not
// the other (a small-order component in R or in the key): a batch may
// accept it where crypto/ed25519 rejects it. No one without the key can
// make one, and no aegis signer does.
//
// # Torn writes
//
// A line that holds a NUL, or that ends a file without its '\n', is the
// start of torn bytes: answered by a recovery record (torn_bytes,
// torn_digest) within 2 MiB, or at the end of the log, with no signature
// at or after its first NUL (one before it reached the disk with all it
// covers), a torn write (Incomplete, as a cut tail is); otherwise Invalid.
//
// # Long lines
//
// A line longer than MaxLine is therefore none the journal wrote. Verify
// reports it (invalid) without holding it, hashing it as it streams by,
// and reads on: the next line's prev is checked against that hash, and
// every later line and session is checked as usual.
//
// # Sets
//
// verify takes a set of these files in any order, orders them by the
// ranges their names state, and reports by seq range a range in no file (a
// missing segment), in two (a duplicated one), or a segment that does not
// hold the range its name states (a cut segment, or an older copy of it).
//
// # Reports
//
// A Report is printed by aegis verify as text (Report.WriteText: the
// verdict, the counts, then one line per finding) or as the JSON document
// of package verifyjson.
package verify
