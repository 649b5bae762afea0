package relay

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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

// Config configures a Relay.
type Config struct {
	Journal  *journal.Journal // required
	MaxFrame int              // longest line, either way; default DefaultMaxFrame
	// MaxPending bounds the calls in flight tracked; default
	// DefaultMaxPending. A call holds at most about 512 bytes whatever its
	// id (a key of at most 64 bytes, longer ones held as their SHA-256, and
	// the id as its record abbreviates it, at most journal.MaxValueBytes),
	// so the table holds at most MaxPending × 512 bytes: 32 MiB by default.
	// A call past the bound evicts the oldest, recorded unanswered.
	MaxPending int
	// Gate enforces a policy (SPEC §5); nil is pass-through. With a Gate,
	// Client is required: the writer the Downstream pump writes to, where
	// refusal frames go too (the relay serialises the two writers' lines).
	Gate   Gate
	Client io.Writer
	// Clock times latency_ns and rate limits; default time.Now (monotonic).
	Clock func() time.Time
}

// Relay records the tools/calls of one session while two pumps move its
// bytes: Upstream (client→child) and Downstream (child→client). Its methods
// are safe to call from the pumps' goroutines and one controller.
type Relay struct {
	cfg Config
	j   *journal.Journal

	mu     sync.Mutex // guards what follows
	pend   *pending
	ended  bool
	counts journal.Counts
	out    journal.Outcome // reused: Append encodes it at once

	// returning counts the answers released to the client that no call
	// has followed yet (under mu too): a client with calls in flight
	// answers responses with calls, which are then on their way (alone).
	returning int

	// With a Gate, every write to the client (a run of the child's lines,
	// or refusal frames) holds wmu, so lines never interleave.
	wmu sync.Mutex
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
	return &Relay{cfg: cfg, j: cfg.Journal, pend: newPending(cfg.MaxPending)}
}

// digest is the SHA-256 of a frame's bytes without the '\n' that ends it.
func digest(line []byte) journal.Digest {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	return sha256.Sum256(line)
}

// upstream is the client→child pump's state, reused from run to run.
type upstream struct {
	cl    frame.Classifier
	f     frame.Frame
	in    journal.Intent
	calls []*call // calls this run added to the pending table

	// With a Gate only.
	drops   [][2]int   // byte ranges of the run that must not reach the child
	answer  []byte     // refusal frames for the client, each ending in '\n'
	refused bool       // a refusal's records were appended this run
	decs    []Decision // the current frame's decisions, one per call
	refs    []refusal  // the current frame's refused calls that get an outcome
}

// refusal is a call of a refused frame: its intent's seq, its id, and
// whether it was refused itself or for a sibling's sake.
type refusal struct {
	seq  uint64
	call journal.Call
	own  bool
}

// drop marks chunk[start:end] as not to be relayed.
func (st *upstream) drop(start, end int) {
	if n := len(st.drops); n > 0 && st.drops[n-1][1] == start {
		st.drops[n-1][1] = end
		return
	}
	st.drops = append(st.drops, [2]int{start, end})
}

// Upstream relays client→child until the client's EOF (nil) or an error.
// Every tools/call in a run of lines gets its intent appended, and the run is
// written to dst only once the intents are as durable as the level requires
// before a request. Lines are written exactly as read, in the order read.
//
// The pump reads on while it waits (forward.go): a goroutine it starts
// reads and records the runs, and the calling goroutine writes each one
// once its records are durable. With calls in flight a client sends its
// requests one by one; those that arrive while a sync is pending are then
// recorded in time to share it, instead of waiting for the sync after it.
// Read-ahead: when a run has been recorded and more bytes are already
// waiting in src (a pipe or socket: FIONREAD), the next runs are recorded
// too before the calling goroutine waits for any of them, so that one
// commit group covers them all. Nothing is written before every record of
// it and of the runs before it is durable, and runs are written in the
// order read, so ordering and byte identity are as without it.
//
// Upstream returns as soon as it fails, even while its reading goroutine
// is blocked in a read of src: that goroutine records and writes nothing
// more, and ends when the read returns.
//
// With a Gate, a line is written only if it is exactly one JSON value (white
// space around it aside) and no tools/call in it is refused: empty lines are
// dropped, other lines that are not one value are anomalies and dropped; the records of a refusal are as durable as
// the level requires before a response when its refusal frame is written
// to Config.Client. Lines that are relayed are still written exactly as read.
func (r *Relay) Upstream(src io.Reader, dst io.Writer) error {
	fw := newForwarder(r, func(h *run) error { return r.relayRun(dst, h.chunk, h.drops, h.answer) }, readable(src))
	go r.readRequests(src, dst, fw)
	return fw.run()
}

// readRequests is Upstream's reader: it reads and records runs of lines
// and hands them to fw, until the end of src or an error.
func (r *Relay) readRequests(src io.Reader, dst io.Writer, fw *forwarder) {
	defer close(fw.readerDone)
	rd := frame.NewReader(src, readSize, r.cfg.MaxFrame)
	st := &upstream{}
	more := readable(src)
	for {
		chunk, err := rd.Next()
		if fw.stopped() {
			return
		}
		if len(chunk) > 0 {
			last, n, rerr := r.recordRequests(chunk, st)
			if rerr != nil {
				fw.abortWith(rerr)
				return
			}
			long := len(chunk) > readSize
			barrier := journal.BeforeRequest
			if st.refused {
				barrier = journal.BeforeResponse
			}
			switch {
			case fw.idle() && (n == 0 || r.alone(len(st.calls)) && (more == nil || !more())):
				// Nothing ahead of it, and no other call in flight whose
				// requests could arrive meanwhile: relay it here, as a
				// pump without a forwarder would, rather than wake the
				// forwarder for it (a thread's wake-up, on a lone call's
				// path).
				if err := r.release(n, last, barrier, st.calls, 0); err != nil {
					fw.abortWith(err)
					return
				}
				if werr := r.relayRun(dst, chunk, st.drops, st.answer); werr != nil {
					fw.abortWith(werr)
					return
				}
				r.spare(n, more)
			default:
				h := fw.take(chunk, long)
				if h == nil {
					return
				}
				st.fill(h, last, n, barrier)
				// More requests already waiting: record them too before
				// the forwarder waits (with calls in flight a client sends
				// them one by one).
				if !fw.send(h, !long && err == nil && more != nil && more()) {
					return
				}
			}
			if long {
				// A line longer than the Reader's buffer: st (its Frame,
				// intent and Classifier) aliases it, and must not keep it
				// alive once the Reader drops it.
				*st = upstream{}
			}
		}
		if err != nil {
			fw.finish(pumpErr(err))
			return
		}
	}
}

// fill tells h, a run of st's, what the forwarder needs to know of it: its
// records, the barrier they wait for, and what to drop, answer and mark
// written.
func (st *upstream) fill(h *run, last uint64, n int, b journal.Barrier) {
	h.n, h.last, h.barrier = n, last, b
	h.drops = append(h.drops, st.drops...)
	h.answer = append(h.answer, st.answer...)
	h.calls = append(h.calls, st.calls...)
}

// maxReadAhead bounds the bytes a pump holds, recorded and not yet
// relayed, while it reads on.
const maxReadAhead = 1 << 20

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
	return r.pend.n <= k && r.returning == 0
}

// relayRun writes a run's refusal frames to the client, then its lines but
// the dropped ones to the child: on the client's stream a refusal comes
// before the answer to any request sent after it.
func (r *Relay) relayRun(dst io.Writer, chunk []byte, drops [][2]int, answer []byte) error {
	if len(answer) > 0 {
		r.writeClient(answer)
	}
	if err := writeKept(dst, chunk, drops); err != nil {
		return fmt.Errorf("relay: write to child: %w", err)
	}
	return nil
}

// spare has the journal do the signing work of the records just relayed
// ahead of time for the next ones, when nothing more is waiting to be read:
// the forwarder would only wait for its reader. (journal.Spare.)
func (r *Relay) spare(recorded int, more func() bool) {
	if recorded > 0 && (more == nil || !more()) {
		r.j.Spare(recorded)
	}
}

// readable returns a function that reports whether r has bytes to read
// right now (FIONREAD, which Linux calls TIOCINQ; SIOCINQ on sockets), or
// nil where it cannot tell.
func readable(r io.Reader) func() bool {
	sc, ok := r.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	n := 0
	probe := func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }
	return func() bool { // made once per pump: a call allocates nothing
		n = 0
		rc.Control(probe)
		return n > 0
	}
}

// writeKept writes chunk but for the dropped ranges, in as few writes as
// the drops allow (one, when nothing is dropped).
func writeKept(dst io.Writer, chunk []byte, drops [][2]int) error {
	at := 0
	for _, d := range drops {
		if d[0] > at {
			if _, err := dst.Write(chunk[at:d[0]]); err != nil {
				return err
			}
		}
		at = d[1]
	}
	if at < len(chunk) {
		_, err := dst.Write(chunk[at:])
		return err
	}
	return nil
}

// writeClient writes refusal frames to the client, serialised with the
// Downstream pump's writes. A client that is gone gets no answer: the
// refused frame stays refused and recorded, and Downstream reports the
// broken pipe when it next writes.
func (r *Relay) writeClient(p []byte) {
	r.wmu.Lock()
	r.cfg.Client.Write(p)
	r.wmu.Unlock()
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

// recordRequests appends the records that the lines of chunk need and
// returns the last seq and how many there were. st.calls receives the calls
// it added to the pending table; with a Gate, st.drops the lines not to
// relay and st.answer the refusal frames.
func (r *Relay) recordRequests(chunk []byte, st *upstream) (uint64, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.live(); err != nil {
		return 0, 0, err
	}
	st.calls, st.drops, st.answer, st.refused = st.calls[:0], st.drops[:0], st.answer[:0], false
	gated := r.cfg.Gate != nil
	f := &st.f
	var (
		last uint64
		n    int
		err  error
	)
	for off := 0; off < len(chunk); {
		line, _ := frame.NextLine(chunk[off:])
		start := off
		off += len(line)
		r.counts.FramesIn++
		st.cl.Classify(line, f)
		// Not exactly one JSON value, read differently by some reader
		// (frame.Frame.Hidden), or a batch too long to classify whole: a
		// child may still read calls in it. Without a policy it is relayed
		// (byte identity) and recorded, with an intent for every call any
		// reading finds; with one it is dropped, so that nothing reaches
		// the child that was not judged.
		if f.Anomaly != "" {
			seq, err := r.j.Append(&journal.Anomaly{Digest: digest(line), Bytes: len(line), Reason: f.Anomaly, Forwarded: !gated})
			if err != nil {
				return 0, 0, err
			}
			r.counts.Anomalies++
			last, n = seq, n+1
			if gated {
				st.drop(start, off)
				continue
			}
		}
		if f.Kind != frame.Single && f.Kind != frame.Batch && len(f.Hidden) == 0 {
			// With a policy only lines that are one JSON value reach the
			// child (SPEC §5); a line of white space carries nothing to
			// record, and is dropped without a record.
			if gated {
				st.drop(start, off)
			}
			continue
		}
		if gated {
			last, n, err = r.gateFrame(line, start, off, st, last, n)
		} else {
			last, n, err = r.recordFrame(line, st, last, n)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	r.returning -= min(r.returning, len(st.calls))
	return last, n, nil
}

// intent fills st.in for message i of the frame in st.f.
func (st *upstream) intent(i int, d journal.Digest) {
	st.in = intentOf(&st.f.Msgs[i], d, "")
	if st.f.Kind == frame.Batch {
		st.in.BatchIndex, st.in.BatchSize = i, len(st.f.Msgs)
	}
}

// intentOf is the intent of call m of a frame with digest d; malformed is
// the reason to record when m is not itself malformed ("" for none).
func intentOf(m *frame.Message, d journal.Digest, malformed string) journal.Intent {
	if m.Malformed != "" {
		malformed = m.Malformed
	}
	return journal.Intent{Call: callOf(m), Tool: m.Tool, HasTool: m.HasTool, RequestDigest: d, Malformed: malformed}
}

// recordFrame records the calls of a frame that is relayed without a
// policy: those of the line read as one value, then those only other
// readings find (Frame.Hidden), which are recorded as malformed for the
// line's anomaly.
func (r *Relay) recordFrame(line []byte, st *upstream, last uint64, n int) (uint64, int, error) {
	var d journal.Digest
	hashed := false
	for k, msgs := range [2][]frame.Message{st.f.Msgs, st.f.Hidden} {
		for i := range msgs {
			m := &msgs[i]
			if !isCall(m) {
				continue
			}
			if !hashed {
				d, hashed = digest(line), true
			}
			if k == 0 {
				st.intent(i, d)
			} else {
				st.in = intentOf(m, d, st.f.Anomaly)
			}
			seq, err := r.j.Append(&st.in)
			if err != nil {
				return 0, 0, err
			}
			r.counts.Intents++
			last, n = seq, n+1
			if last, err = r.track(m, st, seq, last); err != nil {
				return 0, 0, err
			}
		}
	}
	return last, n, nil
}

// track adds the call just recorded (st.in, at seq) to the pending table,
// if an answer can come back to match it.
func (r *Relay) track(m *frame.Message, st *upstream, seq, last uint64) (uint64, error) {
	if st.in.Call.Type == journal.IDNull || m.Malformed != "" && m.ID.Type == frame.IDInvalid {
		return last, nil // no answer will come back to match
	}
	c, evicted := r.pend.add(m.ID.Key, st.in.Call, seq)
	st.calls = append(st.calls, c)
	if evicted != nil {
		seq, err := r.appendOutcome(evicted, nil, journal.StatusUnanswered, "evicted: more calls in flight than the pending table holds", time.Time{})
		if err != nil {
			return 0, err
		}
		last = seq
	}
	return last, nil
}

// gateFrame decides and records the calls of one frame (chunk[start:end]
// is line) under the Gate. Every call of the frame is decided under one rule
// set before anything is recorded; if any is refused, the whole frame is:
// every call's intent says so, each call with an id gets a host_denied
// outcome, the line is dropped, and every request in it with an id is
// answered (refused calls with their own cause, the rest HOST_DENIED).
// Malformed calls and calls that name no tool are refused without asking
// the Gate: decoders may disagree about what they would run.
func (r *Relay) gateFrame(line []byte, start, end int, st *upstream, last uint64, n int) (uint64, int, error) {
	var fr Frame
	refused := false
	st.decs = st.decs[:0]
	for i := range st.f.Msgs {
		m := &st.f.Msgs[i]
		if !isCall(m) {
			continue
		}
		if fr == nil {
			fr = r.cfg.Gate.Begin(r.cfg.Clock())
		}
		var d Decision
		if m.Malformed != "" || !m.HasTool {
			d = refuseMalformed(fr.Set())
		} else {
			d = fr.Decide(m.Tool)
		}
		refused = refused || d.Refused()
		st.decs = append(st.decs, d)
	}
	if fr == nil {
		return last, n, nil // no call: relayed as it is
	}
	dg := digest(line)
	st.refs = st.refs[:0]
	k := 0
	for i := range st.f.Msgs {
		m := &st.f.Msgs[i]
		if !isCall(m) {
			continue
		}
		d := &st.decs[k]
		k++
		st.intent(i, dg)
		st.in.Verdict, st.in.Rule, st.in.Set, st.in.Refused = d.Verdict, d.Rule, d.Set, refused
		seq, err := r.j.Append(&st.in)
		if err != nil {
			return 0, 0, err
		}
		r.counts.Intents++
		last, n = seq, n+1
		if !refused {
			if last, err = r.track(m, st, seq, last); err != nil {
				return 0, 0, err
			}
			continue
		}
		r.counts.Refused++
		// An outcome needs an id to name: verify matches outcomes to
		// intents with one. A refused notification is its intent alone.
		if st.in.Call.Type != journal.IDNull {
			st.refs = append(st.refs, refusal{seq: seq, call: st.in.Call, own: d.Refused()})
		}
	}
	if !refused {
		fr.Commit()
		return last, n, nil
	}
	for _, rc := range st.refs {
		o := journal.Outcome{Call: rc.call, Intent: rc.seq, Status: journal.StatusHostDenied, Reason: ReasonSibling}
		if rc.own {
			o.Reason = ReasonNotExecuted
		}
		seq, err := r.j.Append(&o)
		if err != nil {
			return 0, 0, err
		}
		r.counts.Outcomes++
		last, n = seq, n+1
	}
	st.refused = true
	st.drop(start, end)
	st.answerFrame()
	return last, n, nil
}

// answerFrame appends to st.answer the answer to the refused frame in st.f:
// one refusal for a single request, an array for a batch with every request
// that has an id, nothing when no request has one.
func (st *upstream) answerFrame() {
	batch := st.f.Kind == frame.Batch
	mark := len(st.answer)
	if batch {
		st.answer = append(st.answer, '[')
	}
	k, answered := 0, 0
	for i := range st.f.Msgs {
		m := &st.f.Msgs[i]
		var d *Decision
		if isCall(m) {
			d = &st.decs[k]
			k++
		}
		if m.Type != frame.Request {
			continue // notifications are answered by no one; responses are not requests
		}
		code, rule, retry := CodeHostDenied, "", time.Duration(0)
		if d != nil && d.Refused() {
			code, rule, retry = d.Code, d.Rule, d.RetryAfter
		}
		if answered > 0 {
			st.answer = append(st.answer, ',')
		}
		st.answer = AppendRefusal(st.answer, answerID(m), code, rule, retry)
		answered++
	}
	if answered == 0 {
		st.answer = st.answer[:mark]
		return
	}
	if batch {
		st.answer = append(st.answer, ']')
	}
	st.answer = append(st.answer, '\n')
}

// answerID is the id token a refusal of m carries: the request's own, as
// it was sent, or null where its id is ambiguous or not an id at all
// (JSON-RPC answers null when the id cannot be determined).
func answerID(m *frame.Message) []byte {
	switch m.ID.Type {
	case frame.IDString, frame.IDNumber:
		if !strings.HasPrefix(m.Malformed, "id:") {
			return m.ID.Raw
		}
	}
	return nil
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
	o := &r.out
	*o = journal.Outcome{Call: c.id, Intent: c.seq, Status: status, Reason: reason}
	if resp != nil {
		o.ResponseDigest, o.HasResponse = digest(resp), true
	}
	if !c.written.IsZero() && !now.IsZero() {
		o.LatencyNS = now.Sub(c.written).Nanoseconds()
	}
	seq, err := r.j.Append(o)
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
// is as durable as the level requires before a response. It reads on while
// it waits, and returns as soon as it fails, as Upstream does. If the
// client is gone, Downstream keeps reading and recording until the child's
// EOF and then returns the write error.
func (r *Relay) Downstream(src io.Reader, dst io.Writer) error {
	// werr is the first write error. The reader writes (a run without
	// records) only while the forwarder holds nothing, and fw.mu orders
	// their turns.
	var werr error
	write := func(chunk []byte) {
		if werr != nil {
			return
		}
		if r.cfg.Gate != nil {
			r.wmu.Lock()
		}
		_, werr = dst.Write(chunk)
		if r.cfg.Gate != nil {
			r.wmu.Unlock()
		}
		if werr != nil {
			werr = fmt.Errorf("relay: write to client: %w", werr)
		}
	}
	fw := newForwarder(r, func(h *run) error { write(h.chunk); return nil }, readable(src))
	go r.readResponses(src, fw, write)
	err := fw.run()
	if err == nil {
		err = werr
	}
	return err
}

// readResponses is Downstream's reader, as readRequests is Upstream's.
func (r *Relay) readResponses(src io.Reader, fw *forwarder, write func([]byte)) {
	defer close(fw.readerDone)
	rd := frame.NewReader(src, readSize, r.cfg.MaxFrame)
	more := readable(src)
	st := &downstream{}
	for {
		chunk, err := rd.Next()
		if fw.stopped() {
			return
		}
		if len(chunk) > 0 {
			last, n, rerr := r.recordResponses(chunk, st)
			if rerr != nil {
				fw.abortWith(rerr)
				return
			}
			long := len(chunk) > readSize
			switch {
			case fw.idle() && (n == 0 || r.alone(0) && (more == nil || !more())):
				// As in Upstream: no call left in flight, no response to
				// come meanwhile.
				if err := r.release(n, last, journal.BeforeResponse, nil, n); err != nil {
					fw.abortWith(err)
					return
				}
				write(chunk)
				r.spare(n, more)
			default:
				h := fw.take(chunk, long)
				if h == nil {
					return
				}
				h.n, h.last, h.barrier, h.answers = n, last, journal.BeforeResponse, n
				if !fw.send(h, !long && err == nil && more != nil && more()) {
					return
				}
			}
			if long {
				// As in Upstream: let a long line's buffer go.
				*st = downstream{}
			}
		}
		if err != nil {
			fw.finish(pumpErr(err))
			return
		}
	}
}

// Reasons of the anomalies recorded for a child's line that could answer a
// call in flight but is not a clean answer to it: the call stays in
// flight, so that whichever answer a client takes is in the record (the
// line's digest here, or a later answer's outcome).
const (
	// ReasonLooseID: the id answers the call only as some client reads ids
	// (as a number: "1" or 1.5 for 1; frame.ID.LooseKeys).
	ReasonLooseID = "response: its id answers a call in flight only as some clients read ids"
	// ReasonAnswerWithMethod: a message with a method, an id and a result
	// or error, a request to some clients and an answer to others.
	ReasonAnswerWithMethod = "response: has a method too"
	// ReasonTwoCalls: the id names one call in flight, and another as some
	// clients read ids.
	ReasonTwoCalls = "response: its id answers different calls in flight as different clients read it"
)

// recordResponses records the outcomes of the calls that the lines of
// chunk answer, and an anomaly for each line that could answer a call in
// flight but is not a clean answer to it (see answer).
func (r *Relay) recordResponses(chunk []byte, st *downstream) (uint64, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.live(); err != nil {
		return 0, 0, err
	}
	var last uint64
	n := 0
	st.now = time.Time{}
	f := &st.f
	for rest := chunk; len(rest) > 0; {
		var line []byte
		line, rest = frame.NextLine(rest)
		r.counts.FramesOut++
		if r.pend.n == 0 {
			continue // nothing to match: no need to parse
		}
		st.cl.Classify(line, f)
		reason := ""
		for k, msgs := range [2][]frame.Message{f.Msgs, f.Hidden} {
			for i := range msgs {
				m := &msgs[i]
				if !m.Answers {
					continue
				}
				seq, ok, why, err := r.answer(m, k == 0 && f.Anomaly == "", line, st)
				if err != nil {
					return 0, 0, err
				}
				if ok {
					last, n = seq, n+1
				} else if reason == "" && why != "" {
					reason = why
					if f.Anomaly != "" {
						reason = f.Anomaly
					}
				}
			}
		}
		if reason != "" {
			seq, err := r.j.Append(&journal.Anomaly{Digest: digest(line), Response: true, Bytes: len(line), Reason: reason, Forwarded: true})
			if err != nil {
				return 0, 0, err
			}
			r.counts.Anomalies++
			last, n = seq, n+1
		}
	}
	return last, n, nil
}

// downstream is the child→client pump's state, reused from run to run.
type downstream struct {
	cl   frame.Classifier
	f    frame.Frame
	now  time.Time // when the run's first answer was matched
	kbuf []byte    // scratch for frame.ID.LooseKeys
}

// answer records the outcome of the call that m, a message with an id and
// a result or error, answers, if it is a clean answer (clean: in a line
// every reader reads alike; a Response, not malformed) whose id names one
// call in flight, the same for every client. Otherwise it returns why m
// is an anomaly if m could still answer a call in flight for some client
// (any of its ids, as any client reads it, names one), or "" if it
// answers none.
func (r *Relay) answer(m *frame.Message, clean bool, line []byte, st *downstream) (seq uint64, ok bool, why string, err error) {
	clean = clean && m.Type == frame.Response && m.Malformed == ""
	if c := r.pend.find(m.ID.Key); c != nil && clean {
		if other := r.looseCall(&m.ID, c, st); other {
			return 0, false, ReasonTwoCalls, nil
		}
		r.pend.take(m.ID.Key)
		if st.now.IsZero() {
			st.now = r.cfg.Clock()
		}
		status := journal.StatusOK
		switch {
		case m.IsError:
			status = journal.StatusRPCError
		case m.ToolError:
			status = journal.StatusToolError
		}
		seq, err := r.appendOutcome(c, line, status, "", st.now)
		return seq, err == nil, "", err
	}
	switch {
	case !r.mayAnswer(m, st):
		return 0, false, "", nil
	case m.Malformed != "":
		return 0, false, m.Malformed, nil
	case m.Type != frame.Response:
		return 0, false, ReasonAnswerWithMethod, nil
	}
	return 0, false, ReasonLooseID, nil
}

// looseCall reports whether id, read as some client reads ids, names a
// call in flight other than c.
func (r *Relay) looseCall(id *frame.ID, c *call, st *downstream) bool {
	other := false
	st.kbuf = id.LooseKeys(st.kbuf, func(key []byte) {
		if d := r.pend.find(key); d != nil && d != c {
			other = true
		}
	})
	return other
}

// mayAnswer reports whether some client could take m as the answer to a
// call in flight: any value of its id member, read exactly or as any
// client reads ids, names one.
func (r *Relay) mayAnswer(m *frame.Message, st *downstream) bool {
	hit := false
	try := func(id *frame.ID) {
		if id.Key != nil && r.pend.find(id.Key) != nil {
			hit = true
			return
		}
		st.kbuf = id.LooseKeys(st.kbuf, func(key []byte) {
			hit = hit || r.pend.find(key) != nil
		})
	}
	try(&m.ID)
	for i := range m.AltIDs {
		try(&m.AltIDs[i])
	}
	return hit
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

// Note appends a record about the session rather than about a frame (a
// policy_reload), in order with the pumps' records, and waits until it is
// written. It fails with ErrEnded once End has run, so that nothing follows
// session_end.
func (r *Relay) Note(b journal.Body) error {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return ErrEnded
	}
	seq, err := r.j.Append(b)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.j.Wait(seq, journal.BeforeRequest)
}

// Counts returns the session's counts so far.
func (r *Relay) Counts() journal.Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}
