package witness

import (
	"crypto/ed25519"
	"errors"
	"fmt"
)

// Report checks the checkpoint files (CheckFiles) and says what verify
// --witness prints: one line per finding, or one saying every checkpoint
// carries the cosignatures. bad reports a missing or invalid
// cosignature (ErrCosignature); unread any other finding, a file that
// could not be read or checked.
func (q Quorum) Report(files []string, pub ed25519.PublicKey) (lines []string, bad, unread bool) {
	n, errs := q.CheckFiles(files, pub)
	for _, err := range errs {
		lines = append(lines, fmt.Sprintf("witnesses: %v", err))
		if errors.Is(err, ErrCosignature) {
			bad = true
		} else {
			unread = true
		}
	}
	if len(errs) == 0 {
		lines = append(lines, fmt.Sprintf("witnesses: all %d checkpoints carry valid cosignatures by %d of the %d witnesses given", n, q.N, len(q.Witnesses)))
	}
	return lines, bad, unread
}
