package httpfront

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/frame"
)

// session is one MCP session: one child, its two pipes, the streams its
// answers and messages go to.
type session struct {
	id   string
	srv  *Server
	conn *Conn

	inW *io.PipeWriter // the child's stdin side: POST bodies as lines
	inR *io.PipeReader
	out *router    // the child's stdout side: lines routed as written
	wmu sync.Mutex // serialises lines written to inW

	// done is closed once the caller's session has ended (Start's done)
	// and every line it wrote is routed.
	done chan struct{}

	mu         sync.Mutex // guards what follows
	pending    map[string][]*stream
	progress   map[string]*stream // by progress token, the open SSE streams that asked for progress
	streams    map[uint64]*stream // every stream a client may still resume
	order      []*stream          // open SSE streams of POSTs, oldest first
	get        *stream            // the standalone stream (GET)
	nextStream uint64
	answered   []uint64 // retired streams still kept, oldest first (retire)
	lastUse    time.Time
	busy       int  // requests being served
	ended      bool // the child's session is over: nothing more comes
	closing    bool // DELETE, idle or shutdown: stdin closed
}

// getStreamID is the standalone stream's id; POST streams count from 1.
const getStreamID = 0

func newSession(srv *Server, id string, c *Conn) *session {
	s := &session{id: id, srv: srv, conn: c, done: make(chan struct{}),
		pending: map[string][]*stream{}, progress: map[string]*stream{}, streams: map[uint64]*stream{}, nextStream: 1, lastUse: time.Now()}
	s.inR, s.inW = io.Pipe()
	s.out = &router{s: s, replayMax: srv.cfg.Replay, maxFrame: srv.cfg.MaxFrame}
	s.get = newStream(getStreamID, true, "")
	s.streams[getStreamID] = s.get
	c.In, c.Out = s.inR, s.out
	return s
}

// errEnded: the session's child is gone; a line cannot reach it.
var errEnded = errors.New("httpfront: session ended")

// send writes line and a '\n' to the child's stdin as one write.
func (s *session) send(line []byte) error {
	buf := make([]byte, len(line)+1)
	copy(buf, line)
	buf[len(line)] = '\n'
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.inW.Write(buf); err != nil {
		return errEnded
	}
	return nil
}

// open registers a stream for the request whose id key is key, before
// its line is written to the child, so that no answer can come first.
func (s *session) open(key string, sse bool, progress string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := newStream(s.nextStream, sse, key)
	if progress != "" && sse {
		st.progress = progress
		s.progress[progress] = st
	}
	s.nextStream++
	s.pending[key] = append(s.pending[key], st)
	s.streams[st.id] = st
	if sse {
		s.order = append(s.order, st)
	}
	if s.ended {
		st.complete = true
	}
	return st
}

// router is the session's Conn.Out: each whole line written to it goes
// to one stream as it is written, in the writer's goroutine (the relay's
// Downstream pump): an answer to the stream of the request with its id
// (the oldest, if two requests in flight share one); any other line to
// the newest open SSE stream of a request, else to the standalone stream
// (package documentation, "Routing"). Routing never blocks on a client:
// events wait in their streams. A partial line waits for the rest.
type router struct {
	s         *session
	replayMax int
	maxFrame  int

	mu  sync.Mutex // serialises writers; guards what follows
	buf []byte     // a partial line
	c   frame.Classifier
	f   frame.Frame
	end bool // closed: writes fail
}

// Write routes the whole lines in p; it keeps a partial one for the next
// Write. It never blocks but on the session's lock.
func (rt *router) Write(p []byte) (int, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.end {
		return 0, errEnded
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(rt.buf)+len(p) <= rt.maxFrame+1 {
				rt.buf = append(rt.buf, p...)
			}
			break
		}
		var line []byte
		if len(rt.buf) > 0 {
			line = append(rt.buf, p[:i]...)
			rt.buf = nil
		} else {
			line = append([]byte(nil), p[:i]...)
		}
		p = p[i+1:]
		rt.route(line)
	}
	return n, nil
}

// route gives one line (without its '\n', the caller's to give up) to
// its stream. Called with rt.mu held.
func (rt *router) route(line []byte) {
	payload := bytes.TrimSuffix(line, []byte{'\r'})
	rt.c.Classify(payload, &rt.f)
	s := rt.s
	s.mu.Lock()
	st := s.target(payload, &rt.f)
	st.add(payload, rt.replayMax)
	if st.key != "" && s.answers(st, &rt.f) {
		s.finish(st)
	}
	s.mu.Unlock()
}

// close routes a last line without its '\n', if any, and ends the
// session's streams: nothing more comes.
func (rt *router) close() {
	rt.mu.Lock()
	if len(rt.buf) > 0 {
		rt.route(rt.buf)
		rt.buf = nil
	}
	rt.end = true
	rt.mu.Unlock()
	s := rt.s
	s.mu.Lock()
	s.ended = true
	for _, st := range s.streams {
		st.complete = true
		st.wake()
	}
	s.pending = map[string][]*stream{}
	s.progress = map[string]*stream{}
	s.order = nil
	s.mu.Unlock()
}

// target is the stream a classified line goes to. Called with mu held.
func (s *session) target(line []byte, f *frame.Frame) *stream {
	if key, ok := answerKey(f); ok {
		if q := s.pending[key]; len(q) > 0 {
			return q[0]
		}
	}
	if len(s.progress) > 0 {
		if key, ok := notificationProgressKey(line, f); ok && s.progress[key] != nil {
			return s.progress[key]
		}
	}
	for i := len(s.order) - 1; i >= 0; i-- {
		if !s.order[i].complete {
			return s.order[i]
		}
	}
	return s.get
}

// answers reports whether f is the answer st waits for.
func (s *session) answers(st *stream, f *frame.Frame) bool {
	key, ok := answerKey(f)
	return ok && key == st.key
}

// answerKey is the id key of a line that is one response.
func answerKey(f *frame.Frame) (string, bool) {
	if f.Kind != frame.Single || len(f.Msgs) != 1 {
		return "", false
	}
	m := &f.Msgs[0]
	if !m.Answers || !m.HasID || m.ID.Key == nil {
		return "", false
	}
	return string(m.ID.Key), true
}

// finish completes st, which has its answer. Called with mu held.
func (s *session) finish(st *stream) {
	st.complete = true
	if st.progress != "" && s.progress[st.progress] == st {
		delete(s.progress, st.progress)
	}
	q := s.pending[st.key]
	for i, p := range q {
		if p == st {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.pending, st.key)
	} else {
		s.pending[st.key] = q
	}
	for i, p := range s.order {
		if p == st {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// close ends the session from the client's side: the child's stdin is
// closed (the EOF a stdio client gives), and the caller's session ends
// as wrap's does. It returns at once.
func (s *session) close() {
	s.mu.Lock()
	already := s.closing
	s.closing = true
	s.mu.Unlock()
	if !already {
		s.inW.Close() // safe beside a Write in progress (io.Pipe)
	}
}
