package relay

import (
	"fmt"
	"io"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// upstream is the client→child pump's state, reused from run to run.
type upstream struct {
	cl    frame.Classifier
	f     frame.Frame
	in    record.Intent
	calls []*call // calls this run added to the table of calls in flight

	// With a Gate only.
	drops   [][2]int          // byte ranges of the run that must not reach the child
	answer  []byte            // refusal frames for the client, each ending in '\n'
	refused bool              // a refusal's records were appended this run
	decs    []gate.Decision   // the current frame's decisions, one per call
	fr      gate.FrameDecider // the current frame's decider; nil: no call to decide
	call    gate.Call         // reused: what Decide sees of a call
	refs    []refusal         // the current frame's refused calls that get an outcome

	sums      callSums               // the current frame's calls' digests (rounds.go)
	links     []record.Round         // the current frame's calls' rounds, by message, once linked
	linked    bool                   // links is the current frame's
	responses []record.InputResponse // reused: an intent's or a task update's input_responses
	lineOut   bool                   // the current line is refused: nothing of it reaches the child
	trace     traceReader            // the current line's calls' trace context (trace.go)
}

// drop marks chunk[start:end] as not to be relayed.
func (st *upstream) drop(start, end int) { st.drops = appendDrop(st.drops, start, end) }

// appendDrop adds the byte range [start, end) of a run to drops, merged
// with the last range if they meet.
func appendDrop(drops [][2]int, start, end int) [][2]int {
	if n := len(drops); n > 0 && drops[n-1][1] == start {
		drops[n-1][1] = end
		return drops
	}
	return append(drops, [2]int{start, end})
}

// Upstream relays client→child until the client's EOF (nil) or an error,
// as the package documentation says: each run of lines is written to dst
// once its records pass the barrier, in the order read, and with a Gate
// only the lines judged may reach the child.
//
// It reads on while it waits (forward.go): a goroutine it starts reads
// and records the runs, and the calling goroutine writes each one once its
// records are durable. With calls in flight a client sends its requests
// one by one; those that arrive while a sync is pending are then recorded
// in time to share it, instead of waiting for the sync after it. When more
// bytes are already waiting in src (FIONREAD on a pipe or socket), the
// runs they hold are recorded before the writer waits for any of them, so
// that one commit group covers them all.
//
// Upstream returns as soon as it fails, even while its reading goroutine
// is blocked in a read of src: a pump stuck in a read must not keep the
// session from learning that the journal failed. That goroutine records
// and writes nothing more, and ends when the read returns.
func (r *Relay) Upstream(src io.Reader, dst io.Writer) error {
	spareProc(src, true) // procs.go
	r.mu.Lock()
	r.child = dst
	r.mu.Unlock()
	fw := newForwarder(r, func(h *heldRun) error { return r.relayRun(dst, h.chunk, h.drops, h.answer) })
	go r.readRuns(src, fw, &upstreamSide{r: r, dst: dst})
	return fw.writeRuns()
}

// upstreamSide is Upstream's reader's part (readRuns): requests recorded,
// a run relayed to the child with its refusals to the client.
type upstreamSide struct {
	r   *Relay
	st  upstream
	dst io.Writer
}

func (u *upstreamSide) record(chunk []byte) (runRecords, error) {
	last, n, err := u.r.recordRequests(chunk, &u.st)
	b := journal.BeforeRequest
	if u.st.refused {
		b = journal.BeforeResponse
	}
	return runRecords{n: n, last: last, barrier: b, calls: u.st.calls}, err
}

func (u *upstreamSide) relay(chunk []byte) error {
	return u.r.relayRun(u.dst, chunk, u.st.drops, u.st.answer)
}

func (u *upstreamSide) fill(h *heldRun, rn runRecords) { u.st.fill(h, rn.last, rn.n, rn.barrier) }

// reset: a line longer than the Reader's buffer is aliased by st (its
// frame.Frame, intent and Classifier), which must not keep it alive once
// the Reader drops it.
func (u *upstreamSide) reset() { u.st = upstream{} }

// fill tells h, a run of st's, what the forwarder needs to know of it: its
// records, the barrier they wait for, and what to drop, answer and mark
// written.
func (st *upstream) fill(h *heldRun, last uint64, n int, b journal.Barrier) {
	h.n, h.last, h.barrier = n, last, b
	h.drops = append(h.drops, st.drops...)
	h.answer = append(h.answer, st.answer...)
	h.calls = append(h.calls, st.calls...)
}

// relayRun writes a run's refusal frames to the client, then its lines but
// the dropped ones to the child: on the client's stream a refusal comes
// before the answer to any request sent after it.
func (r *Relay) relayRun(dst io.Writer, chunk []byte, drops [][2]int, answer []byte) error {
	if len(answer) > 0 {
		r.writeClient(answer)
	}
	r.cmu.Lock()
	err := writeKept(dst, chunk, drops)
	r.cmu.Unlock()
	if err != nil {
		return fmt.Errorf("relay: write to child: %w", err)
	}
	return nil
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

// recordRequests appends the records that the lines of chunk need and
// returns the last seq and how many there were. st.calls receives the calls
// it added to the table of calls in flight; with a Gate, st.drops the lines not to
// relay and st.answer the refusal frames.
//
// A line is classified and its calls decided without r.mu, which the
// child→client pump needs for every answer; r.mu is held while the line's
// records are appended and its calls enter the table, line by line. The
// order of records holds without it: this pump's goroutine alone appends
// intents, in the order of the lines, and no line reaches the child before
// recordRequests has returned and its records are durable (Upstream).
func (r *Relay) recordRequests(chunk []byte, st *upstream) (uint64, int, error) {
	st.calls, st.drops, st.answer, st.refused = st.calls[:0], st.drops[:0], st.answer[:0], false
	var (
		last uint64
		n    int
		err  error
	)
	for off := 0; off < len(chunk); {
		line, _ := frame.NextLine(chunk[off:])
		start := off
		off += len(line)
		st.cl.Classify(line, &st.f)
		st.sums.prepare(&st.f, r.principal)
		st.linked = false
		st.trace.reset(line)
		r.decideFrame(st)
		had := len(st.calls)
		r.mu.Lock()
		last, n, err = r.recordLine(line, start, off, st, last, n)
		r.returning -= min(r.returning, len(st.calls)-had)
		r.mu.Unlock()
		if err != nil {
			return 0, 0, err
		}
	}
	return last, n, nil
}

// recordLine appends the records of one line (chunk[start:end]), classified
// in st.f and, with a Gate, decided in st.decs. r.mu is held.
func (r *Relay) recordLine(line []byte, start, end int, st *upstream, last uint64, n int) (uint64, int, error) {
	if err := r.live(); err != nil {
		return 0, 0, err
	}
	r.counts.FramesIn++
	gated := r.cfg.Gate != nil
	f := &st.f
	st.lineOut = false
	// Not exactly one JSON value, read differently by some reader
	// (frame.Frame.Hidden), or a batch too long to classify whole: a
	// child may still read calls in it. Without a policy it is relayed
	// (byte identity) and recorded, with an intent for every call any
	// reading finds; with one it is dropped, so that nothing reaches
	// the child that was not judged.
	if f.Anomaly != "" {
		seq, err := r.j.Append(&record.Anomaly{Digest: digest(line), Bytes: len(line), Reason: f.Anomaly, Forwarded: !gated})
		if err != nil {
			return 0, 0, err
		}
		r.counts.Anomalies++
		last, n = seq, n+1
		if gated {
			st.drop(start, end)
			return last, n, nil
		}
	}
	if f.Kind != frame.Single && f.Kind != frame.Batch && len(f.Hidden) == 0 {
		// With a policy only lines that are one JSON value reach the
		// child; a line of white space carries nothing to record, and is
		// dropped without a record.
		if gated {
			st.drop(start, end)
		}
		return last, n, nil
	}
	var err error
	if gated {
		last, n, err = r.gateFrame(line, start, end, st, last, n)
	} else {
		last, n, err = r.recordFrame(line, st, last, n)
	}
	if err != nil || st.lineOut || f.Anomaly != "" {
		return last, n, err
	}
	return r.recordRequestsOther(line, st, last, n)
}

// intent fills st.in for message i of the frame in st.f: the call, its
// declared revision, its requestState's digest, its inputResponses, and
// the round it is (rounds.go), whose outcome it claims.
func (r *Relay) intent(st *upstream, i int, d record.Digest) {
	m := &st.f.Msgs[i]
	st.in = intentOf(m, d, "")
	if st.f.Kind == frame.Batch {
		st.in.BatchIndex, st.in.BatchSize = i, len(st.f.Msgs)
	}
	if m.HasRevision {
		st.in.Revision, st.in.HasRevision = record.BoundedOf(m.Revision), true
	}
	if m.HasInputResponses {
		st.responses = inputResponses(st.responses, m)
		st.in.InputResponses, st.in.InputResponsesMore = st.responses, m.InputResponsesN-len(m.InputResponses)
	}
	if m.Malformed == "" {
		st.in.Trace = st.trace.of(i, st.f.Kind == frame.Batch)
	}
	if i >= len(st.sums.match) || m.Malformed != "" {
		return
	}
	if m.HasRequestState {
		st.in.RequestState, st.in.HasRequestState = st.sums.state[i], true
	}
	if !st.linked {
		r.linkFrame(st)
		st.linked = true
	}
	st.in.Round = st.links[i]
}

// inputResponses is m's params.inputResponses as an intent or a task
// update records them, in buf.
func inputResponses(buf []record.InputResponse, m *frame.Message) []record.InputResponse {
	buf = buf[:0]
	if buf == nil {
		buf = []record.InputResponse{} // present, if empty
	}
	for _, in := range m.InputResponses {
		e := record.InputResponse{Key: record.BoundedOf(in.Key)}
		if in.HasValue {
			e.Action = actionOf(in.Value)
		}
		buf = append(buf, e)
	}
	return buf
}

// intentOf is the intent of call m of a frame with digest d; malformed is
// the reason to record when m is not itself malformed ("" for none).
func intentOf(m *frame.Message, d record.Digest, malformed string) record.Intent {
	if m.Malformed != "" {
		malformed = m.Malformed
	}
	return record.Intent{Call: callOf(m), Tool: m.Tool, HasTool: m.HasTool, RequestDigest: d, Malformed: malformed}
}

// recordFrame records the calls of a frame that is relayed without a
// policy: those of the line read as one value, then those only other
// readings find (frame.Frame.Hidden), which are recorded as malformed for the
// line's anomaly.
func (r *Relay) recordFrame(line []byte, st *upstream, last uint64, n int) (uint64, int, error) {
	var d record.Digest
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
				r.intent(st, i, d)
			} else {
				st.in = intentOf(m, d, st.f.Anomaly)
			}
			seq, err := r.j.AppendHint(&st.in, awaits)
			if err != nil {
				return 0, 0, err
			}
			r.counts.Intents++
			last, n = seq, n+1
			if last, err = r.track(m, st, seq, last, k == 0, i); err != nil {
				return 0, 0, err
			}
		}
	}
	return last, n, nil
}

// track adds the call just recorded (st.in, at seq) to the table of calls in flight,
// if an answer can come back to match it. clean says m is message i of
// the line read as one value, whose digests st.sums holds.
func (r *Relay) track(m *frame.Message, st *upstream, seq, last uint64, clean bool, i int) (uint64, error) {
	if st.in.Call.Type == record.IDNull || m.Malformed != "" && m.ID.Type == frame.IDInvalid {
		return last, nil // no answer will come back to match
	}
	c, last, err := r.enter(m, st, st.in.Call, seq, last)
	if err != nil {
		return 0, err
	}
	if st.in.Round.N > 0 {
		c.round = st.in.Round.N
	}
	if clean && i < len(st.sums.match) {
		c.match = st.sums.match[i]
	}
	if r.cfg.CallTimeout > 0 {
		r.timeable(c, m, &st.f)
	}
	return last, nil
}

// enter adds request m to the table of calls in flight, as a tools/call
// (id, the intent at seq) until the caller says otherwise (call.op), and
// records the outcome of the call it evicts, if any.
func (r *Relay) enter(m *frame.Message, st *upstream, id record.Call, seq, last uint64) (*call, uint64, error) {
	c, evicted := r.inFlight.add(m.ID.Key, id, seq)
	st.calls = append(st.calls, c)
	if evicted != nil {
		if evicted.op != frame.OpToolsCall {
			r.inFlight.release(evicted) // a request without an intent: nothing to record
			return c, last, nil
		}
		seq, err := r.appendOutcome(evicted, nil, record.StatusUnanswered, "evicted: more calls in flight than the pending table holds", time.Time{})
		if err != nil {
			return nil, 0, err
		}
		last = seq
	}
	return c, last, nil
}
