package main

import (
	"crypto"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/witness"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// witnessFlags are wrap's flags for C2SP tlog-witness witnesses (package
// witness): where they are, how many must cosign, how long to wait.
type witnessFlags struct {
	witness.Flags
	o   *witness.Options // check's
	sub *witness.Submitter
}

func addWitnessFlags(fs *flag.FlagSet) *witnessFlags {
	wf := &witnessFlags{}
	fs.Var((*stringList)(&wf.List), "witness", "submit every checkpoint to the tlog-witness at `URL,KEY` (KEY its note verifier key, name+hash+base64) and keep its cosignatures in CHECKPOINTFILE.witnessed; needs a checkpoint file (repeatable)")
	fs.IntVar(&wf.Quorum, "witness-quorum", 0, "a checkpoint is witnessed once `N` witnesses cosigned it (default: all)")
	fs.DurationVar(&wf.Timeout, "witness-timeout", witness.DefaultTimeout, "wait at most `D` for a witness's answer: per request, at start with --witness-strict, and at the end of the session")
	fs.BoolVar(&wf.Strict, "witness-strict", false, "at start, wait for the witnesses (at most --witness-timeout) and refuse to continue the log if one says it holds a larger tree of it or another tree at its size; without it, such an answer (which nothing authenticates) is reported and the session goes on")
	return wf
}

// check says what is wrong with the flags, given the audit log, the
// journal's options (the checkpoint file they need) and its key.
func (wf *witnessFlags) check(audit string, o journal.Options) (err error) {
	wf.o, err = wf.Options(audit, o.Checkpoint.File, o.Key.Public(), logf)
	return err
}

// start asks the witnesses about the log's last checkpoint and hands
// the journal the submitter. A witness's answer is not authenticated,
// so by default nothing waits for it: a witness that says it holds a
// larger tree of the log, or another tree at its size, is reported and
// the session goes on. With --witness-strict, wrap waits for the
// answers (at most --witness-timeout) and such an answer means the log
// (with its checkpoint file) was rolled back or forked: wrap refuses to
// continue it (exit 2, nothing written to it).
func (wf *witnessFlags) start(key crypto.Signer, o journal.Options) (journal.Options, int, bool) {
	if wf.o == nil {
		return o, 0, true
	}
	sub, err := witness.Begin(*wf.o, key)
	var refused *witness.RefusedError
	if errors.As(err, &refused) {
		return o, fail(exitcode.Usage, "wrap: %s", refused.Refusal(wf.o.Log, wf.o.File)), false
	}
	if err != nil {
		return o, fail(exitcode.Usage, "wrap: --witness: %v", err), false
	}
	wf.sub = sub
	o.Checkpoint.Sink = sub
	return o, 0, true
}

// abort stops the submitter of a wrap that ends before its session.
func (wf *witnessFlags) abort() {
	if wf != nil && wf.sub != nil {
		wf.sub.Abort()
	}
}

// finish submits the session's last checkpoint (the journal is closed)
// and says on stderr what each witness did.
func (wf *witnessFlags) finish() {
	if wf == nil || wf.sub == nil {
		return
	}
	lines, err := wf.sub.Close()
	for _, l := range lines {
		fmt.Fprintf(os.Stderr, "aegis: %s\n", l)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "aegis: the witnesses' state was not recorded: %v\n", err)
	}
}

// witnessCheck is verify's and prove check's --witness KEY (repeatable)
// and --witness-quorum N: the checkpoints must carry valid cosignatures
// by N of those witnesses (default: all).
type witnessCheck struct {
	keys   stringList
	quorum *int
	q      witness.Quorum
}

func addWitnessCheckFlags(fs *flag.FlagSet) *witnessCheck {
	wc := &witnessCheck{}
	fs.Var(&wc.keys, "witness", "require the checkpoints to carry a valid cosignature by the witness whose note verifier `KEY` this is (name+hash+base64; repeatable)")
	wc.quorum = fs.Int("witness-quorum", 0, "require cosignatures by `N` of the --witness keys (default: all)")
	return wc
}

// parse reads the keys; it reports a usage error.
func (wc *witnessCheck) parse() (err error) {
	wc.q, err = witness.ParseQuorum(wc.keys, *wc.quorum)
	return err
}

// verify is verify --witness: every checkpoint in files (as
// --checkpoint gave them) must carry the cosignatures. It prints its
// findings for the log set and returns the exit status.
func (wc *witnessCheck) verify(set *segment.Set, files []string, pub ed25519.PublicKey) int {
	if len(wc.q.Witnesses) == 0 {
		return exitcode.OK
	}
	if len(files) == 0 {
		return fail(exitcode.Usage, "verify: --witness checks the checkpoints given with --checkpoint FILE (wrap writes CHECKPOINTFILE.witnessed)")
	}
	lines, bad, unread := wc.q.Report(files, pub)
	for _, l := range lines {
		fmt.Printf("%s: %s\n", set.Base, l)
	}
	switch {
	case unread:
		return exitcode.Usage
	case bad:
		return exitcode.Invalid
	}
	return exitcode.OK
}

// checkNote is prove check --witness: the note of checkpoint c in data,
// read from path (a checkpoint file or a history of them), must carry
// the cosignatures. It returns the names of the witnesses, or prints why
// not and returns the exit status.
func (wc *witnessCheck) checkNote(what, path string, data []byte, pub ed25519.PublicKey, c tlog.Checkpoint) ([]string, int, bool) {
	if len(wc.q.Witnesses) == 0 {
		return nil, 0, true
	}
	names, err := wc.q.CheckNote(data, pub, c)
	if err != nil {
		return nil, fail(exitcode.Invalid, "%s %s: not witnessed: %v", what, path, strings.TrimPrefix(err.Error(), "witness: ")), false
	}
	return names, 0, true
}

// cosignedBy ends prove check's line with the witnesses that cosigned.
func cosignedBy(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ", and cosigned by the witness(es) " + strings.Join(names, ", ")
}
