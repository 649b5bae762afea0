// Package witness hands a log's checkpoints to witnesses and keeps what
// they cosign: a client of the C2SP tlog-witness protocol
// (https://c2sp.org/tlog-witness), the submitter wrap runs beside the
// journal, and the check of cosignatures that verify and prove check
// make. A witness is a server that remembers, per log, the largest tree
// it has seen, and cosigns a checkpoint only if its tree extends that
// one; once a checkpoint left the machine and a witness cosigned it, the
// log cannot be rolled back, cut or forked without the witness noticing
// and refusing. It never imports package journal: the journal hands it
// checkpoints through journal.CheckpointSink.
//
// # Protocol
//
// AddCheckpoint POSTs to URL/add-checkpoint
//
//	old <size the witness holds>\n
//	<base64 hash>\n …             the RFC 6962 consistency proof, one per line
//	\n
//	<the signed checkpoint note>   (package tlog's, signed by the log's key)
//
// and reads the answer: 200 OK holds the witness's cosignature line(s),
// each "— <witness name> <base64 of key hash ‖ timestamp ‖ signature>\n"
// (C2SP tlog-cosignature, cosignature/v1: an Ed25519 signature over
// "cosignature/v1\ntime <timestamp>\n" and the checkpoint's text), which
// are checked with the witness's key before they are kept; 409 Conflict
// (text/x.tlog.size) holds the size the witness holds, and the
// submission is made again from that size, with the proof from it;
// 404 or 403 mean the witness does not know the log or its key (its
// operator adds them: the origin, and the note verifier key
// tlog.VerifierKey gives); 422 that the proof does not lead from the tree
// the witness holds to the new one. A proof is made from the log itself
// (tlog.ProveConsistency: one read of the log as far as the checkpoint),
// only when the witness holds a tree that is neither empty nor the one
// being submitted; witnesses that hold the same tree share one proof.
//
// Nothing in an answer is believed before its cosignature checks: the
// protocol signs only cosignatures, so a status and a size are the word
// of whatever answered at the witness's URL. A redirect (any 3xx) is an
// answer the protocol does not allow, never followed: the checkpoint
// goes to the URL given and nowhere else. No more than 64 KiB of an
// answer is read, and a longer one is an error; what an error quotes of
// an answer has every byte that is not a printable character escaped,
// for it is said on a terminal. A size in a 409 is kept
// only while it is at most the checkpoint's, to make the proof from it;
// a larger one is said and forgotten, and the next submission asks
// again, so that one answer never stands for the witness's state for
// the rest of a session.
//
// # Keys
//
// A witness key is its note verifier key, name+hash+base64, as the
// witness publishes it: algorithm 0x04 (cosignature/v1) for tlog-witness
// witnesses, 0x01 (a plain Ed25519 note signature) accepted too
// (ParseKey). torchwood's CosignatureVerifier checks cosignature/v1;
// golang.org/x/mod/sumdb/note opens the notes.
//
// # Submission (Submitter)
//
// The journal hands the Submitter each checkpoint it writes (Offer,
// which never blocks). Each witness has one goroutine that submits the
// latest checkpoint offered: a checkpoint offered while another is in
// flight replaces any not yet taken, so the queue is one checkpoint
// long, whatever the rate of checkpoints or the state of the witness.
// Submissions to one witness are at most one per Options.Interval
// (default 2s), and after a proof that read the log for d, not again
// before 10·d, so that proofs of a long log take at most about a tenth
// of a core; the last is never held back. A failed submission is tried
// again after Options.MinBackoff, doubling to MaxBackoff, with the
// latest checkpoint then. Nothing on the records' path waits for a
// witness: a witness that is down, slow or unreachable changes nothing
// for the calls. Each request is bounded by Options.Timeout.
//
// Start (wrap, before the log is opened) submits the checkpoint already
// in the checkpoint file (with no checkpoint file, StartCheckpoint makes
// one of the log as it is: ReadTree) to every witness, each from its own
// goroutine; the outcome is the witness's start state. A witness that
// says it holds a larger tree of the log (409 with a larger size:
// ErrAhead) or refuses the proof from the tree it holds (422: ErrProof)
// says the log and its checkpoint file were rolled back or forked; but
// nothing authenticates that answer, so by default Start waits for no
// witness, the answer is said and recorded, and the session goes on
// (the witness cosigns nothing of a log that was rolled back, and the
// state file keeps what it said). With Options.Strict (wrap
// --witness-strict), Start waits at most Timeout for the answers and
// returns those two, and wrap refuses to continue the log. Begin is
// NewSubmitter and Start in one, as wrap calls them: its refusal is a
// *RefusedError, naming the checkpoint's size, and its Refusal says it
// for the user. Flags holds wrap's witness flags as given, and its
// Options checks them (naming the flag at fault) and makes Begin's. Close gives
// every witness one more try at the last checkpoint, within Timeout,
// after the one in flight if any: the end of a session is delayed by
// twice Timeout at most.
//
// The user is told on stderr (Options.Logf): when a witness fails, with
// the reason (and, for a log it does not know, what its operator adds),
// at most once per Options.LogEvery while it stays in the same state;
// when it cosigns again; and at Close, one line per witness and one for
// the quorum.
//
// # Files
//
// Beside the checkpoint file FILE (journal/doc.go, "Checkpoints"):
//
// FILE.witnessed (WitnessedExt) is the history of witnessed checkpoints:
// each is the checkpoint note as the journal wrote it, its signature
// line by the log's key, then the cosignature lines of the witnesses
// that cosigned it, in the order of the --witness flags, appended and
// fdatasynced once the cosignatures reach Options.Quorum (and again,
// whole, if more arrive later). That is the standard form of a witnessed
// checkpoint: note.Open with the log's and the witnesses' verifiers
// reads it, as tlog.Open, tlog.Split, verify --checkpoint and prove do.
// testdata/witnessed.golden is one.
//
// FILE.witnesses (StateExt) is the witnesses' state at the end of the
// session, replaced at Close: the body of the last checkpoint offered
// (origin, size, root, as in the checkpoint), a blank line, the line
// "log <note verifier key of the log's checkpoints>" (what a witness's
// operator adds for the origin: tlog.VerifierKey), one line per witness,
//
//	witness <name> state=<state> cosigned=<size> start=<state> attempts=<n> failures=<n> url=<url> key=<vkey>[ detail=<Go-quoted reason>]
//
// (state: the outcome of its last submission, one of State's values:
// none, ok, unreachable, unknown-log, ahead, fork, bad-cosignature (a
// 200 without a valid cosignature by its key: a witness that is not the
// one named, or an answer changed on the way), error;
// cosigned: the largest size it cosigned in the session, 0 for none;
// start: the outcome at Start; attempts and failures: submissions made
// and failed), and the line "quorum <q> of <n>: met" or "…: not met", as
// to the last checkpoint. testdata/state.golden is one. It is a report,
// not evidence (nothing in it is signed); it begins as a checkpoint does,
// so that verify, reading a directory, passes over it as it does over a
// checkpoint.
//
// # Checking
//
// Cosigners says which of the given witnesses cosigned a note; a
// cosignature line that claims a given witness's key and does not verify
// is an error (ErrCosignature), never a missing cosignature. A Quorum
// (the witnesses' keys, ParseKeys, and how many must cosign; ParseQuorum
// reads both from the readers' flags) is what verify --witness and prove
// check --witness require: CheckFiles checks
// every checkpoint of a set of files, CheckNote the one checkpoint a
// proof is about.
package witness
