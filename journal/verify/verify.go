package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/aegisrelay/aegis/journal/record"
)

// Status is the verdict of Verify.
type Status int

// The verdicts; cmd/aegis maps them to exit codes 0, 1 and 3.
const (
	Valid      Status = iota // chain, seqs, signatures and pairing check out and every session ended
	Invalid                  // something was changed, cut out, spliced in or signed by the wrong key
	Incomplete               // valid as far as it goes, but a session has no session_end or an unsigned tail
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
	// Workers check signatures in parallel. Default GOMAXPROCS.
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
	SID       string
	Key       string
	FirstSeq  uint64
	LastSeq   uint64
	Records   uint64
	Intents   uint64
	Outcomes  uint64
	Ended     bool
	EndReason string
	// Unsigned counts the session's records after its last signature.
	Unsigned uint64

	sid      [16]byte // SID's bytes
	pub      ed25519.PublicKey
	open     map[uint64]openCall // intents with an id still waiting for their outcome
	recovery uint64              // unsigned records carried in by a preceding recovery
	gapped   bool                // records of it may be in a missing segment (reported)
}

// openCall is the call id of an intent waiting for its outcome, kept
// beyond the record it was decoded from (whose Text aliases a line that
// will be recycled). An id of up to len(short) bytes — nearly every one —
// is kept inline, so that keeping it allocates nothing; a longer one, or
// an abbreviated one, is copied (a decoded id holds at most MaxValueBytes).
type openCall struct {
	typ   record.IDType
	n     uint8
	short [22]byte
	long  *record.Call
}

func makeOpenCall(c record.Call) openCall {
	o := openCall{typ: c.Type}
	if len(c.Text) <= len(o.short) && c.Len <= 0 {
		o.n = uint8(copy(o.short[:], c.Text))
	} else {
		l := c
		l.Text = bytes.Clone(c.Text)
		o.long = &l
	}
	return o
}

// matches reports whether c is the same id: recorded the same, whole or
// abbreviated.
func (o *openCall) matches(c record.Call) bool {
	if o.long != nil {
		l := o.long
		return l.Type == c.Type && l.Len == c.Len && l.Sum == c.Sum && bytes.Equal(l.Text, c.Text)
	}
	return o.typ == c.Type && c.Len <= 0 && bytes.Equal(o.short[:o.n], c.Text)
}

func (o *openCall) call() record.Call {
	if o.long != nil {
		return *o.long
	}
	return record.Call{Type: o.typ, Text: o.short[:o.n]}
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

const maxProblems = 100

// Stream reads a log from r and checks it. It reads in bounded memory (one
// line of lookahead, plus one entry per intent still waiting for its
// outcome) and checks signatures on every core. The error is non-nil only
// when r could not be read; everything wrong with the bytes is in the Report.
func Stream(r io.Reader, opts Options) (*Report, error) {
	v := newVerifier(opts)
	err := v.runFile(r)
	v.finish()
	if err != nil {
		return v.rep, err
	}
	return v.rep, nil
}

type verifier struct {
	opts Options
	rep  *Report
	dec  record.Decoder

	line     uint64 // number of the line being processed
	prev     record.Digest
	nextSeq  uint64
	started  bool
	sessions map[[16]byte]*SessionReport
	cur      *SessionReport
	// After a recovery: the sid the next session_start must carry, and the
	// unsigned records (the recovery) that its first signature covers.
	expectSID   *[16]byte
	pendingRecs uint64
	headFound   bool
	headSID     [16]byte

	// Reading one file of a set (runFile): its path, the line read but not
	// yet judged, the lines read, and the seqs of its first and last
	// records.
	file     string
	p        pending
	torn     tornRun
	n        uint64
	fileRecs uint64
	fileSeqs [2]uint64
	// resync: the set is missing records before the next one (reported
	// once, by Set): take its seq and prev as they come. gapEnd: the
	// lowest seq after every missing range so far; sessions and intents
	// from before it may have begun in the missing records.
	resync bool
	gapEnd uint64

	// held is the chunk whose records the verifier may still use (take).
	held *chunk

	jobs chan sigJob
	wg   sync.WaitGroup
	mu   sync.Mutex // guards bad
	bad  []Problem
}

// sigJob is one signature to check. msg is a copy of the signed bytes
// (the line is recycled before the job is done), from sigMsgs, to which
// checkSigs returns it.
type sigJob struct {
	file      string
	pub       ed25519.PublicKey
	msg       *[]byte
	sig       [ed25519.SignatureSize]byte
	line, seq uint64
}

// sigMsgs recycles the copies of signed bytes that sigJobs carry.
var sigMsgs = sync.Pool{New: func() any { return new([]byte) }}

func newVerifier(opts Options) *verifier {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	v := &verifier{
		opts:     opts,
		rep:      &Report{Pinned: opts.Key != nil},
		sessions: map[[16]byte]*SessionReport{},
		jobs:     make(chan sigJob, 256),
	}
	for range opts.Workers {
		v.wg.Add(1)
		go v.checkSigs()
	}
	return v
}

func (v *verifier) checkSigs() {
	defer v.wg.Done()
	for j := range v.jobs {
		if !ed25519.Verify(j.pub, *j.msg, j.sig[:]) {
			v.mu.Lock()
			v.bad = append(v.bad, Problem{File: j.file, Line: j.line, Seq: j.seq, HasSeq: true, Msg: "signature does not verify"})
			v.mu.Unlock()
		}
		sigMsgs.Put(j.msg)
	}
}

func (v *verifier) problem(p *[]Problem, seq uint64, hasSeq bool, format string, args ...any) {
	if len(*p) >= maxProblems {
		v.rep.Dropped++
		return
	}
	*p = append(*p, Problem{File: v.file, Line: v.line, Seq: seq, HasSeq: hasSeq, Msg: fmt.Sprintf(format, args...)})
}

func (v *verifier) invalid(r *record.Record, format string, args ...any) {
	if r == nil {
		v.problem(&v.rep.Problems, 0, false, format, args...)
		return
	}
	v.problem(&v.rep.Problems, r.Seq, true, format, args...)
}

// pending is a line read but not yet judged: whether it is a torn line
// depends on the line after it. buf and rec are in the chunk the verifier
// holds (take).
type pending struct {
	buf  []byte
	rec  *record.Record
	err  error
	hash record.Digest
	line uint64
	ok   bool
	long bool // a line longer than maxLine: buf holds none of it
}

// flush judges the pending line as an ordinary line.
func (v *verifier) flush(p *pending) {
	if !p.ok {
		return
	}
	p.ok = false
	v.line = p.line
	v.process(p.rec, p.err, p.hash, false)
}

// process judges one record in log order: a line that did not decode is
// one problem, and the chain goes on past it; a record's seq and prev must
// continue the chain (but after records reported missing: resync), a
// recovery must follow torn bytes (afterTorn), the kept head must match
// the record of its seq, and session checks the record against its
// session.
func (v *verifier) process(r *record.Record, derr error, hash record.Digest, afterTorn bool) {
	v.rep.Records++
	if derr != nil {
		v.invalid(nil, "%v", derr)
		// Keep the chain going past the bad line, so that one changed line
		// is one problem, not a cascade.
		v.prev, v.started = hash, true
		v.nextSeq++
		return
	}
	switch {
	case v.resync:
		// Records are missing before this one, and that is reported.
		v.resync = false
	case !v.started:
		if r.Seq != 0 || r.Prev != (record.Digest{}) {
			v.invalid(r, "first record must have seq 0 and a zero prev")
		}
	default:
		if r.Seq != v.nextSeq {
			v.invalid(r, "seq %d, want %d (a line removed, added or moved)", r.Seq, v.nextSeq)
		}
		if r.Prev != v.prev {
			v.invalid(r, "prev does not match the line before (chain broken)")
		}
	}
	if v.fileRecs == 0 {
		v.fileSeqs[0] = r.Seq
	}
	v.fileRecs++
	v.fileSeqs[1] = r.Seq
	if r.Kind == record.KindRecovery && !afterTorn {
		v.invalid(r, "recovery record without the torn line it answers")
	}
	v.started, v.prev, v.nextSeq = true, hash, r.Seq+1
	v.rep.Head, v.rep.HasHead = record.Head{Seq: r.Seq, Hash: hash}, true
	if h := v.opts.Head; h != nil && h.Seq == r.Seq {
		v.headFound, v.headSID = true, r.SID
		if h.Hash != hash {
			v.invalid(r, "hash %s differs from the kept head %s", hash, h.Hash)
		}
	}
	v.session(r)
}

// gap tells the verifier that the records from seq on (up to end) are in no
// file of the set; Set reports it. The next record is taken as it
// comes, and what the missing records would have held (a session's start,
// an intent's outcome, a session's counts) is not held against the rest.
func (v *verifier) gap(end uint64) {
	v.resync = true
	v.gapEnd = max(v.gapEnd, end)
	if v.cur != nil {
		v.cur.gapped = true
	}
	for _, s := range v.sessions {
		if !s.Ended {
			s.gapped = true
		}
	}
}

// session checks r against the session it belongs to, then counts it
// there (record) and queues its signature, if any, for the signature
// workers.
func (v *verifier) session(r *record.Record) {
	if v.enter(r) {
		v.record(r)
	}
}

// enter moves to the session r belongs to: a recovery closes the current
// one and names the next, a session_start opens it (checking the id and
// the pinned key), and any other record must fall inside an open session.
// It reports whether r is to be counted in v.cur.
func (v *verifier) enter(r *record.Record) bool {
	switch r.Kind {
	case record.KindRecovery:
		v.closeSession()
		sid := r.SID
		v.expectSID = &sid
		v.pendingRecs = 1
		if r.Sig != nil {
			v.invalid(r, "signed recovery: its key is named only by the session_start after it")
		}
		return false
	case record.KindSessionStart:
		if v.expectSID != nil && *v.expectSID != r.SID {
			v.invalid(r, "session_start after a recovery carries another session id")
		}
		v.expectSID = nil
		if _, dup := v.sessions[r.SID]; dup {
			v.invalid(r, "session id %x reused", r.SID)
		}
		v.closeSession()
		s := r.Body.(*record.SessionStart)
		v.cur = &SessionReport{
			SID: hex.EncodeToString(r.SID[:]), Key: record.FormatPublicKey(s.Key), FirstSeq: r.Seq,
			sid: r.SID, pub: s.Key, open: map[uint64]openCall{}, Unsigned: v.pendingRecs,
		}
		v.pendingRecs = 0
		v.sessions[r.SID] = v.cur
		v.rep.Sessions = append(v.rep.Sessions, v.cur)
		if v.opts.Key != nil && !v.opts.Key.Equal(s.Key) {
			v.invalid(r, "session %s is signed by %s, not the pinned key", v.cur.SID, v.cur.Key)
		}
	default:
		if v.expectSID != nil {
			v.invalid(r, "a recovery must be followed by its session_start")
			v.expectSID = nil
		}
		if v.gapEnd > 0 && v.sessions[r.SID] == nil {
			// A session whose start is in missing records (reported): its
			// key is unknown unless pinned; unpinned, its signatures go
			// unchecked (the set is invalid already).
			v.closeSession()
			v.cur = &SessionReport{SID: hex.EncodeToString(r.SID[:]), Key: "(unknown: its session_start is missing)",
				FirstSeq: r.Seq, sid: r.SID, pub: v.opts.Key, open: map[uint64]openCall{}, gapped: true}
			v.sessions[r.SID] = v.cur
			v.rep.Sessions = append(v.rep.Sessions, v.cur)
		}
		// The current session is always the one its sid maps to: look
		// the map up only for a record of another session.
		if v.cur == nil || v.cur.sid != r.SID && v.sessions[r.SID] != v.cur {
			v.invalid(r, "%s record outside its session", r.Kind)
			return false
		}
		if v.cur.Ended {
			v.invalid(r, "%s record after session_end", r.Kind)
		}
	}
	return true
}

// record counts r in its session, v.cur: its calls opened and answered,
// its end checked against what the session holds, its signature queued.
func (v *verifier) record(r *record.Record) {
	s := v.cur
	s.Records++
	s.LastSeq = r.Seq
	switch b := r.Body.(type) {
	case *record.Intent:
		s.Intents++
		if b.Call.Type != record.IDNull {
			s.open[r.Seq] = makeOpenCall(b.Call)
		}
	case *record.Outcome:
		s.Outcomes++
		c, ok := s.open[b.Intent]
		switch {
		case !ok && s.gapped && b.Intent < v.gapEnd:
			// Its intent may be in the missing records.
		case !ok:
			v.invalid(r, "outcome for intent seq %d, which is not an open intent of this session", b.Intent)
		case !c.matches(b.Call):
			v.invalid(r, "outcome call %s does not match intent seq %d's call %s", callText(b.Call), b.Intent, callText(c.call()))
		}
		delete(s.open, b.Intent)
	case *record.SessionEnd:
		s.Ended, s.EndReason = true, b.Reason
		if !s.gapped && (b.Counts.Intents != s.Intents || b.Counts.Outcomes != s.Outcomes) {
			v.invalid(r, "session_end counts %d intents and %d outcomes; the log holds %d and %d",
				b.Counts.Intents, b.Counts.Outcomes, s.Intents, s.Outcomes)
		}
		for seq := range s.open {
			if !s.gapped || seq >= v.gapEnd {
				v.invalid(r, "intent seq %d has no outcome in a session that ended", seq)
			}
		}
		if r.Sig == nil {
			v.invalid(r, "session_end is not signed")
		}
	}
	if r.Sig != nil {
		s.Unsigned = 0
		if s.pub != nil {
			msg := sigMsgs.Get().(*[]byte)
			*msg = append((*msg)[:0], r.Signed...)
			j := sigJob{file: v.file, pub: s.pub, msg: msg, line: v.line, seq: r.Seq}
			copy(j.sig[:], r.Sig)
			v.jobs <- j
		}
	} else {
		s.Unsigned++
	}
}

// closeSession records what the current session lacks, if anything.
func (v *verifier) closeSession() {
	s := v.cur
	if s == nil {
		return
	}
	v.cur = nil
	if s.Unsigned > 0 {
		v.problem(&v.rep.Gaps, s.LastSeq, true, "session %s: %d records after its last signature (unsigned tail: not trusted)", s.SID, s.Unsigned)
	}
	if !s.Ended {
		v.problem(&v.rep.Gaps, s.LastSeq, true, "session %s has no session_end (aegis stopped without closing it, or its tail was cut); %d intents without outcome", s.SID, len(s.open))
	}
}

func (v *verifier) finish() {
	v.closeSession()
	if v.expectSID != nil {
		v.problem(&v.rep.Gaps, 0, false, "log ends after a recovery, before its session_start")
	}
	close(v.jobs)
	v.wg.Wait()
	for _, p := range v.bad {
		if len(v.rep.Problems) < maxProblems {
			v.rep.Problems = append(v.rep.Problems, p)
		} else {
			v.rep.Dropped++
		}
	}
	v.file, v.line = "", 0
	if v.opts.Head != nil && !v.headFound {
		v.problem(&v.rep.Problems, 0, false, "log ends before the kept head %s: its tail was cut", v.opts.Head)
	}
	if v.opts.Head != nil && v.headFound && v.opts.HeadKey != nil {
		if s := v.sessions[v.headSID]; s == nil || s.pub == nil || !v.opts.HeadKey.Equal(s.pub) {
			v.problem(&v.rep.Problems, v.opts.Head.Seq, true, "the kept head's record is not in a session signed by the head's key %s", record.FormatPublicKey(v.opts.HeadKey))
		}
	}
	if v.rep.Records == 0 && len(v.rep.Problems) == 0 {
		v.problem(&v.rep.Gaps, 0, false, "no records")
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

// callText is c as its record writes it.
func callText(c record.Call) string {
	return string(record.AppendCall(nil, c)[len(`"call":`):])
}
