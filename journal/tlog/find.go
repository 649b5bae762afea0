package tlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// FindCheckpoint returns the checkpoint of tree size size (0: the last)
// among the notes of data, a checkpoint file or a history of them. With
// pub each note's signature is checked (Open); with nil it is read
// unverified. A history's torn last note (SplitHistory: a crash during
// an append, not a forgery) is passed over, and its length returned in
// torn for the caller to say so. A note that does not open is an error
// when it is the one asked for (the last, or the only one); otherwise
// the search goes on to the notes before it.
func FindCheckpoint(data []byte, pub ed25519.PublicKey, size uint64) (c Checkpoint, torn int, err error) {
	notes, t := SplitHistory(data)
	for i := len(notes) - 1; i >= 0; i-- {
		if pub != nil {
			c, err = Open(notes[i], pub)
		} else {
			c, err = openUnverified(notes[i])
		}
		if err != nil {
			if size == 0 && i == len(notes)-1 || len(notes) == 1 {
				return c, len(t), err
			}
			continue
		}
		if size == 0 || c.Size == size {
			return c, len(t), nil
		}
	}
	return Checkpoint{}, len(t), fmt.Errorf("no checkpoint of tree size %d in it", size)
}

// openUnverified reads a checkpoint's text without checking its signature.
func openUnverified(msg []byte) (Checkpoint, error) {
	_, err := note.Open(msg, nil)
	var u *note.UnverifiedNoteError
	if !errors.As(err, &u) {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	return ParseBody(u.Note.Text)
}

// ProofType returns the "type" of a proof's JSON (TypeInclusion,
// TypeConsistency, or another string for DecodeProof's caller to
// refuse), or why data is not a JSON object.
func ProofType(data []byte) (string, error) {
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &kind); err != nil {
		return "", fmt.Errorf("not a proof: %v", err)
	}
	return kind.Type, nil
}

// DecodeProof decodes a proof of ProofType's type into p (an *Inclusion
// or a *Consistency), strictly: a field the type does not have, and
// anything after the one JSON value, are errors.
func DecodeProof(data []byte, p any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(p); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}
