package witness

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegisrelay/aegis/journal/tlog"
)

// File extensions beside a checkpoint file: part of the format (doc.go).
const (
	// WitnessedExt ends the history of witnessed checkpoints.
	WitnessedExt = ".witnessed"
	// StateExt ends the file of the witnesses' state at the end of a
	// session.
	StateExt = ".witnesses"
)

// Defaults of Options, each used where the option is zero.
const (
	DefaultTimeout    = 3 * time.Second
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	DefaultLogEvery   = 30 * time.Second
	DefaultInterval   = 2 * time.Second
)

// maxEntries bounds the checkpoints whose cosignatures are gathered at
// once (a witness that is slower than another cosigns an older one).
const maxEntries = 8

// Options configure a Submitter.
type Options struct {
	// Witnesses are the witnesses checkpoints are submitted to.
	Witnesses []Witness
	// Quorum is how many witnesses' cosignatures make a checkpoint
	// witnessed (written to the witnessed history). Default 0: all.
	Quorum int
	// Log is the audit log, read for consistency proofs.
	Log string
	// File is the checkpoint file: the Submitter appends witnessed
	// checkpoints to File+WitnessedExt and writes File+StateExt at Close.
	File string
	// Key is the log's public key: the origin and key a witness that
	// does not know the log is told to add.
	Key ed25519.PublicKey
	// Timeout bounds each request, the probe at Start, and the last
	// round at Close. Default DefaultTimeout.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed
	// submission is tried again, doubling from one to the other.
	MinBackoff, MaxBackoff time.Duration
	// Interval is the least time between two submissions to one
	// witness, but the last at Close: each may read the log for its
	// proof, and a witness's cosignature every few seconds is all a
	// reader needs. Default DefaultInterval.
	Interval time.Duration
	// LogEvery is the least time between two lines about one witness
	// that stays in the same failing state. Default DefaultLogEvery.
	LogEvery time.Duration
	// Logf prints a line for the user (wrap: stderr). Default: none.
	Logf func(format string, args ...any)
	// HTTP is the client requests go through (its CheckRedirect is
	// ignored: redirects are never followed). Default: one of its own,
	// which reads at most 64 KiB of an answer's header.
	HTTP *http.Client
	// Strict makes Start wait, at most Timeout, for the witnesses'
	// answers about the log's last checkpoint and return ErrAhead or
	// ErrProof when one says the log was rolled back or forked. Those
	// answers are not authenticated (the protocol signs only
	// cosignatures): anyone who can answer in a witness's place can
	// make them. Default false: Start waits for no witness, and such an
	// answer is said (Logf) and recorded, and the session goes on.
	Strict bool
}

// A Submitter hands a log's checkpoints to its witnesses and keeps what
// they cosign (doc.go). Offer never blocks: each witness has one
// goroutine that submits the latest checkpoint offered, and a checkpoint
// offered while one is in flight replaces any not yet taken, so nothing
// queues. Its methods are safe for concurrent use; Close is called once.
type Submitter struct {
	o      Options
	hc     *http.Client
	prover *prover
	latest atomic.Pointer[offer]
	ws     []*peer
	final  chan struct{} // closed by Close
	wg     sync.WaitGroup

	mu      sync.Mutex // guards entries, hist, and every peer's reported state
	entries []*entry
	hist    *os.File
	histErr error
}

// offer is a checkpoint as the journal wrote it: its signed note and
// what the note says.
type offer struct {
	note []byte
	cp   tlog.Checkpoint
}

// entry gathers the cosignatures of one checkpoint.
type entry struct {
	o       *offer
	sigs    [][]byte // by witness index
	n       int
	written int
}

// peer is one witness and what the Submitter knows of it.
type peer struct {
	i    int
	w    Witness
	wake chan struct{} // buffered 1

	// Owned by the peer's goroutine.
	known     bool // whether size and root are the witness's tree
	size      uint64
	root      tlog.Hash
	rootKnown bool
	backoff   time.Duration

	// Guarded by Submitter.mu.
	state    State
	detail   string
	start    State
	cosigned uint64
	attempts int
	failures int
	logged   time.Time
	loggedAs State
}

// State is what a witness did with the last checkpoint submitted to it.
type State string

// States: part of the state file's format (doc.go).
const (
	StateNone        State = "none"            // nothing submitted yet
	StateOK          State = "ok"              // it cosigned
	StateUnreachable State = "unreachable"     // no answer (refused, timed out)
	StateUnknownLog  State = "unknown-log"     // 404/403: it does not know this log or its key
	StateAhead       State = "ahead"           // it says it holds a larger tree: rollback, fork, or not its word
	StateFork        State = "fork"            // 422: it says its tree is not this log's
	StateBadCosig    State = "bad-cosignature" // 200 without a valid cosignature by its key
	StateError       State = "error"           // another answer, or no proof could be made
)

// NewSubmitter opens File+WitnessedExt for appending and starts one
// goroutine per witness; nothing is submitted before Start or Offer.
func NewSubmitter(o Options) (*Submitter, error) {
	if len(o.Witnesses) == 0 {
		return nil, errors.New("witness: no witness")
	}
	if o.Quorum <= 0 {
		o.Quorum = len(o.Witnesses)
	}
	if o.Quorum > len(o.Witnesses) {
		return nil, fmt.Errorf("witness: a quorum of %d among %d witnesses", o.Quorum, len(o.Witnesses))
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.LogEvery <= 0 {
		o.LogEvery = DefaultLogEvery
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	hc := o.HTTP
	if hc == nil {
		// The answer's header is bounded as its body is (maxAnswer);
		// the default transport's bound is megabytes.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxResponseHeaderBytes = maxAnswer
		hc = &http.Client{Timeout: o.Timeout, Transport: tr}
	}
	hist, err := os.OpenFile(o.File+WitnessedExt, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	s := &Submitter{o: o, hc: hc, prover: &prover{path: o.Log}, final: make(chan struct{}), hist: hist}
	for i, w := range o.Witnesses {
		s.ws = append(s.ws, &peer{i: i, w: w, wake: make(chan struct{}, 1), state: StateNone, start: StateNone})
	}
	return s, nil
}

// Start starts the witnesses' goroutines. With a note (the log's last
// checkpoint before the session; cp its content), each first submits
// it: the probe of wrap's start, whose outcome is the witness's start
// state. Without Options.Strict, Start returns at once: what a witness
// answers is said and recorded as it comes, never a reason to stop, for
// nothing authenticates it. With Strict, Start waits at most Timeout
// for the answers and returns ErrAhead if a witness says it holds a
// larger tree of the log (the log or its checkpoint file was rolled
// back) and ErrProof if one refuses the proof from the tree it holds
// (a fork), naming the witness; an answer later than Timeout is
// recorded, not returned. With a nil note (a log with no checkpoint
// yet) nothing is submitted before Offer.
func (s *Submitter) Start(note []byte, cp tlog.Checkpoint) error {
	var o *offer
	if note != nil {
		o = &offer{note: note, cp: cp}
		s.latest.Store(o)
	}
	res := make(chan error, len(s.ws)) // never blocks a goroutine
	for _, p := range s.ws {
		s.wg.Go(func() {
			var last time.Time
			if o != nil {
				last = time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
				err := s.attempt(ctx, p, o, true)
				cancel()
				s.mu.Lock()
				p.start = p.state
				s.mu.Unlock()
				if err != nil {
					err = fmt.Errorf("witness %s (%s): %w", p.w.Name(), p.w.URL, err)
				}
				res <- err
			}
			s.run(p, last)
		})
	}
	if o == nil || !s.o.Strict {
		return nil
	}
	t := time.NewTimer(s.o.Timeout)
	defer t.Stop()
	var errs []error
	for range s.ws {
		select {
		case err := <-res:
			if errors.Is(err, ErrAhead) || errors.Is(err, ErrProof) {
				errs = append(errs, err)
			}
		case <-t.C:
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

// Offer hands the Submitter a checkpoint the journal wrote: its signed
// note (kept; the caller must not change it) and its content. It never
// blocks; the witnesses get the latest one offered.
func (s *Submitter) Offer(note []byte, cp tlog.Checkpoint) {
	s.latest.Store(&offer{note: note, cp: cp})
	for _, p := range s.ws {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// run is a witness's goroutine: it submits the latest checkpoint until
// the witness has cosigned it, waiting MinBackoff, doubling to
// MaxBackoff, after each failure; after Close it tries once more, within
// Timeout, and returns. last is when the probe at Start began, if any:
// it counts as a submission.
func (s *Submitter) run(p *peer, last time.Time) {
	final := false
	for {
		if !final {
			select {
			case <-p.wake:
			case <-s.final:
				final = true
			}
		}
		for {
			o := s.latest.Load()
			if o == nil || p.known && p.size == o.cp.Size && p.root == o.cp.Root {
				break
			}
			// At most one submission per Interval (longer after a long
			// read of the log: prover.pause), but the last: the
			// checkpoint submitted is the latest when the wait ends.
			if d := time.Until(last.Add(s.prover.pause(s.o.Interval))); d > 0 && !final {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-s.final:
					t.Stop()
					final = true
				}
				continue
			}
			last = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
			err := s.attempt(ctx, p, o, false)
			cancel()
			if err == nil {
				p.backoff = 0
				continue
			}
			if final {
				break
			}
			p.backoff = min(max(2*p.backoff, s.o.MinBackoff), s.o.MaxBackoff)
			t := time.NewTimer(p.backoff)
			select {
			case <-t.C:
			case <-s.final:
				t.Stop()
				final = true
			}
		}
		if final {
			return
		}
	}
}

// maxConflicts bounds the 409s one attempt follows: the witness's size
// can move between two requests only if another submitter feeds it.
const maxConflicts = 3

// attempt submits o to p, starting from the tree the witness is known to
// hold (or the empty tree, which a 409 corrects), and records the
// outcome; start says it is the probe at Start.
//
// A size the witness names is kept only while it is at most the
// checkpoint's: a larger one (a rollback, or a lie) is forgotten, so
// that the next submission asks again instead of taking one
// unauthenticated answer as the witness's state for the whole session.
func (s *Submitter) attempt(ctx context.Context, p *peer, o *offer, start bool) error {
	var err error
	for range maxConflicts {
		var proof []tlog.Hash
		old := tlog.Checkpoint{Origin: o.cp.Origin, Size: 0, Root: tlog.EmptyRoot}
		if p.known {
			old.Size = p.size
			if p.size > o.cp.Size {
				p.known = false
				err = fmt.Errorf("%w: it holds %d records, this log's checkpoint %d", ErrAhead, p.size, o.cp.Size)
				break
			}
			if !p.rootKnown {
				if p.root, err = s.prover.rootAt(p.size); err != nil {
					err = fmt.Errorf("the root of the log's first %d records: %v", p.size, err)
					break
				}
				p.rootKnown = true
			}
			old.Root = p.root
			if proof, err = s.prover.proof(old, o.cp); err != nil {
				err = fmt.Errorf("the consistency proof from %d to %d records: %v", old.Size, o.cp.Size, err)
				break
			}
		}
		var cos []byte
		cos, err = p.w.AddCheckpoint(ctx, s.hc, old.Size, proof, o.note, o.cp.Size)
		var ce *ConflictError
		if errors.As(err, &ce) {
			if ce.Size > o.cp.Size {
				p.known = false
				err = fmt.Errorf("%w: it says it holds %d records, this log's checkpoint %d: the log was rolled back, or forked, or the answer is not the witness's", ErrAhead, ce.Size, o.cp.Size)
				break
			}
			p.known, p.size, p.rootKnown = true, ce.Size, false
			continue
		}
		if err == nil {
			p.known, p.size, p.root, p.rootKnown = true, o.cp.Size, o.cp.Root, true
			s.cosigned(p, o, cos)
			return nil
		}
		if errors.Is(err, ErrProof) {
			err = fmt.Errorf("%w: the witness's tree at %d records is not this log's first %d: the log forked", err, old.Size, old.Size)
			p.known = false
		}
		break
	}
	s.failed(p, o, err, start)
	return err
}

// cosigned records p's cosignature of o, and writes o to the witnessed
// history when its cosignatures reach the quorum or grow beyond it.
func (s *Submitter) cosigned(p *peer, o *offer, lines []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.attempts++
	if p.state != StateOK && p.state != StateNone {
		s.o.Logf("witness %s (%s) cosigns again, at %d records", p.w.Name(), p.w.URL, o.cp.Size)
	}
	p.state, p.detail, p.cosigned, p.loggedAs = StateOK, "", o.cp.Size, StateOK
	var e *entry
	for _, x := range s.entries {
		if x.o.cp == o.cp {
			e = x
		}
	}
	if e == nil {
		if len(s.entries) == maxEntries {
			s.entries = s.entries[1:]
		}
		e = &entry{o: o, sigs: make([][]byte, len(s.ws))}
		s.entries = append(s.entries, e)
	}
	if e.sigs[p.i] == nil {
		e.sigs[p.i] = lines
		e.n++
	}
	if e.n < s.o.Quorum || e.n <= e.written {
		return
	}
	buf := append([]byte(nil), o.note...)
	for _, l := range e.sigs {
		buf = append(buf, l...)
	}
	_, err := s.hist.Write(buf)
	if err == nil {
		err = s.hist.Sync()
	}
	if err != nil {
		if s.histErr == nil {
			s.o.Logf("witness: cannot record witnessed checkpoints in %s: %v", s.hist.Name(), err)
		}
		s.histErr = err
		return
	}
	e.written = e.n
}

// failed records a failed submission and says so, at most once per
// LogEvery while the witness stays in the same state; start says it is
// the probe at Start.
func (s *Submitter) failed(p *peer, o *offer, err error, start bool) {
	st := StateError
	switch {
	case errors.Is(err, ErrAhead):
		st = StateAhead
	case errors.Is(err, ErrProof):
		st = StateFork
	case errors.Is(err, ErrCosignature):
		st = StateBadCosig
	case errors.Is(err, ErrUnknownLog):
		st = StateUnknownLog
	case errors.Is(err, ErrUnreachable):
		st = StateUnreachable
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.attempts++
	p.failures++
	p.state, p.detail = st, err.Error()
	now := time.Now()
	if st == p.loggedAs && now.Sub(p.logged) < s.o.LogEvery {
		return
	}
	p.logged, p.loggedAs = now, st
	msg := fmt.Sprintf("witness %s (%s) has not cosigned %s at %d records: %v", p.w.Name(), p.w.URL, o.cp.Origin, o.cp.Size, err)
	switch st {
	case StateUnknownLog:
		if vkey, kerr := tlog.VerifierKey(o.cp.Origin, s.o.Key); kerr == nil {
			msg += fmt.Sprintf("; its operator adds the log with its origin %s and key %s (litewitness: witnessctl add-log -origin %s, then witnessctl add-key -origin %s -key %s)", o.cp.Origin, vkey, o.cp.Origin, o.cp.Origin, vkey)
		}
	case StateAhead, StateFork:
		msg += "; nothing authenticates this answer (the protocol signs only cosignatures)"
		if !(start && s.o.Strict) {
			msg += ": the session goes on, and the checkpoint is submitted again"
		}
	case StateUnreachable, StateError, StateBadCosig:
		msg += "; the session goes on, and the checkpoint is submitted again"
	}
	s.o.Logf("%s", msg)
}
