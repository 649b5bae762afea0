package witness

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Flags are aegis wrap's witness flags as given: --witness URL,KEY
// (repeatable), --witness-quorum, --witness-timeout and --witness-strict.
type Flags struct {
	List    []string
	Quorum  int // 0: all
	Timeout time.Duration
	Strict  bool
}

// Options checks the flags for the audit log whose checkpoints go to
// file ("" for none: there is nothing to submit), signed by the key
// whose public half is pub, and returns the Submitter's options (nil
// without --witness). Its errors name the flag at fault.
func (f Flags) Options(log, file string, pub any, logf func(string, ...any)) (*Options, error) {
	if len(f.List) == 0 {
		if f.Quorum != 0 {
			return nil, errors.New("--witness-quorum: no --witness")
		}
		if f.Strict {
			return nil, errors.New("--witness-strict: no --witness")
		}
		return nil, nil
	}
	ws, err := ParseList(f.List)
	if err != nil {
		return nil, fmt.Errorf("--witness %v", err)
	}
	if file == "" {
		return nil, errors.New("--witness: no checkpoint file to submit (--checkpoint-file, or --head-file)")
	}
	if f.Quorum < 0 || f.Quorum > len(ws) {
		return nil, fmt.Errorf("--witness-quorum %d: between 1 and the %d witnesses given", f.Quorum, len(ws))
	}
	if f.Timeout <= 0 {
		return nil, fmt.Errorf("--witness-timeout %v: a positive duration", f.Timeout)
	}
	key, ok := pub.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("--witness: the signing key is not an Ed25519 key")
	}
	return &Options{Witnesses: ws, Quorum: f.Quorum, Log: log, File: file, Key: key, Timeout: f.Timeout, Logf: logf, Strict: f.Strict}, nil
}

// Refusal says, for the user, why Begin refused to continue the log
// whose last checkpoint is in file.
func (e *RefusedError) Refusal(log, file string) string {
	var lines []string
	for _, a := range e.Answers {
		lines = append(lines, a.Error())
	}
	return fmt.Sprintf("%s: %s; its last checkpoint, in %s, is %d records: the log (and its checkpoint file) was rolled back to an older copy, or forked, or the witness's answer is wrong; under --witness-strict it is not continued, and is left as it was",
		log, strings.Join(lines, "; "), file, e.Size)
}

// ParseQuorum reads a reader's --witness KEY (repeatable) and
// --witness-quorum N (0: all): the checkpoints must carry cosignatures by
// N of those witnesses. With no keys it returns the zero Quorum, which
// asks for none. Its errors name the flag at fault.
func ParseQuorum(keys []string, n int) (Quorum, error) {
	if len(keys) == 0 {
		if n != 0 {
			return Quorum{}, errors.New("--witness-quorum: no --witness")
		}
		return Quorum{}, nil
	}
	ws, err := ParseKeys(keys)
	if err != nil {
		return Quorum{}, fmt.Errorf("--witness: %v", err)
	}
	q := Quorum{Witnesses: ws, N: n}
	if q.N == 0 {
		q.N = len(ws)
	}
	if q.N < 0 || q.N > len(ws) {
		return Quorum{}, fmt.Errorf("--witness-quorum %d: between 1 and the %d keys given", n, len(ws))
	}
	return q, nil
}
