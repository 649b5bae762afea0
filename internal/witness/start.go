package witness

import (
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// ErrKeyElsewhere means the log has records but no checkpoint file, and
// its key is held elsewhere (an ssh-agent), so StartCheckpoint signs no
// checkpoint of it: the journal signs the session's first within its
// interval, and that one is the witnesses' check.
var ErrKeyElsewhere = errors.New("witness: no checkpoint file, and the key is not in this process to sign one")

// StartCheckpoint returns the checkpoint Submitter.Start asks the
// witnesses about: the checkpoint file's or, when there is none and the
// log holds records, one of the log as it is (ReadTree), signed now
// with key, so that a log put back together with its checkpoint files
// removed is checked too. It returns a nil note when there is nothing to
// ask about: a new log, or files journal.Open refuses (and says why);
// and ErrKeyElsewhere when key is not an ed25519.PrivateKey.
func StartCheckpoint(log, file string, key crypto.Signer) ([]byte, tlog.Checkpoint, error) {
	pub, _ := key.Public().(ed25519.PublicKey)
	data, _, err := regular.ReadFile(file, "a checkpoint file", tlog.MaxCheckpointFile)
	if err == nil {
		if c, err := tlog.Open(data, pub); err == nil {
			return data, c, nil
		}
		return nil, tlog.Checkpoint{}, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, tlog.Checkpoint{}, nil
	}
	if st, err := os.Stat(log); err != nil || st.Size() == 0 {
		return nil, tlog.Checkpoint{}, nil
	}
	c, err := ReadTree(log)
	if err != nil || c.Size == 0 {
		return nil, tlog.Checkpoint{}, nil
	}
	k, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, tlog.Checkpoint{}, ErrKeyElsewhere
	}
	s, err := tlog.Signer(c.Origin, k)
	if err != nil {
		return nil, tlog.Checkpoint{}, nil
	}
	note, err := tlog.Sign(c, s)
	if err != nil {
		return nil, tlog.Checkpoint{}, nil
	}
	return note, c, nil
}

// A RefusedError is Begin's refusal of a log under Options.Strict: the
// witnesses' answers (ErrAhead, ErrProof, each naming its witness) say
// the log, with its checkpoint file, was rolled back or forked, or a
// witness's answer is wrong. Size is the log's last checkpoint's.
type RefusedError struct {
	Size    uint64
	Answers []error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("witness: refused at size %d: %v", e.Size, errors.Join(e.Answers...))
}

func (e *RefusedError) Unwrap() []error { return e.Answers }

// Begin makes and starts the Submitter of a session, before the session
// (wrap --witness): NewSubmitter, then Start with the log's last
// checkpoint (StartCheckpoint). A log whose key is elsewhere is said
// through Options.Logf: its first checkpoint of the session is the
// witnesses' check. When Start refuses the log (Options.Strict), the
// Submitter is stopped and the error is a *RefusedError.
func Begin(o Options, key crypto.Signer) (*Submitter, error) {
	s, err := NewSubmitter(o)
	if err != nil {
		return nil, err
	}
	note, cp, err := StartCheckpoint(o.Log, o.File, key)
	if errors.Is(err, ErrKeyElsewhere) && o.Logf != nil {
		o.Logf("%s has no checkpoint file to show the witnesses at start; the session's first checkpoint is their check", o.Log)
	}
	if err := s.Start(note, cp); err != nil {
		s.Abort()
		return nil, &RefusedError{Size: cp.Size, Answers: flatten(err)}
	}
	return s, nil
}

// flatten lists the errors errors.Join put together, or err alone.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
