package httpfront

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// retainStreams is how many answered streams a session keeps for a
// client that resumes one (Last-Event-ID) after its answer was sent.
const retainStreams = 64

// serveStream writes st as an SSE stream from event number from on: a
// priming event first (the id of the event before from, the retry field,
// empty data), then every event as it comes, until the stream is complete
// and sent, or the client goes away (the stream stays resumable). One
// connection writes a stream at a time: a GET for a stream being written
// is 409, but a resumption (Last-Event-ID) takes the stream over, since
// the client that resumes no longer reads the connection it had, whether
// or not the server has seen that connection close yet.
func (ss *session) serveStream(w http.ResponseWriter, r *http.Request, st *stream, from uint64, resume bool) {
	rc := http.NewResponseController(w)
	cut := &cutter{rc: rc}
	ss.mu.Lock()
	if st.attached && st.conn != 0 && !resume {
		ss.mu.Unlock()
		httpError(w, http.StatusConflict, "the stream is already being read")
		return
	}
	if st.attached && st.conn != 0 {
		close(st.notify) // the connection writing it stops
	}
	st.attached = true
	st.conn++
	st.writer = cut
	conn, notify := st.conn, make(chan struct{}, 1)
	st.notify = notify
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		if st.conn == conn {
			st.attached = false
			st.writer = nil
		}
		ss.retire(st)
		ss.detach(st)
		// Its events, unsent, are now a gone client's: a router waiting
		// for room may let them go.
		ss.wakeRouter()
		ss.mu.Unlock()
	}()
	// The write deadline is the connection's: clear it for the next
	// request a keep-alive connection carries.
	defer rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	// The values are shared, never modified: net/http copies the header
	// as the response is written.
	h["Content-Type"] = sseContentType
	h["Cache-Control"] = sseCacheControl
	h["X-Accel-Buffering"] = sseAccelBuffering
	w.WriteHeader(http.StatusOK)
	sw := newSSEWriter(w, cut, ss.srv.cfg.WriteTimeout)
	defer sw.release()
	if !st.modern {
		// The priming event says where a resumption starts; the
		// stateless revision has none.
		sw.buf = append(sw.buf, "id: "...)
		sw.buf = appendEventID(sw.buf, st.id, from-1)
		sw.buf = append(sw.buf, "\nretry: "...)
		sw.buf = strconv.AppendInt(sw.buf, DefaultRetry, 10)
		sw.buf = append(sw.buf, "\ndata: \n\n"...)
	}
	// What is written is flushed only when the stream must wait: a call
	// answered at once goes out as one write, its priming event, its
	// events and the stream's end together; one answered later gets its
	// priming event after primingDelay at most.
	wait := primingDelay
	for {
		ss.mu.Lock()
		if st.conn != conn { // taken over by a resumption, or dropped
			ss.mu.Unlock()
			return
		}
		evs, more := st.from(sw.evs, from, sseChunk)
		sw.evs = evs
		complete := st.complete && !more
		ss.mu.Unlock()
		for _, e := range evs {
			if err := sw.event(st.id, e); err != nil {
				return
			}
			from = e.n + 1
		}
		// What is written is no longer held here: an event let go while
		// the stream waits is memory no more.
		clear(evs)
		if err := sw.flushBuf(); err != nil {
			return
		}
		if len(evs) > 0 {
			ss.mu.Lock()
			if from > st.sent {
				st.sent = from
				ss.free(st.trim(ss.srv.cfg.Replay))
				ss.wakeRouter()
			}
			ss.mu.Unlock()
		}
		if complete {
			return // net/http writes what is buffered and the end of the body at once
		}
		if more {
			continue
		}
		if wait > 0 && len(evs) == 0 {
			t := sw.timer(wait)
			wait = 0
			select {
			case <-notify:
				t.Stop()
				continue
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		wait = 0
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-notify:
		case <-r.Context().Done():
			return
		}
	}
}

// sseWriter writes SSE events to a client in writes of at most about
// sseChunk bytes of its own: an event's data longer than that is written
// from the event itself, never copied whole, so that a stream costs its
// events and no copy of them. Each write that reaches the connection
// has Config.WriteTimeout.
type sseWriter struct {
	w       http.ResponseWriter
	cut     *cutter
	timeout time.Duration
	buf     []byte
	// evs holds the events taken from the stream for one write
	// (stream.from), and t is the priming event's timer, made the first
	// time a stream waits: both kept with buf for the next stream.
	evs []event
	t   *time.Timer
}

// The header values of SSE and JSON responses, shared by every response.
var (
	sseContentType    = []string{"text/event-stream"}
	sseCacheControl   = []string{"no-cache"}
	sseAccelBuffering = []string{"no"}
	jsonContentType   = []string{"application/json"}
)

// sseWriters keeps the buffers of streams written, for the next: a
// stream costs no allocation of its own for them.
var sseWriters = sync.Pool{New: func() any { return &sseWriter{buf: make([]byte, 0, 512)} }}

// maxKeptBuf is the largest buffer an sseWriter keeps for the next
// stream: one that grew to write long events is let go with its stream.
const maxKeptBuf = 4 << 10

func newSSEWriter(w http.ResponseWriter, cut *cutter, timeout time.Duration) *sseWriter {
	sw := sseWriters.Get().(*sseWriter)
	sw.w, sw.cut, sw.timeout = w, cut, timeout
	return sw
}

// release puts sw back for another stream, once its stream is written.
func (sw *sseWriter) release() {
	if cap(sw.buf) > maxKeptBuf {
		sw.buf = make([]byte, 0, 512)
	}
	clear(sw.evs[:cap(sw.evs)]) // no event's data stays reachable from the pool
	sw.buf, sw.evs = sw.buf[:0], sw.evs[:0]
	sw.w, sw.cut = nil, nil
	sseWriters.Put(sw)
}

// timer returns sw's timer set to fire after d: every stream it served
// before stopped it or took its tick.
func (sw *sseWriter) timer(d time.Duration) *time.Timer {
	if sw.t == nil {
		sw.t = time.NewTimer(d)
	} else {
		sw.t.Reset(d)
	}
	return sw.t
}

// cutter ends, from another goroutine, the connection a handler writes a
// stream on: when the front drops the stream, the events it let go stay
// in memory only as long as a write holding them, which then fails at
// once rather than at its deadline. Goroutine-safe; end must be called
// while the handler runs (under the session's mu, before the handler's
// own deferred detach clears it), since the connection outlives the
// handler.
type cutter struct {
	rc  *http.ResponseController
	cut atomic.Bool
}

// errCut: the front dropped the stream the connection was writing.
var errCut = errors.New("httpfront: stream dropped")

func (c *cutter) end() {
	c.cut.Store(true)
	c.rc.SetWriteDeadline(time.Now())
}

// write writes p within timeout, unless the stream is cut. The deadline
// is set before cut is read, so that an end between the two still fails
// the write.
func (c *cutter) write(w io.Writer, p []byte, timeout time.Duration) error {
	c.rc.SetWriteDeadline(time.Now().Add(timeout))
	if c.cut.Load() {
		return errCut
	}
	_, err := w.Write(p)
	return err
}

// sseChunk is what sseWriter gathers before it writes.
const sseChunk = 32 << 10

// event writes e as an event of stream sid. The data is the child's line
// as it wrote it; a CR inside it (which JSON allows only as white space
// between tokens) would end the field, so each CR starts another data
// field, which a reader joins with "\n": white space still.
func (sw *sseWriter) event(sid uint64, e event) error {
	sw.buf = append(sw.buf, "id: "...)
	sw.buf = appendEventID(sw.buf, sid, e.n)
	sw.buf = append(sw.buf, "\ndata: "...)
	data := e.data
	for {
		i := bytes.IndexByte(data, '\r')
		piece := data
		if i >= 0 {
			piece = data[:i]
		}
		if err := sw.put(piece); err != nil {
			return err
		}
		if i < 0 {
			break
		}
		sw.buf = append(sw.buf, "\ndata: "...)
		data = data[i+1:]
	}
	sw.buf = append(sw.buf, "\n\n"...)
	if len(sw.buf) >= sseChunk {
		return sw.flushBuf()
	}
	return nil
}

// put appends p, or writes what is gathered and then p when p is long.
func (sw *sseWriter) put(p []byte) error {
	if len(sw.buf)+len(p) <= sseChunk {
		sw.buf = append(sw.buf, p...)
		return nil
	}
	if err := sw.flushBuf(); err != nil {
		return err
	}
	return sw.write(p)
}

// flushBuf writes what is gathered.
func (sw *sseWriter) flushBuf() error {
	if len(sw.buf) == 0 {
		return nil
	}
	err := sw.write(sw.buf)
	sw.buf = sw.buf[:0]
	return err
}

func (sw *sseWriter) write(p []byte) error {
	return sw.cut.write(sw.w, p, sw.timeout)
}

// primingDelay is how long a stream's priming event waits for the first
// event, to go out in the same write.
const primingDelay = time.Millisecond

// serveJSON answers a request whose client takes JSON only: the answer's
// line is the body. Other lines routed to it (none: they go to SSE
// streams) are skipped. If the session ends before the child answers, 502.
func (ss *session) serveJSON(w http.ResponseWriter, r *http.Request, st *stream) {
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{})
	cut := &cutter{rc: rc}
	ss.mu.Lock()
	st.writer = cut
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		// A JSON answer is not resumable: once written, or once its
		// client is gone, it is let go, and nothing more is held for it.
		st.attached, st.writer, st.lost = false, nil, true
		ss.free(st.letGo())
		if !st.complete {
			delete(ss.streams, st.id)
		}
		ss.retire(st)
		ss.wakeRouter()
		ss.mu.Unlock()
	}()
	for {
		ss.mu.Lock()
		// The answer is the stream's last event; it stays counted until
		// it is written.
		var answer []byte
		if n := len(st.events); n > 0 {
			answer = st.events[n-1].data
		}
		complete, notify, lost := st.complete, st.notify, st.lost
		ss.mu.Unlock()
		if complete || lost {
			if answer == nil || lost {
				httpError(w, http.StatusBadGateway, "the session ended before the server answered")
				return
			}
			status := http.StatusOK
			if st.modern {
				status = errorStatus(answer)
			}
			w.Header()["Content-Type"] = jsonContentType
			w.WriteHeader(status)
			cut.write(w, answer, ss.srv.cfg.WriteTimeout)
			ss.mu.Lock()
			st.sent = st.next
			ss.mu.Unlock()
			return
		}
		select {
		case <-notify:
		case <-r.Context().Done():
			return
		}
	}
}

// retire drops st once no client can want it again: answered, sent, and
// beyond the retainStreams most recently answered. Called with mu held.
func (ss *session) retire(st *stream) {
	if st.id == getStreamID || !st.complete || st.sent < st.next || st.retired {
		return
	}
	st.retired = true
	if st.modern {
		// Never resumed: nothing is kept once it is sent.
		ss.free(st.letGo())
		delete(ss.streams, st.id)
		return
	}
	ss.answered = append(ss.answered, st.id)
	if len(ss.answered) > retainStreams {
		if old := ss.streams[ss.answered[0]]; old != nil {
			ss.free(old.letGo())
		}
		delete(ss.streams, ss.answered[0])
		ss.answered = ss.answered[1:]
	}
}
