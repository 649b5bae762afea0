package httpfront

import (
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
	buf := make([]byte, 0, 512)
	buf = append(buf, "id: "...)
	buf = append(buf, eventID(st.id, from-1)...)
	buf = append(buf, "\nretry: "...)
	buf = strconv.AppendInt(buf, DefaultRetry, 10)
	buf = append(buf, "\ndata: \n\n"...)
	// What is written is flushed only when the stream must wait: a call
	// answered at once goes out as one write, its priming event, its
	// events and the stream's end together; one answered later gets its
	// priming event after primingDelay at most.
	wait := primingDelay
	for {
		ss.mu.Lock()
		if st.conn != conn { // taken over by a resumption
			ss.mu.Unlock()
			return
		}
		evs := st.from(from)
		complete := st.complete
		ss.mu.Unlock()
		for _, e := range evs {
			buf = appendEvent(buf, st.id, e)
			from = e.n + 1
		}
		if len(buf) > 0 {
			rc.SetWriteDeadline(time.Now().Add(ss.srv.cfg.WriteTimeout))
			if _, err := w.Write(buf); err != nil {
				return
			}
			buf = buf[:0]
			ss.mu.Lock()
			if from > st.sent {
				st.sent = from
				st.trim(ss.srv.cfg.Replay)
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

// primingDelay is how long a stream's priming event waits for the first
// event, to go out in the same write.
const primingDelay = time.Millisecond

// appendEvent appends e as an SSE event of stream sid. The data is the
// child's line as it wrote it; a CR inside it (which JSON allows only
// as white space between tokens) would end the field, so each CR starts
// another data field, which a reader joins with "\n": white space still.
func appendEvent(buf []byte, sid uint64, e event) []byte {
	buf = append(buf, "id: "...)
	buf = append(buf, eventID(sid, e.n)...)
	buf = append(buf, "\ndata: "...)
	for _, b := range e.data {
		if b == '\r' {
			buf = append(buf, "\ndata: "...)
			continue
		}
		buf = append(buf, b)
	}
	return append(buf, "\n\n"...)
}

// serveJSON answers a request whose client takes JSON only: the answer's
// line is the body. Other lines routed to it (none: they go to SSE
// streams) are skipped. If the session ends before the child answers, 502.
func (ss *session) serveJSON(w http.ResponseWriter, r *http.Request, st *stream) {
	defer func() {
		ss.mu.Lock()
		ss.retire(st)
		ss.mu.Unlock()
	}()
	for {
		ss.mu.Lock()
		evs := st.from(st.sent)
		complete, notify := st.complete, st.notify
		if complete {
			st.sent = st.next
		}
		ss.mu.Unlock()
		if complete {
			if len(evs) == 0 {
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
		delete(ss.streams, ss.answered[0])
		ss.answered = ss.answered[1:]
	}
}
