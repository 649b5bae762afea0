package relay

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal"
)

// Errors of the relay; classify with errors.Is. Journal failures arrive as
// the journal's own errors (journal.ErrIO).
var (
	// ErrFrameTooLarge: a line grew past Config.MaxFrame without a '\n'.
	// Nothing of it was relayed.
	ErrFrameTooLarge = errors.New("relay: frame longer than the maximum frame size")
	// ErrEnded: the session was ended (End) while a pump still ran.
	ErrEnded = errors.New("relay: session ended")
)

// Defaults of Config.
const (
	DefaultMaxFrame   = 64 << 20
	DefaultMaxPending = 1 << 16
	readSize          = 64 << 10
)

// Gate decides the policy verdict of a tools/call before its frame may reach
// the child. The relay calls it from the client→child pump only. A nil Gate
// is pass-through: every call is relayed, verdict "pass-through".
type Gate interface {
	Decide(tool []byte, hasTool bool, malformed string) Decision
}

// Decision is a Gate's verdict, as recorded in the intent's "policy".
type Decision struct {
	Verdict string // journal.Verdict*
	Rule    string
	Set     string
}

// Config configures a Relay.
type Config struct {
	Journal    *journal.Journal // required
	MaxFrame   int              // longest line, either way; default DefaultMaxFrame
	MaxPending int              // calls in flight tracked; default DefaultMaxPending
	Gate       Gate
	// Clock times latency_ns; default time.Now (monotonic).
	Clock func() time.Time
}

// Relay records the tools/calls of one session while two pumps move its
// bytes: Upstream (client→child) and Downstream (child→client). Its methods
// are safe to call from the two pump goroutines and one controller.
type Relay struct {
	cfg Config
	j   *journal.Journal

	mu     sync.Mutex // guards what follows
	pend   *pending
	ended  bool
	counts journal.Counts
}

// New returns a Relay.
func New(cfg Config) *Relay {
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Relay{cfg: cfg, j: cfg.Journal, pend: newPending(cfg.MaxPending)}
}

// digest is the SHA-256 of a frame's bytes without the '\n' that ends it.
func digest(line []byte) journal.Digest {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	return sha256.Sum256(line)
}

// Upstream relays client→child until the client's EOF (nil) or an error.
// Every tools/call in a run of lines gets its intent appended, and the run is
// written to dst only once the intents are as durable as the level requires
// before a request. Lines are written exactly as read.
func (r *Relay) Upstream(src io.Reader, dst io.Writer) error {
	rd := frame.NewReader(src, readSize, r.cfg.MaxFrame)
	var (
		cl    frame.Classifier
		f     frame.Frame
		in    journal.Intent
		calls []*call
	)
	for {
		chunk, err := rd.Next()
		if len(chunk) > 0 {
			last, n, rerr := r.recordRequests(chunk, &cl, &f, &in, &calls)
			if rerr != nil {
				return rerr
			}
			if n > 0 {
				if err := r.j.Wait(last, journal.BeforeRequest); err != nil {
					return err
				}
				r.mu.Lock()
				now := r.cfg.Clock()
				for _, c := range calls {
					c.written = now
				}
				r.mu.Unlock()
			}
			if _, werr := dst.Write(chunk); werr != nil {
				return fmt.Errorf("relay: write to child: %w", werr)
			}
		}
		if err != nil {
			return pumpErr(err)
		}
	}
}

func pumpErr(err error) error {
	switch {
	case err == io.EOF:
		return nil
	case errors.Is(err, frame.ErrFrameTooLarge):
		return ErrFrameTooLarge
	}
	return err
}

// recordRequests appends the records that the lines of chunk need and
// returns the last seq and how many there were. calls receives the calls it
// added to the pending table.
func (r *Relay) recordRequests(chunk []byte, cl *frame.Classifier, f *frame.Frame, in *journal.Intent, calls *[]*call) (uint64, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return 0, 0, ErrEnded
	}
	// Fail closed: once the journal has failed, nothing more moves either
	// way, recorded or not.
	if err := r.j.Err(); err != nil {
		return 0, 0, err
	}
	*calls = (*calls)[:0]
	var last uint64
	n := 0
	for rest := chunk; len(rest) > 0; {
		var line []byte
		line, rest = frame.NextLine(rest)
		r.counts.FramesIn++
		cl.Classify(line, f)
		// Not exactly one JSON value, or a batch too long to classify whole:
		// a lenient child may still read calls in it.
		if f.Anomaly != "" {
			seq, err := r.j.Append(&journal.Anomaly{RequestDigest: digest(line), Bytes: len(line), Reason: f.Anomaly, Forwarded: true})
			if err != nil {
				return 0, 0, err
			}
			r.counts.Anomalies++
			last, n = seq, n+1
		}
		switch f.Kind {
		case frame.Single, frame.Batch:
			var d journal.Digest
			hashed := false
			for i := range f.Msgs {
				m := &f.Msgs[i]
				if !m.IsToolCall || (m.Type != frame.Request && m.Type != frame.Notification) {
					continue
				}
				if !hashed {
					d, hashed = digest(line), true
				}
				*in = journal.Intent{Call: callOf(m), Tool: m.Tool, HasTool: m.HasTool, RequestDigest: d, Malformed: m.Malformed}
				if f.Kind == frame.Batch {
					in.BatchIndex, in.BatchSize = i, len(f.Msgs)
				}
				if g := r.cfg.Gate; g != nil {
					dec := g.Decide(m.Tool, m.HasTool, m.Malformed)
					in.Verdict, in.Rule, in.Set = dec.Verdict, dec.Rule, dec.Set
				}
				seq, err := r.j.Append(in)
				if err != nil {
					return 0, 0, err
				}
				r.counts.Intents++
				last, n = seq, n+1
				if in.Call.Type == journal.IDNull || m.Malformed != "" && m.ID.Type == frame.IDInvalid {
					continue // no answer will come back to match
				}
				c, evicted := r.pend.add(m.ID.Key, in.Call, seq)
				*calls = append(*calls, c)
				if evicted != nil {
					seq, err := r.appendOutcome(evicted, nil, journal.StatusUnanswered, "evicted: more calls in flight than the pending table holds", time.Time{})
					if err != nil {
						return 0, 0, err
					}
					last = seq
				}
			}
		}
	}
	return last, n, nil
}

// callOf is the id of m as the journal records it.
func callOf(m *frame.Message) journal.Call {
	if !m.HasID {
		return journal.Call{Type: journal.IDNull}
	}
	switch m.ID.Type {
	case frame.IDNumber:
		return journal.Call{Type: journal.IDNumber, Text: m.ID.Raw}
	case frame.IDString:
		return journal.Call{Type: journal.IDString, Text: m.ID.Str}
	}
	return journal.Call{Type: journal.IDNull}
}

// appendOutcome appends the outcome of c. Called with mu held. resp is the
// response frame, or nil when none came back.
func (r *Relay) appendOutcome(c *call, resp []byte, status, reason string, now time.Time) (uint64, error) {
	o := journal.Outcome{Call: c.id, Intent: c.seq, Status: status, Reason: reason}
	if resp != nil {
		o.ResponseDigest, o.HasResponse = digest(resp), true
	}
	if !c.written.IsZero() && !now.IsZero() {
		o.LatencyNS = now.Sub(c.written).Nanoseconds()
	}
	seq, err := r.j.Append(&o)
	if err != nil {
		return 0, err
	}
	r.counts.Outcomes++
	if status == journal.StatusUnanswered || status == journal.StatusSeccompKilled {
		r.counts.Unanswered++
	}
	r.pend.release(c)
	return seq, nil
}

// Downstream relays child→client until the child's EOF (nil) or an error.
// A response whose id matches a call in flight gets its outcome appended,
// and the run of lines carrying it is written to dst only once the outcome
// is as durable as the level requires before a response. If the client is
// gone, Downstream keeps reading and recording until the child's EOF and
// then returns the write error.
func (r *Relay) Downstream(src io.Reader, dst io.Writer) error {
	rd := frame.NewReader(src, readSize, r.cfg.MaxFrame)
	var (
		cl   frame.Classifier
		f    frame.Frame
		werr error
	)
	for {
		chunk, err := rd.Next()
		if len(chunk) > 0 {
			last, n, rerr := r.recordResponses(chunk, &cl, &f)
			if rerr != nil {
				return rerr
			}
			if n > 0 {
				if err := r.j.Wait(last, journal.BeforeResponse); err != nil {
					return err
				}
			}
			if werr == nil {
				if _, werr = dst.Write(chunk); werr != nil {
					werr = fmt.Errorf("relay: write to client: %w", werr)
				}
			}
		}
		if err != nil {
			if err = pumpErr(err); err == nil {
				err = werr
			}
			return err
		}
	}
}

func (r *Relay) recordResponses(chunk []byte, cl *frame.Classifier, f *frame.Frame) (uint64, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return 0, 0, ErrEnded
	}
	// Fail closed: once the journal has failed, nothing more moves either
	// way, recorded or not.
	if err := r.j.Err(); err != nil {
		return 0, 0, err
	}
	var last uint64
	n := 0
	now := time.Time{}
	for rest := chunk; len(rest) > 0; {
		var line []byte
		line, rest = frame.NextLine(rest)
		r.counts.FramesOut++
		if r.pend.n == 0 {
			continue // nothing to match: no need to parse
		}
		cl.Classify(line, f)
		for i := range f.Msgs {
			m := &f.Msgs[i]
			if m.Type != frame.Response || !m.HasID || m.Malformed != "" {
				continue
			}
			c := r.pend.take(m.ID.Key)
			if c == nil {
				continue
			}
			if now.IsZero() {
				now = r.cfg.Clock()
			}
			status := journal.StatusOK
			switch {
			case m.IsError:
				status = journal.StatusRPCError
			case m.ToolError:
				status = journal.StatusToolError
			}
			seq, err := r.appendOutcome(c, line, status, "", now)
			if err != nil {
				return 0, 0, err
			}
			last, n = seq, n+1
		}
	}
	return last, n, nil
}

// End stops recording: the pumps' later runs fail with ErrEnded. Every call
// still in flight gets an outcome with status and reason (unanswered or
// seccomp_killed). It returns the session's counts and the last seq
// appended (ok false if none).
func (r *Relay) End(status, reason string) (journal.Counts, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	for _, c := range r.pend.drain() {
		if _, err := r.appendOutcome(c, nil, status, reason, time.Time{}); err != nil {
			return r.counts, err
		}
	}
	return r.counts, nil
}

// Counts returns the session's counts so far.
func (r *Relay) Counts() journal.Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}
