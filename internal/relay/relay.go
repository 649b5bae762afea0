package relay

import (
	"crypto/sha256"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
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

// Config configures a Relay.
type Config struct {
	Journal  *journal.Journal // required
	MaxFrame int              // longest line, either way; default DefaultMaxFrame
	// MaxPending bounds the calls in flight tracked; default
	// DefaultMaxPending. A call holds at most about 640 bytes whatever its
	// id (a key of at most 64 bytes, longer ones held as their SHA-256, the
	// id as its record abbreviates it, at most record.MaxValueBytes, and
	// a task request's task key, as long as an id's), so the table holds
	// at most MaxPending × 640 bytes: 40 MiB by default. MaxPending bounds
	// the live tasks, the rounds issued and the server requests awaiting
	// an answer too (package documentation, "Memory").
	// With a CallTimeout a call also keeps the id token its timeout answer
	// carries (at most 256 bytes), and as many calls that timed out are
	// remembered for their late answers (a key each). A call past the
	// bound evicts the oldest, recorded unanswered.
	MaxPending int
	// Gate enforces a policy; nil is pass-through. With a Gate,
	// Client is required: the writer the Downstream pump writes to, where
	// refusal frames go too (the relay serialises the two writers' lines).
	Gate   gate.Gate
	Client io.Writer
	// Caller is who sends this session's calls, as the Gate sees it
	// (gate.Call.Caller): the HTTP session's peer and principal, or the
	// local user over stdio.
	Caller gate.Caller
	// CallTimeout, when positive, is how long a tools/call may go
	// unanswered after its request was released to the child: then the
	// relay answers the client itself, with a CALL_TIMEOUT error, records
	// the outcome timeout, and drops the child's late answer (timeout.go).
	// Zero, the default, never times a call out and runs no timer. With a
	// CallTimeout, Client is required, as with a Gate.
	CallTimeout time.Duration
	// Clock times latency_ns and rate limits; default time.Now (monotonic).
	Clock func() time.Time
	// Approvals, when set, parks the calls an approve rule decides
	// (approve.go) instead of refusing them PENDING_APPROVAL: requires a
	// Gate. Server is the server's name (wrap's --name) their intents
	// bind the approval to.
	Approvals *approval.Table
	Server    string
	// ApprovalURL, when set with Approvals, asks for approvals inside
	// the protocol: a call of a 2026-07-28 request that parks is
	// answered input_required with a URL-mode elicitation of the address
	// ApprovalURL gives for its approval id ("": not asked), and the
	// client's retry is released by the approval (approve.go).
	ApprovalURL func(id string) string
	// Tools, when set, follows the client's tools/list requests and
	// records what each answer lists against the server's pins
	// (tools.go).
	Tools ToolLists
}

// Relay records the tools/calls of one session while two pumps move its
// bytes: Upstream (client→child) and Downstream (child→client). Its methods
// are safe to call from the pumps' goroutines and one controller.
type Relay struct {
	cfg Config
	j   *journal.Journal

	mu       sync.Mutex // guards what follows
	inFlight *callTable
	ended    bool
	counts   record.Counts
	out      record.Outcome // reused: Append encodes it at once

	// returning counts the answers released to the client that no call
	// has followed yet (under mu too): a client with calls in flight
	// answers responses with calls, which are then on their way (alone).
	returning int

	// With a Gate or a CallTimeout, every write to the client (a run of
	// the child's lines, refusal or timeout frames) holds wmu, so lines
	// never interleave.
	wmu    sync.Mutex
	shared bool // the relay writes to the client too: writes hold wmu

	// With a CallTimeout (timeout.go): the calls that timed out, whose
	// late answers are dropped (under mu), and the expiry timer.
	late *callTable
	tm   timeouts

	// Rounds, tasks and server requests (protocol.go), under mu.
	rounds    *roundTable // what input_required outcomes issued
	tasks     *taskTable  // the live tasks
	srv       *callTable  // the server's requests awaiting the client's answer
	stateless bool        // the session's revision has servers send no requests
	settled   bool        // initialize's answer settled the revision
	tk        record.Task // reused: Append encodes it at once
	principal []byte      // Config.Caller.Principal, hashed into match digests

	// Parking (approve.go): the calls awaiting approval by id (under
	// mu), the child's writer Upstream was given (under mu), and cmu,
	// which every write to the child holds, so that a released line never
	// splits a run.
	parked      map[string]*parkedCall
	parkedBytes int         // the lines parked holds
	asking      atomic.Bool // an approval was asked inside the protocol (approve_elicit.go)
	child       io.Writer
	cmu         sync.Mutex
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
	if cfg.Gate != nil && cfg.Client == nil {
		panic("relay: Config.Gate without Config.Client")
	}
	if cfg.Approvals != nil && cfg.Gate == nil {
		panic("relay: Config.Approvals without Config.Gate")
	}
	if cfg.CallTimeout > 0 && cfg.Client == nil {
		panic("relay: Config.CallTimeout without Config.Client")
	}
	r := &Relay{cfg: cfg, j: cfg.Journal, inFlight: newCallTable(cfg.MaxPending),
		shared: cfg.Gate != nil || cfg.CallTimeout > 0, late: newCallTable(cfg.MaxPending),
		rounds: newRoundTable(cfg.MaxPending), tasks: newTaskTable(cfg.MaxPending), srv: newCallTable(cfg.MaxPending),
		principal: []byte(cfg.Caller.Principal)}
	if cfg.CallTimeout > 0 {
		r.tm.init(cfg.CallTimeout)
	}
	return r
}

// digest is the SHA-256 of a frame's bytes without the '\n' that ends it.
func digest(line []byte) record.Digest {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	return sha256.Sum256(line)
}

// parallelDigest is the length from which a child's line is hashed on a
// goroutine of its own while it is classified: both read the whole line,
// and on two cores a long answer is recorded in the longer of the two
// times instead of their sum (the harness's sizes section).
var parallelDigest = 64 << 10

// lineDigest is the digest of the line being recorded, made once however
// many records name it (each answer of a batch, an anomaly).
type lineDigest struct {
	line []byte
	d    record.Digest
	ok   bool
	bg   chan record.Digest // a long line's digest in the making
}

// start begins line's digest: a long line's at once, on another
// goroutine, which wait must see end before the line's bytes are reused.
func (g *lineDigest) start(line []byte) {
	*g = lineDigest{line: line}
	if len(line) >= parallelDigest {
		bg := make(chan record.Digest, 1)
		g.bg = bg
		go func() { bg <- digest(line) }()
	}
}

// get returns the line's digest.
func (g *lineDigest) get() record.Digest {
	if !g.ok {
		if g.bg != nil {
			g.d = <-g.bg
		} else {
			g.d = digest(g.line)
		}
		g.ok, g.bg = true, nil
	}
	return g.d
}

// wait returns once no goroutine reads the line.
func (g *lineDigest) wait() {
	if g.bg != nil {
		g.get()
	}
}

// release waits until a run's records (n of them, the last at seq last)
// are as durable as b requires, then notes that its calls are released to
// the child now (latency_ns counts from then) or that answers are released
// to the client.
func (r *Relay) release(n int, last uint64, b journal.Barrier, calls []*call, answers int) error {
	if n == 0 {
		return nil
	}
	if err := r.j.Wait(last, b); err != nil {
		return err
	}
	if len(calls) > 0 || answers > 0 {
		r.mu.Lock()
		now := r.cfg.Clock()
		for _, c := range calls {
			c.written = now
		}
		if r.cfg.CallTimeout > 0 {
			r.startTimers(calls, now)
		}
		r.returning += answers
		r.mu.Unlock()
	}
	return nil
}

// alone reports whether nothing is on its way that would bring more
// frames while the current run waits: no call in flight but the k it
// added, and no answer released to the client that the client has not
// followed with a call.
func (r *Relay) alone(k int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inFlight.n <= k && r.returning == 0
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

// isCall reports whether m is a tools/call the relay records.
func isCall(m *frame.Message) bool {
	return m.IsToolCall && (m.Type == frame.Request || m.Type == frame.Notification)
}

// live reports why nothing more may be recorded or relayed: the session
// has ended, or the journal has failed (fail closed: once it has, nothing
// moves either way, recorded or not). Called with mu held.
func (r *Relay) live() error {
	if r.ended {
		return ErrEnded
	}
	return r.j.Err()
}

// callOf is the id of m as the journal records it.
func callOf(m *frame.Message) record.Call {
	if !m.HasID {
		return record.Call{Type: record.IDNull}
	}
	switch m.ID.Type {
	case frame.IDNumber:
		return record.Call{Type: record.IDNumber, Text: m.ID.Raw}
	case frame.IDString:
		return record.Call{Type: record.IDString, Text: m.ID.Str}
	}
	return record.Call{Type: record.IDNull}
}

// The group commit's hints (journal.Hint): an intent awaits its outcome,
// and an outcome answers the intent at seq.
var awaits = journal.Hint{Awaits: true}

func answers(seq uint64) journal.Hint { return journal.Hint{Answers: true, Answered: seq} }

// appendOutcome appends the outcome of c. Called with mu held. resp is the
// response frame's digest, or nil when none came back.
func (r *Relay) appendOutcome(c *call, resp *lineDigest, status, reason string, now time.Time) (uint64, error) {
	r.outcome(c, resp, status, reason, now)
	return r.commitOutcome(c)
}

// End stops recording: the pumps' later runs fail with ErrEnded. Every call
// still in flight gets an outcome with status and reason (unanswered or
// seccomp_killed), and every live task an unfinished end (via
// session_end). It returns the session's counts, for its session_end,
// and the first error appending those records met.
func (r *Relay) End(status, reason string) (record.Counts, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	r.tm.stop()
	for _, c := range r.inFlight.drain() {
		if c.op != frame.OpToolsCall {
			continue // a request without an intent
		}
		if _, err := r.appendOutcome(c, nil, status, reason, time.Time{}); err != nil {
			return r.counts, err
		}
	}
	if err := r.endParked(); err != nil {
		return r.counts, err
	}
	for r.tasks.head != nil {
		if _, err := r.endTask(r.tasks.head, record.ViaSessionEnd, nil, record.StatusUnfinished, r.cfg.Clock()); err != nil {
			return r.counts, err
		}
	}
	return r.counts, nil
}

// Note appends a record about the session rather than about a frame (a
// policy_reload), in order with the pumps' records, and waits until it is
// written. It fails with ErrEnded once End has run, so that nothing follows
// session_end.
func (r *Relay) Note(b record.Body) error {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return ErrEnded
	}
	seq, err := r.j.Append(b)
	var void []string
	if pr, ok := b.(*record.PolicyReload); ok && err == nil && pr.Status == "applied" && r.parked != nil {
		void = r.voidParked(pr.Set)
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	err = r.j.Wait(seq, journal.BeforeRequest)
	if err == nil {
		r.expireVoid(void)
	}
	return err
}

// Counts returns the session's counts so far.
func (r *Relay) Counts() record.Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}
