package verify

import (
	"crypto/ed25519"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// Status is the verdict of Verify.
type Status int

// The verdicts; cmd/aegis maps them to exit codes 0, 1 and 3.
const (
	Valid      Status = iota // chain, seqs, signatures and pairing check out and every session ended
	Invalid                  // something was changed, cut out, spliced in or signed by the wrong key
	Incomplete               // valid as far as it goes, but a session has no session_end or an unattested tail
)

func (s Status) String() string {
	switch s {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	}
	return "incomplete"
}

// Options configure Stream and Set.
type Options struct {
	// Key pins the log: every session must be signed by it. Nil verifies
	// unpinned, each session against the key its session_start names.
	Key ed25519.PublicKey
	// Head, when set, is a head kept elsewhere: the log must contain that
	// seq with that hash, or its tail was cut.
	Head *record.Head
	// HeadKey, with Head (a head file's key), is the key that must sign the
	// session holding the head's record.
	HeadKey ed25519.PublicKey
	// Workers decode lines and check signatures in parallel. Default
	// GOMAXPROCS.
	Workers int
	// Progress, if set, is called with the count of bytes read from the
	// files of a set (compressed bytes for .zst) as they are read.
	Progress func(n int)
}

// Report is what Verify found.
type Report struct {
	Status   Status
	Pinned   bool
	Records  uint64
	Head     record.Head
	HasHead  bool
	Sessions []*SessionReport
	// Problems make the log Invalid; Gaps make it Incomplete. Each holds at
	// most maxProblems entries; Dropped counts the rest.
	Problems []Problem
	Gaps     []Problem
	Dropped  int
	// Files are the files of a set in the order verified (Set).
	Files []FileReport
	// Notes say what Set set aside without it being wrong: an
	// unfinished compressed copy, an empty spare, a second equal copy.
	Notes []string
}

// FileReport is what one file of a set holds.
type FileReport struct {
	Path        string `json:"path"`
	Records     uint64 `json:"records"`
	First, Last uint64 `json:"-"` // seqs of its first and last records, if Records > 0
}

// SessionReport summarises one session of the log.
type SessionReport struct {
	SID string
	// Key is the key the session is pinned to: its session_start's
	// "key", or the root that certifies it (certs.go).
	Key string
	// SessionKey is a certified session's own key, which signs its
	// records; "" when Key signs them.
	SessionKey string
	FirstSeq   uint64
	LastSeq    uint64
	Records    uint64
	Intents    uint64
	Outcomes   uint64
	Ended      bool
	EndReason  string
	// Unsigned counts the session's records no signature covers: its
	// part of the log's unattested tail (attest.go).
	Unsigned uint64

	pub  ed25519.PublicKey                        // signs its records
	root ed25519.PublicKey                        // Key's bytes
	s    *calls.Session[*SessionReport, struct{}] // its sessions and calls, whose counts it takes at the end
}

// Problem is one finding, located by line number (1-based) and, when the
// line decoded, its seq.
type Problem struct {
	File   string `json:"file,omitempty"` // in a set: the file; "" for the set as a whole
	Line   uint64 `json:"line"`
	Seq    uint64 `json:"seq"`
	HasSeq bool   `json:"-"`
	Msg    string `json:"msg"`
}

func (p Problem) String() string {
	where := ""
	if p.File != "" {
		where = filepath.Base(p.File) + " "
	}
	switch {
	case p.Line == 0 && p.File == "" && !p.HasSeq:
		return p.Msg
	case p.Line == 0:
		return where + p.Msg
	case p.HasSeq:
		return fmt.Sprintf("%sline %d (seq %d): %s", where, p.Line, p.Seq, p.Msg)
	}
	return fmt.Sprintf("%sline %d: %s", where, p.Line, p.Msg)
}

// Stream reads a log from r and checks it. It reads in bounded memory
// (the chunks and signature batches in flight, plus one entry per intent
// still waiting for its outcome) and decodes lines and checks signatures
// on every core. The error is non-nil only when r could not be read;
// everything wrong with the bytes is in the Report.
func Stream(r io.Reader, opts Options) (*Report, error) {
	v := newVerifier(opts)
	err := v.runFile(r)
	v.finish()
	return v.rep, err
}

// verifier judges one log, a record at a time in line order, on one
// goroutine; the work that does not depend on order (decoding and hashing
// lines, checking signatures) is done around it by workers (read.go,
// sigs.go). Its parts, by concern: in, where it is in the file it reads;
// chain, the hash chain and seqs; book, the sessions and their calls;
// sigs, the signatures queued; out, what it found, in file order.
type verifier struct {
	opts Options
	rep  *Report
	dec  record.Decoder // for an input of one chunk, decoded on this goroutine

	in    reading
	chain chain
	book  *sessionBook
	sigs  *sigChecker
	out   findings
	// headFound: the record of the kept head's seq (Options.Head) was
	// read; headSID: its session.
	headFound bool
	headSID   [16]byte
}

func newVerifier(opts Options) *verifier {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	rep := &Report{Pinned: opts.Key != nil}
	sigs := newSigChecker(opts.Workers)
	v := &verifier{
		opts: opts,
		rep:  rep,
		sigs: sigs,
		out:  findings{rep: rep},
	}
	v.book = newSessionBook(opts.Key, rep, sigs, &v.out)
	return v
}

// process judges one record in log order: a line that did not decode is
// one problem, and the chain goes on past it; a record's seq and prev must
// continue the chain (chain.link), a recovery must follow torn bytes
// (afterTorn), the kept head must match the record of its seq, the
// record must belong to its session (sessionBook), and its signature, if
// its session's key is known, is queued for checking.
func (v *verifier) process(r *record.Record, derr error, hash record.Digest, n int, afterTorn bool) {
	v.rep.Records++
	if derr != nil {
		v.out.invalid(nil, "%v", derr)
		v.chain.skip(hash)
		return
	}
	v.chain.link(r, hash, &v.out)
	in := &v.in
	if in.fileRecs == 0 {
		in.fileSeqs[0] = r.Seq
	}
	in.fileRecs++
	in.fileSeqs[1] = r.Seq
	if r.Kind == record.KindRecovery && !afterTorn {
		v.out.invalid(r, "recovery record without the torn line it answers")
	}
	v.rep.Head, v.rep.HasHead = record.Head{Seq: r.Seq, Hash: hash}, true
	if h := v.opts.Head; h != nil && h.Seq == r.Seq {
		v.headFound, v.headSID = true, r.SID
		if h.Hash != hash {
			v.out.invalid(r, "hash %s differs from the kept head %s", hash, h.Hash)
		}
	}
	s := v.book.enter(r, v.chain.gapEnd, &v.out)
	v.book.line(r, s, hash, n, &v.out) // attest.go
	if s == nil {
		return
	}
	if pub := v.book.count(r, s, &v.out); pub != nil {
		v.sigs.add(pub, r.Signed, r.Sig, v.out.here(), v.out.file, v.out.line, r.Seq)
	}
}

// gap tells the verifier that the records from the next one up to end are
// in no file of the set; Set reports it. The next record is taken as it
// comes, and what the missing records would have held (a session's start,
// an intent's outcome, a session's counts) is not held against the rest.
func (v *verifier) gap(end uint64) {
	v.chain.missing(end)
	v.book.calls.Missing(end)
}

// finish judges the end of the log — the last session, a recovery with
// no session after it, the kept head — once every signature is checked,
// and gives the verdict. It stops the signature workers: call it once.
func (v *verifier) finish() {
	out := &v.out
	v.book.close()
	bad, dropped := v.sigs.close()
	for _, p := range bad {
		out.add(p)
	}
	out.dropped += dropped
	out.file, out.line = "", 0
	if v.opts.Head != nil && !v.headFound {
		out.invalid(nil, "log ends before the kept head %s: its tail was cut", v.opts.Head)
	}
	if v.opts.Head != nil && v.headFound && v.opts.HeadKey != nil {
		if s := v.book.calls.Lookup(v.headSID); s == nil || s.Data.pub == nil || !v.opts.HeadKey.Equal(s.Data.root) {
			out.invalidSeq(v.opts.Head.Seq, "the kept head's record is not in a session signed by the head's key %s", record.FormatPublicKey(v.opts.HeadKey))
		}
	}
	out.done()
	if v.rep.Records == 0 && len(v.rep.Problems) == 0 {
		out.incomplete(0, false, "no records")
	}
	switch {
	case len(v.rep.Problems) > 0:
		v.rep.Status = Invalid
	case len(v.rep.Gaps) > 0:
		v.rep.Status = Incomplete
	default:
		v.rep.Status = Valid
	}
}
