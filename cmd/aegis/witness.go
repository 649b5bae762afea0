package main

import (
	"crypto"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/exitcode"
	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
	"github.com/aegisrelay/aegis/witness"
)

// witnessFlags are wrap's flags for C2SP tlog-witness witnesses (package
// witness): where they are, how many must cosign, how long to wait.
type witnessFlags struct {
	list    stringList
	quorum  *int
	timeout *time.Duration
	strict  *bool
	ws      []witness.Witness
	sub     *witness.Submitter
}

func addWitnessFlags(fs *flag.FlagSet) *witnessFlags {
	wf := &witnessFlags{}
	fs.Var(&wf.list, "witness", "submit every checkpoint to the tlog-witness at `URL,KEY` (KEY its note verifier key, name+hash+base64) and keep its cosignatures in CHECKPOINTFILE.witnessed; needs a checkpoint file (repeatable)")
	wf.quorum = fs.Int("witness-quorum", 0, "a checkpoint is witnessed once `N` witnesses cosigned it (default: all)")
	wf.timeout = fs.Duration("witness-timeout", witness.DefaultTimeout, "wait at most `D` for a witness's answer: per request, at start with --witness-strict, and at the end of the session")
	wf.strict = fs.Bool("witness-strict", false, "at start, wait for the witnesses (at most --witness-timeout) and refuse to continue the log if one says it holds a larger tree of it or another tree at its size; without it, such an answer (which nothing authenticates) is reported and the session goes on")
	return wf
}

// parseWitnessList reads URL,KEY arguments.
func parseWitnessList(args []string) ([]witness.Witness, error) {
	var ws []witness.Witness
	for _, a := range args {
		url, key, ok := strings.Cut(a, ",")
		if !ok {
			return nil, fmt.Errorf("--witness %q: want URL,KEY", a)
		}
		w, err := witness.New(url, key)
		if err != nil {
			return nil, fmt.Errorf("--witness %q: %v", a, err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// check says what is wrong with the flags, given the journal's options
// (the checkpoint file they need).
func (wf *witnessFlags) check(o journal.Options) error {
	if len(wf.list) == 0 {
		if *wf.quorum != 0 {
			return errors.New("--witness-quorum: no --witness")
		}
		if *wf.strict {
			return errors.New("--witness-strict: no --witness")
		}
		return nil
	}
	ws, err := parseWitnessList(wf.list)
	if err != nil {
		return err
	}
	if o.Checkpoint.File == "" {
		return errors.New("--witness: no checkpoint file to submit (--checkpoint-file, or --head-file)")
	}
	if *wf.quorum < 0 || *wf.quorum > len(ws) {
		return fmt.Errorf("--witness-quorum %d: between 1 and the %d witnesses given", *wf.quorum, len(ws))
	}
	if *wf.timeout <= 0 {
		return fmt.Errorf("--witness-timeout %v: a positive duration", *wf.timeout)
	}
	wf.ws = ws
	return nil
}

// start asks the witnesses about the log's last checkpoint and hands
// the journal the submitter. A witness's answer is not authenticated,
// so by default nothing waits for it: a witness that says it holds a
// larger tree of the log, or another tree at its size, is reported and
// the session goes on. With --witness-strict, wrap waits for the
// answers (at most --witness-timeout) and such an answer means the log
// (with its checkpoint file) was rolled back or forked: wrap refuses to
// continue it (exit 2, nothing written to it).
func (wf *witnessFlags) start(audit string, key crypto.Signer, o journal.Options) (journal.Options, int, bool) {
	if len(wf.ws) == 0 {
		return o, 0, true
	}
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "aegis: "+format+"\n", args...) }
	pub, ok := key.Public().(ed25519.PublicKey)
	if !ok {
		return o, fail(exitcode.Usage, "wrap: --witness: the signing key is not an Ed25519 key"), false
	}
	sub, err := witness.NewSubmitter(witness.Options{
		Witnesses: wf.ws, Quorum: *wf.quorum, Log: audit, File: o.Checkpoint.File,
		Key: pub, Timeout: *wf.timeout, Logf: logf, Strict: *wf.strict,
	})
	if err != nil {
		return o, fail(exitcode.Usage, "wrap: --witness: %v", err), false
	}
	note, cp := startCheckpoint(audit, o.Checkpoint.File, key, pub)
	if err := sub.Start(note, cp); err != nil {
		sub.Abort()
		var lines []string
		for _, e := range unjoin(err) {
			lines = append(lines, e.Error())
		}
		return o, fail(exitcode.Usage, "wrap: %s: %s; its last checkpoint, in %s, is %d records: the log (and its checkpoint file) was rolled back to an older copy, or forked, or the witness's answer is wrong; under --witness-strict it is not continued, and is left as it was",
			audit, strings.Join(lines, "; "), o.Checkpoint.File, cp.Size), false
	}
	wf.sub = sub
	o.Checkpoint.Sink = sub
	return o, 0, true
}

// startCheckpoint returns the checkpoint the witnesses are asked about
// at start: the checkpoint file's or, when there is none and the log
// holds records, one of the log as it is, read whole and signed now, so
// that a log put back together with its checkpoint files removed is
// checked too. It returns nil when there is nothing to ask about: a new
// log, or files journal.Open refuses (and says why).
func startCheckpoint(audit, file string, key crypto.Signer, pub ed25519.PublicKey) ([]byte, tlog.Checkpoint) {
	data, _, err := regular.ReadFile(file, "a checkpoint file", tlog.MaxCheckpointFile)
	if err == nil {
		if c, err := tlog.Open(data, pub); err == nil {
			return data, c
		}
		return nil, tlog.Checkpoint{}
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, tlog.Checkpoint{}
	}
	if st, err := os.Stat(audit); err != nil || st.Size() == 0 {
		return nil, tlog.Checkpoint{}
	}
	c, err := witness.ReadTree(audit)
	if err != nil || c.Size == 0 {
		return nil, tlog.Checkpoint{}
	}
	k, ok := key.(ed25519.PrivateKey)
	if !ok {
		// A key in an agent signs the journal's checkpoints; the journal
		// writes the first of this session within its interval.
		fmt.Fprintf(os.Stderr, "aegis: %s has no checkpoint file to show the witnesses at start; the session's first checkpoint is their check\n", audit)
		return nil, tlog.Checkpoint{}
	}
	s, err := tlog.Signer(c.Origin, k)
	if err != nil {
		return nil, tlog.Checkpoint{}
	}
	note, err := tlog.Sign(c, s)
	if err != nil {
		return nil, tlog.Checkpoint{}
	}
	return note, c
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
	ws     []witness.Witness
	q      int
}

func addWitnessCheckFlags(fs *flag.FlagSet) *witnessCheck {
	wc := &witnessCheck{}
	fs.Var(&wc.keys, "witness", "require the checkpoints to carry a valid cosignature by the witness whose note verifier `KEY` this is (name+hash+base64; repeatable)")
	wc.quorum = fs.Int("witness-quorum", 0, "require cosignatures by `N` of the --witness keys (default: all)")
	return wc
}

// parse reads the keys; it reports a usage error.
func (wc *witnessCheck) parse() error {
	if len(wc.keys) == 0 {
		if *wc.quorum != 0 {
			return errors.New("--witness-quorum: no --witness")
		}
		return nil
	}
	for _, k := range wc.keys {
		v, err := witness.ParseKey(k)
		if err != nil {
			return fmt.Errorf("--witness: %v", err)
		}
		wc.ws = append(wc.ws, witness.Witness{Key: k, Verifier: v})
	}
	wc.q = *wc.quorum
	if wc.q == 0 {
		wc.q = len(wc.ws)
	}
	if wc.q < 0 || wc.q > len(wc.ws) {
		return fmt.Errorf("--witness-quorum %d: between 1 and the %d keys given", *wc.quorum, len(wc.ws))
	}
	return nil
}

// cosigners checks the witnesses' cosignatures on one signed note and
// returns their names, or why the note falls short of the quorum.
func (wc *witnessCheck) cosigners(note []byte) ([]string, error) {
	idx, err := witness.Cosigners(note, wc.ws)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, i := range idx {
		names = append(names, wc.ws[i].Name())
	}
	if len(idx) < wc.q {
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: no cosignature by the witnesses given (%d needed)", witness.ErrCosignature, wc.q)
		}
		return names, fmt.Errorf("%w: cosigned by %s only, %d of the %d needed", witness.ErrCosignature, strings.Join(names, ", "), len(idx), wc.q)
	}
	return names, nil
}

// verify is verify --witness: every checkpoint in files (as
// --checkpoint gave them) must carry the cosignatures. It prints its
// findings for the log set and returns the exit status.
func (wc *witnessCheck) verify(set *segment.Set, files []string, pub ed25519.PublicKey) int {
	if len(wc.ws) == 0 {
		return exitcode.OK
	}
	if len(files) == 0 {
		return fail(exitcode.Usage, "verify: --witness checks the checkpoints given with --checkpoint FILE (wrap writes CHECKPOINTFILE.witnessed)")
	}
	code, n := exitcode.OK, 0
	for _, f := range files {
		data, _, err := regular.ReadFile(f, "a checkpoint file", tlog.MaxCheckpointFile)
		if err != nil {
			fmt.Printf("%s: witnesses: %v\n", set.Base, err)
			code = worse(code, exitcode.Usage)
			continue
		}
		for i, note := range tlog.Split(data) {
			c, err := tlog.Open(note, pub)
			if err != nil {
				continue // checkCheckpoints reports it
			}
			if _, err := wc.cosigners(note); err != nil {
				fmt.Printf("%s: witnesses: %s, checkpoint %d (%d records): %v\n", set.Base, f, i+1, c.Size, strings.TrimPrefix(err.Error(), "witness: "))
				code = worse(code, exitcode.Invalid)
				continue
			}
			n++
		}
	}
	if code == exitcode.OK {
		fmt.Printf("%s: witnesses: all %d checkpoints carry valid cosignatures by %d of the %d witnesses given\n", set.Base, n, wc.q, len(wc.ws))
	}
	return code
}

// checkFile is prove check --witness: the note of checkpoint c in path
// (a checkpoint file or a history of them) must carry the
// cosignatures. It returns the names of the witnesses, or prints why
// not and returns the exit status.
func (wc *witnessCheck) checkFile(what, path, keyArg string, c tlog.Checkpoint) ([]string, int, bool) {
	if len(wc.ws) == 0 {
		return nil, 0, true
	}
	pub, err := readPublicKey(keyArg)
	if err != nil {
		return nil, fail(exitcode.Usage, "%s: --key: %v", what, err), false
	}
	data, _, err := regular.ReadFile(path, "a checkpoint file", tlog.MaxCheckpointFile)
	if err != nil {
		return nil, fail(exitcode.Usage, "%s: %v", what, err), false
	}
	var last error
	for _, note := range tlog.Split(data) {
		if got, err := tlog.Open(note, pub); err != nil || got != c {
			continue
		}
		names, err := wc.cosigners(note)
		if err == nil {
			return names, 0, true
		}
		last = err
	}
	if last == nil {
		last = fmt.Errorf("no checkpoint of %d records in it", c.Size)
	}
	return nil, fail(exitcode.Invalid, "%s %s: not witnessed: %v", what, path, strings.TrimPrefix(last.Error(), "witness: ")), false
}

// cosignedBy ends prove check's line with the witnesses that cosigned.
func cosignedBy(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ", and cosigned by the witness(es) " + strings.Join(names, ", ")
}
