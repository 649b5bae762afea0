package httpfront

import (
	"bytes"
	"net/http"
	"strconv"
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
	ss.mu.Lock()
	if st.attached && !resume {
		ss.mu.Unlock()
		httpError(w, http.StatusConflict, "the stream is already being read")
		return
	}
	if st.attached {
		close(st.notify) // the connection writing it stops
	}
	st.attached = true
	st.conn++
	conn, notify := st.conn, make(chan struct{}, 1)
	st.notify = notify
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		if st.conn == conn {
			st.attached = false
		}
		ss.retire(st)
		ss.detach(st)
		ss.mu.Unlock()
	}()
	rc := http.NewResponseController(w)
	// The write deadline is the connection's: clear it for the next
	// request a keep-alive connection carries.
	defer rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: rc, timeout: ss.srv.cfg.WriteTimeout, buf: make([]byte, 0, 512)}
	sw.buf = append(sw.buf, "id: "...)
	sw.buf = append(sw.buf, eventID(st.id, from-1)...)
	sw.buf = append(sw.buf, "\nretry: "...)
	sw.buf = strconv.AppendInt(sw.buf, DefaultRetry, 10)
	sw.buf = append(sw.buf, "\ndata: \n\n"...)
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
		evs := st.from(from)
		complete := st.complete
		ss.mu.Unlock()
		for _, e := range evs {
			if err := sw.event(st.id, e); err != nil {
				return
			}
			from = e.n + 1
		}
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
		if wait > 0 && len(evs) == 0 {
			t := time.NewTimer(wait)
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
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// sseChunk is what sseWriter gathers before it writes.
const sseChunk = 32 << 10

// event writes e as an event of stream sid. The data is the child's line
// as it wrote it; a CR inside it (which JSON allows only as white space
// between tokens) would end the field, so each CR starts another data
// field, which a reader joins with "\n": white space still.
func (sw *sseWriter) event(sid uint64, e event) error {
	sw.buf = append(sw.buf, "id: "...)
	sw.buf = append(sw.buf, eventID(sid, e.n)...)
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
	sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	_, err := sw.w.Write(p)
	return err
}

// primingDelay is how long a stream's priming event waits for the first
// event, to go out in the same write.
const primingDelay = time.Millisecond

// serveJSON answers a request whose client takes JSON only: the answer's
// line is the body. Other lines routed to it (none: they go to SSE
// streams) are skipped. If the session ends before the child answers, 502.
func (ss *session) serveJSON(w http.ResponseWriter, r *http.Request, st *stream) {
	defer func() {
		ss.mu.Lock()
		// A JSON answer is not resumable: once written it is let go.
		ss.free(st.letGo())
		ss.retire(st)
		ss.mu.Unlock()
	}()
	for {
		ss.mu.Lock()
		evs := st.from(st.sent)
		complete, notify, lost := st.complete, st.notify, st.lost
		if complete {
			st.sent = st.next
		}
		ss.mu.Unlock()
		if complete || lost {
			if len(evs) == 0 || lost {
				httpError(w, http.StatusBadGateway, "the session ended before the server answered")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.Write(evs[len(evs)-1].data)
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
	ss.answered = append(ss.answered, st.id)
	if len(ss.answered) > retainStreams {
		if old := ss.streams[ss.answered[0]]; old != nil {
			ss.free(old.letGo())
		}
		delete(ss.streams, ss.answered[0])
		ss.answered = ss.answered[1:]
	}
}
