package relay

import (
	"fmt"
	"io"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// Downstream relays child→client until the child's EOF (nil) or an error:
// each run of lines is written to dst once its outcomes and anomalies pass
// journal.BeforeResponse. It reads on while it waits, and returns as soon
// as it fails, as Upstream does. If the client is gone, Downstream keeps
// reading and recording until the child's EOF, so that every answer the
// child gave is in the record, and then returns the write error. With a
// Config.CallTimeout, the late answers to calls that timed out are not
// written (timeout.go).
func (r *Relay) Downstream(src io.Reader, dst io.Writer) error {
	spareProc(dst, false) // procs.go
	// werr is the first write error. The reader writes (a run without
	// records) only while the forwarder holds nothing, and fw.mu orders
	// their turns.
	var werr error
	write := func(chunk []byte, drops [][2]int) {
		if werr != nil {
			return
		}
		if r.shared {
			r.wmu.Lock()
		}
		werr = writeKept(dst, chunk, drops)
		if r.shared {
			r.wmu.Unlock()
		}
		if werr != nil {
			werr = fmt.Errorf("relay: write to client: %w", werr)
		}
	}
	fw := newForwarder(r, func(h *heldRun) error { write(h.chunk, h.drops); return nil })
	go r.readRuns(src, fw, &downstreamSide{r: r, write: write})
	err := fw.writeRuns()
	if err == nil {
		err = werr
	}
	return err
}

// downstreamSide is Downstream's reader's part (readRuns): answers
// recorded, a run written to the client but for the late answers dropped.
type downstreamSide struct {
	r     *Relay
	st    downstream
	write func([]byte, [][2]int)
}

func (d *downstreamSide) record(chunk []byte) (runRecords, error) {
	last, n, err := d.r.recordResponses(chunk, &d.st)
	return runRecords{n: n, last: last, barrier: journal.BeforeResponse, answers: n}, err
}

func (d *downstreamSide) relay(chunk []byte) error { d.write(chunk, d.st.drops); return nil }

func (d *downstreamSide) fill(h *heldRun, rn runRecords) {
	h.n, h.last, h.barrier, h.answers = rn.n, rn.last, rn.barrier, rn.answers
	h.drops = append(h.drops, d.st.drops...)
}

// reset: as Upstream's, a long line's buffer is let go.
func (d *downstreamSide) reset() { d.st = downstream{} }

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
// flight but is not a clean answer to it (see answer), or that answers a
// call that timed out. st.drops receives the lines not to relay: those
// that answer calls that timed out and no call in flight.
func (r *Relay) recordResponses(chunk []byte, st *downstream) (uint64, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.live(); err != nil {
		return 0, 0, err
	}
	var last uint64
	n := 0
	st.now = time.Time{}
	st.drops = st.drops[:0]
	f := &st.f
	for off := 0; off < len(chunk); {
		line, _ := frame.NextLine(chunk[off:])
		start := off
		off += len(line)
		r.counts.FramesOut++
		if r.inFlight.n == 0 && r.late.n == 0 && r.tasks.n == 0 {
			continue // nothing to match: no need to parse
		}
		st.dg.start(line)
		st.cl.Classify(line, f)
		reason := ""
		st.late, st.cancelled = 0, 0
		answered := 0
		for k, msgs := range [2][]frame.Message{f.Msgs, f.Hidden} {
			for i := range msgs {
				m := &msgs[i]
				clean := k == 0 && f.Anomaly == ""
				var (
					seq  uint64
					recs int
					hit  bool
					why  string
					err  error
				)
				switch {
				case m.Answers:
					seq, recs, hit, why, err = r.answer(m, clean, line, st)
				case clean && m.Type == frame.Request:
					seq, recs, why, err = r.serverRequest(m, st)
				case k == 0 && (m.Op == frame.OpTasksNotify || m.Op == frame.OpTaskStatus) && m.Type == frame.Notification:
					seq, recs, why, err = r.taskNotice(m, clean, st)
				default:
					continue
				}
				if err != nil {
					st.dg.wait()
					return 0, 0, err
				}
				if hit {
					answered++
				}
				if recs > 0 {
					last, n = seq, n+recs
				}
				if reason == "" && why != "" {
					reason = why
					if f.Anomaly != "" {
						reason = f.Anomaly
					}
				}
			}
		}
		forwarded := true
		switch {
		case st.late > 0:
			// The client has had aegis's answer for that id: a second one
			// must not reach it. A line that answers a call in flight too
			// carries an answer the client waits for, and is relayed.
			reason = ReasonLateAnswer
			if answered == 0 {
				forwarded = false
				st.drops = appendDrop(st.drops, start, off)
			}
		case st.cancelled > 0 && reason == "":
			// The client cancelled the call and ignores its answer: the
			// line is relayed (byte identity) and said to be late.
			reason = ReasonAnswerAfterCancel
		}
		if reason != "" {
			seq, err := r.j.Append(&record.Anomaly{Digest: st.dg.get(), Response: true, Bytes: len(line), Reason: reason, Forwarded: forwarded})
			if err != nil {
				return 0, 0, err
			}
			r.counts.Anomalies++
			last, n = seq, n+1
		}
		st.dg.wait()
	}
	return last, n, nil
}

// downstream is the child→client pump's state, reused from run to run.
type downstream struct {
	cl   frame.Classifier
	f    frame.Frame
	now  time.Time // when the run's first answer was matched
	kbuf []byte    // scratch for frame.ID.LooseKeys
	late int       // the current line's answers to calls that timed out
	// cancelled counts the current line's answers to calls the client
	// cancelled.
	cancelled int
	inputs    []record.InputRequest // reused: an outcome's or a task record's input_requests
	keys      [][]byte              // reused: the inputRequests keys of a task status
	drops     [][2]int              // byte ranges of the run that must not reach the client
	dg        lineDigest            // the current line's
}

// answer judges m, a message with an id and a result or error, against
// the table of calls in flight. A clean answer (clean: in a line every
// reader reads alike; a Response, not malformed) whose id names one
// request in flight, the same for every client, is that request's: a
// tools/call gets its outcome (callAnswered), a request followed without
// an intent what its answer says (requestAnswered). It returns the last
// seq and the number of records appended, and hit when m answered a
// request in flight. Otherwise it returns why m is an anomaly if m could
// still answer a call in flight for some client (any of its ids, as any
// client reads it, names one), or "" if it answers none.
func (r *Relay) answer(m *frame.Message, clean bool, line []byte, st *downstream) (seq uint64, recs int, hit bool, why string, err error) {
	clean = clean && m.Type == frame.Response && m.Malformed == ""
	if clean && r.late.n > 0 {
		// A call that timed out is older than any call in flight with the
		// same id (every call waits the same timeout), and duplicate ids
		// are answered in the order they were sent. A call the client
		// cancelled may never be answered (the child need not answer
		// it): a call in flight with its id takes the answer first, as
		// the client does.
		if c := r.late.find(m.ID.Key); c != nil && (!c.cancelled || r.inFlight.find(m.ID.Key) == nil) {
			if c.cancelled {
				st.cancelled++
			} else {
				st.late++
			}
			r.late.remove(c)
			r.late.release(c)
			return 0, 0, false, "", nil
		}
	}
	if c := r.inFlight.find(m.ID.Key); c != nil && clean {
		if other := r.looseCall(&m.ID, c, st); other {
			return 0, 0, false, ReasonTwoCalls, nil
		}
		if st.now.IsZero() {
			st.now = r.cfg.Clock()
		}
		if c.op != frame.OpToolsCall {
			seq, recs, err := r.requestAnswered(c, m, st)
			return seq, recs, err == nil, "", err
		}
		return r.callAnswered(c, m, st)
	}
	switch {
	case !r.mayAnswer(m, st):
		return 0, 0, false, "", nil
	case m.Malformed != "":
		return 0, 0, false, m.Malformed, nil
	case m.Type != frame.Response:
		return 0, 0, false, ReasonAnswerWithMethod, nil
	}
	return 0, 0, false, ReasonLooseID, nil
}

// looseCall reports whether id, read as some client reads ids, names a
// call in flight other than c.
func (r *Relay) looseCall(id *frame.ID, c *call, st *downstream) bool {
	other := false
	st.kbuf = id.LooseKeys(st.kbuf, func(key []byte) {
		if d := r.inFlight.find(key); d != nil && d != c {
			other = true
		}
	})
	return other
}

// mayAnswer reports whether some client could take m as the answer to a
// call in flight, or to one that timed out: any value of its id member,
// read exactly or as any client reads ids, names one.
func (r *Relay) mayAnswer(m *frame.Message, st *downstream) bool {
	hit := false
	named := func(key []byte) bool {
		return r.inFlight.find(key) != nil || r.late.n > 0 && r.late.find(key) != nil
	}
	try := func(id *frame.ID) {
		if id.Key != nil && named(id.Key) {
			hit = true
			return
		}
		st.kbuf = id.LooseKeys(st.kbuf, func(key []byte) {
			hit = hit || named(key)
		})
	}
	try(&m.ID)
	for i := range m.AltIDs {
		try(&m.AltIDs[i])
	}
	return hit
}
