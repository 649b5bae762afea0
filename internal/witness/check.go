package witness

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// Cosigners returns which of ws (their indexes) cosigned the signed note
// msg with a signature that verifies. A signature line that claims one of
// their keys and does not verify is ErrCosignature: a tampered
// cosignature is never mistaken for a missing one. Lines of other keys
// (the log's own) are passed over.
func Cosigners(msg []byte, ws []Witness) ([]int, error) {
	vs := make([]note.Verifier, len(ws))
	for i, w := range ws {
		vs[i] = w.Verifier
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCosignature, err)
	}
	var out []int
	for i, w := range ws {
		for _, sig := range n.Sigs {
			if sig.Name == w.Verifier.Name() && sig.Hash == w.Verifier.KeyHash() {
				out = append(out, i)
				break
			}
		}
	}
	return out, nil
}
