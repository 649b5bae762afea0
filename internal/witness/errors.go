package witness

import (
	"errors"
	"fmt"
)

// Errors of the package, one per answer of the tlog-witness protocol and
// one per way a cosignature is wrong. Classify with errors.Is.
var (
	// ErrUnknownLog means the witness does not know the checkpoint's
	// origin (404), or (403) does not verify its signature by a key it
	// holds for that origin: either way its operator has not added the
	// log and its key (Submitter says which origin and key to add).
	ErrUnknownLog = errors.New("witness: log unknown to the witness")
	// ErrProof means the witness found the consistency proof wrong (422):
	// the tree it holds at the old size is not this log's first records.
	// For a proof aegis made from its own log, that is a fork, if the
	// answer is the witness's: it is not authenticated.
	ErrProof = errors.New("witness: consistency proof refused")
	// ErrAhead means the witness says (409, not authenticated) it holds
	// a tree of the log larger than the checkpoint offered: the log was
	// rolled back, or forked, after the witness saw it, or the answer is
	// not the witness's word.
	ErrAhead = errors.New("witness: the witness says it holds a larger tree of this log")
	// ErrUnreachable means no answer came: a refused connection, a
	// timeout, a broken response.
	ErrUnreachable = errors.New("witness: unreachable")
	// ErrAnswer means the witness answered with a status or body the
	// protocol does not allow (400, 5xx, a redirect, an answer over
	// 64 KiB, a malformed size or cosignature).
	ErrAnswer = errors.New("witness: unexpected answer")
	// ErrCosignature means a cosignature is missing, not by the key
	// given, or does not verify.
	ErrCosignature = errors.New("witness: cosignature missing or invalid")
	// ErrKey means a witness key is not a note verifier key this package
	// reads.
	ErrKey = errors.New("witness: not a witness key")
)

// ConflictError is the witness's 409 Conflict: it says it holds the log
// at Size, not at the old size the request named. Nothing signs it.
type ConflictError struct {
	Size uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("witness: the witness says it holds the log at size %d", e.Size)
}
