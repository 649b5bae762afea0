package witness

import (
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// ParseList reads witnesses given as URL,KEY (wrap --witness).
func ParseList(args []string) ([]Witness, error) {
	var ws []Witness
	for _, a := range args {
		url, key, ok := strings.Cut(a, ",")
		if !ok {
			return nil, fmt.Errorf("%q: want URL,KEY", a)
		}
		w, err := New(url, key)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", a, err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// ParseKeys reads witnesses given by their keys alone (ParseKey): the
// witnesses whose cosignatures a reader checks, with no URL to reach.
func ParseKeys(keys []string) ([]Witness, error) {
	var ws []Witness
	for _, k := range keys {
		v, err := ParseKey(k)
		if err != nil {
			return nil, err
		}
		ws = append(ws, Witness{Key: k, Verifier: v})
	}
	return ws, nil
}

// A Quorum is what verify --witness and prove check --witness require
// of a checkpoint: valid cosignatures by N of Witnesses.
type Quorum struct {
	Witnesses []Witness
	N         int
}

// Cosigners checks the witnesses' cosignatures on one signed note and
// returns the names of those that cosigned, or why the note falls short
// of the quorum (ErrCosignature).
func (q Quorum) Cosigners(note []byte) ([]string, error) {
	idx, err := Cosigners(note, q.Witnesses)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, i := range idx {
		names = append(names, q.Witnesses[i].Name())
	}
	if len(idx) < q.N {
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: no cosignature by the witnesses given (%d needed)", ErrCosignature, q.N)
		}
		return names, fmt.Errorf("%w: cosigned by %s only, %d of the %d needed", ErrCosignature, strings.Join(names, ", "), len(idx), q.N)
	}
	return names, nil
}

// CheckNote finds checkpoint c among the notes of data (a checkpoint
// file or a history of them) signed by pub, and returns the names of the
// witnesses that cosigned it, or why no note of c meets the quorum.
func (q Quorum) CheckNote(data []byte, pub ed25519.PublicKey, c tlog.Checkpoint) ([]string, error) {
	var last error
	for _, note := range tlog.Split(data) {
		if got, err := tlog.Open(note, pub); err != nil || got != c {
			continue
		}
		names, err := q.Cosigners(note)
		if err == nil {
			return names, nil
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("no checkpoint of %d records in it", c.Size)
	}
	return nil, last
}

// CheckpointError is a checkpoint of a file that falls short of a
// Quorum: the file, the checkpoint's place in it (from 1), its size, and
// why (ErrCosignature).
type CheckpointError struct {
	File  string
	Index int
	Size  uint64
	Err   error
}

func (e *CheckpointError) Error() string {
	return fmt.Sprintf("%s, checkpoint %d (%d records): %s", e.File, e.Index, e.Size, strings.TrimPrefix(e.Err.Error(), "witness: "))
}

func (e *CheckpointError) Unwrap() error { return e.Err }

// CheckFiles checks that every checkpoint signed by pub in files (each
// one checkpoint or a history of them) meets the quorum. It returns how
// many do, and one error per file it cannot read and per checkpoint that
// falls short (a *CheckpointError, ErrCosignature); notes that are not
// checkpoints signed by pub are passed over, for tlog.CheckFiles reports
// them.
func (q Quorum) CheckFiles(files []string, pub ed25519.PublicKey) (int, []error) {
	var errs []error
	n := 0
	for _, f := range files {
		data, _, err := regular.ReadFile(f, "a checkpoint file", tlog.MaxCheckpointFile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, note := range tlog.Split(data) {
			c, err := tlog.Open(note, pub)
			if err != nil {
				continue
			}
			if _, err := q.Cosigners(note); err != nil {
				errs = append(errs, &CheckpointError{File: f, Index: i + 1, Size: c.Size, Err: err})
				continue
			}
			n++
		}
	}
	return n, errs
}
