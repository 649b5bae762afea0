package httpfront

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"golang.org/x/sync/semaphore"
)

// session is one MCP session: one child, its two pipes, the streams its
// answers and messages go to.
type session struct {
	id   string
	srv  *Server
	conn *Conn
	// idHeader is the Mcp-Session-Id header's value, shared by the
	// session's responses and never modified (net/http copies a header
	// as it writes it).
	idHeader []string

	lines *inbox     // the child's stdin side (Conn.In): POST bodies as lines
	out   *router    // the child's stdout side: lines routed as written
	wmu   sync.Mutex // serialises lines put in lines, each with its route
	// in counts the session's POST bodies read and not yet taken by its
	// relay (memory.go).
	in *semaphore.Weighted

	// done is closed once the caller's session has ended (Start's done)
	// and every line it wrote is routed.
	done chan struct{}
	// started is closed once Start has returned; startErr: with an error.
	// A stateless session's later first requests wait for it.
	started  chan struct{}
	startErr bool

	mu sync.Mutex // guards what follows
	// pending holds, by route key, the one request in flight with that
	// key: a request waits (request) while one of its keys is in flight.
	pending map[string]*stream
	// freed is closed, and replaced, when a request leaves pending and
	// a request waits for it (freedWaited): a request with nothing to
	// wait for makes no channel.
	freed       chan struct{}
	freedWaited bool
	progress    map[string]*stream // by progress token, the open SSE streams that asked for progress
	streams     map[uint64]*stream // every stream a client may still resume
	order       []*stream          // open SSE streams of POSTs, oldest first
	get         *stream            // the standalone stream (GET)
	nextStream  uint64
	answered    []uint64 // retired streams still kept, oldest first (retire)
	lastUse     time.Time
	busy        int  // requests being served
	ended       bool // the child's session is over: nothing more comes
	closing     bool // DELETE, idle or shutdown: stdin closed
	// held is the bytes of the events in the session's streams, counted
	// in the server's out budget too (memory.go).
	held int
	// decls are the x-mcp-header declarations of the tools the child's
	// tools/list answers listed, by tool (params.go).
	decls map[string][]paramDecl
	// drained is closed, and replaced, when a connection has sent events
	// or events were let go and the router waits for room
	// (drainedWaited).
	drained       chan struct{}
	drainedWaited bool
}

// getStreamID is the standalone stream's id; POST streams count from 1.
const getStreamID = 0

func newSession(srv *Server, id string, c *Conn) *session {
	s := &session{id: id, idHeader: []string{id}, srv: srv, conn: c, done: make(chan struct{}), started: make(chan struct{}),
		pending: map[string]*stream{}, progress: map[string]*stream{}, streams: map[uint64]*stream{}, nextStream: 1, lastUse: time.Now(),
		freed: make(chan struct{}), drained: make(chan struct{})}
	s.in = semaphore.NewWeighted(int64(srv.memory().session))
	s.lines = newInbox()
	s.out = &router{s: s, replayMax: srv.cfg.Replay, maxFrame: srv.cfg.MaxFrame}
	s.get = newStream(getStreamID, true, nil)
	s.streams[getStreamID] = s.get
	c.In, c.Out = s.lines, s.out
	return s
}

// errEnded: the session's child is gone; a line cannot reach it.
var errEnded = errors.New("httpfront: session ended")

// send puts line, a message that is no request, on the child's stdin.
// line must have room for its '\n' (readBody's buffer has it), and is
// the session's from then on; taken (may be nil) is called once the
// relay has read it, or it is dropped (inbox.put).
func (s *session) send(line []byte, taken func()) error {
	out := append(line, '\n')
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.lines.put(out, taken)
}

// request puts line, a request's, on the child's stdin, with the stream
// its answer goes to registered under keys in the same step: under wmu,
// in the order the lines reach the child, so that no answer can come
// before its route and routes are in the order of the lines.
//
// It first waits while any of keys is in flight in the session. Two
// requests in flight with one id would be answered in the order sent only
// if every answer came from the child; but the relay answers a refused
// call itself, at once, ahead of the child's answer to an earlier call
// with the same id: with one request per id in flight, every answer,
// the child's or aegis's, names the one request the log pairs it with.
// It returns errGone if ctx ends first. Once it returns an opened, the
// line is put (or the session has ended: o.written says which), and is
// the session's; taken is called once the relay has read it (or it is
// dropped). The caller goes on with session.wait.
func (s *session) request(ctx context.Context, line []byte, keys []string, sse bool, progress string, kind streamKind, taken func()) (*opened, error) {
	out := append(line, '\n')
	for {
		s.mu.Lock()
		busy, ch := s.inFlight(keys), s.freed
		s.freedWaited = s.freedWaited || busy
		s.mu.Unlock()
		if busy {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, errGone
			}
		}
		s.wmu.Lock()
		s.mu.Lock()
		if s.inFlight(keys) {
			s.mu.Unlock()
			s.wmu.Unlock()
			continue
		}
		st := s.open(keys, sse, progress)
		st.streamKind = kind
		first := st.notify
		s.mu.Unlock()
		// A put never waits for the relay to read (inbox): the child
		// may be writing lines, held back by the router, before it
		// reads this one, and some of them may be routed to this
		// request's stream, which then waits for its handler to send
		// them.
		written := make(chan error, 1)
		err := s.lines.put(out, taken)
		s.wmu.Unlock()
		if err != nil {
			s.mu.Lock()
			s.finish(st)
			s.mu.Unlock()
		}
		written <- err
		return &opened{st: st, written: written, first: first}, nil
	}
}

// opened is a request whose line is put for the child.
type opened struct {
	st      *stream
	written <-chan error  // the put's result, once
	first   chan struct{} // the stream's notify as opened: its first event
}

// wait returns once the request's line is put (errEnded if the session
// ended first), or its stream has an event to send, whichever comes
// first; or errGone when ctx ends first, and then the stream is one no
// connection writes.
func (s *session) wait(ctx context.Context, o *opened) error {
	// The put's result first when it is in (request gives it before it
	// returns): a put that failed finished the stream, which wakes first
	// too, and a select choosing at random between the two would answer a
	// request to an ended session with an empty stream half the time.
	select {
	case err := <-o.written:
		return err
	default:
	}
	select {
	case err := <-o.written:
		return err
	case <-o.first: // the writer reads the stream's events before it waits
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		if o.st.conn == 0 {
			o.st.attached = false
			s.wakeRouter()
		}
		s.mu.Unlock()
		return errGone
	}
}

// inFlight reports whether a request with one of keys is in flight.
// Called with mu held.
func (s *session) inFlight(keys []string) bool {
	if s.ended {
		return false // nothing more comes: the write fails
	}
	for _, k := range keys {
		if s.pending[k] != nil {
			return true
		}
	}
	return false
}

// open registers a stream for the request whose route keys are keys.
// Called with mu held.
func (s *session) open(keys []string, sse bool, progress string) *stream {
	st := newStream(s.nextStream, sse, keys)
	// The POST that opens the stream writes it from the start (conn 0):
	// an answer routed before that POST has begun writing is its
	// client's, not one a gone client left behind.
	st.attached = true
	if progress != "" && sse {
		st.progress = progress
		s.progress[progress] = st
	}
	s.nextStream++
	for _, k := range keys {
		s.pending[k] = st
	}
	s.streams[st.id] = st
	if sse {
		s.order = append(s.order, st)
	}
	if s.ended {
		st.complete = true
	}
	return st
}

// maxKey is the longest id key held as it is; a longer one is held as
// hashedKey and its SHA-256, as the relay's table of calls in flight
// holds them: a request costs a bounded few bytes whatever its id. Keys
// (frame.ID.Key) start with 'N', 's' or 'n', so the forms never meet.
const (
	maxKey    = 64
	hashedKey = "H"
)

// idKey is the form of an id key (frame.ID.Key) held in pending.
func idKey(key []byte) string {
	if len(key) <= maxKey {
		return string(key)
	}
	sum := sha256.Sum256(key)
	return hashedKey + string(sum[:])
}

// nullKey is the key of the id null (frame.ID.Key), taken from the frame
// package, whose key format is its own.
var nullKey = func() string {
	var c frame.Classifier
	var f frame.Frame
	c.Classify([]byte(`{"jsonrpc":"2.0","id":null,"result":{}}`), &f)
	return string(f.Msgs[0].ID.Key)
}()

// routeKeys are the keys an answer to m may carry: its id's, and, where
// its id is ambiguous (a duplicate or case-variant id member, a value of
// the wrong type beside one that is not), every other value some decoder
// keeps and null, which a peer that cannot tell the id answers with
// (JSON-RPC 2.0, 5) and the relay's refusal of such a call carries.
func routeKeys(m *frame.Message) []string {
	keys := []string{idKey(m.ID.Key)}
	if len(m.AltIDs) == 0 && !strings.HasPrefix(m.Malformed, "id:") {
		return keys
	}
	add := func(k string) {
		for _, have := range keys {
			if have == k {
				return
			}
		}
		keys = append(keys, k)
	}
	for i := range m.AltIDs {
		if k := m.AltIDs[i].Key; k != nil {
			add(idKey(k))
		}
	}
	add(nullKey)
	return keys
}

// router is the session's Conn.Out: each whole line written to it goes
// to one stream as it is written, in the writer's goroutine (the relay's
// Downstream pump): an answer to the stream of the request with its id;
// any other line to the newest open SSE stream of a request, else to the
// standalone stream (package documentation, "Routing"). Routing waits for
// a client only within the bound the package documentation gives
// ("Memory"). A partial line waits for the rest.
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
// Write.
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
			if len(rt.buf)+len(p) <= rt.maxFrame {
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
	if st == nil {
		s.mu.Unlock()
		return
	}
	learn := false
	if st.keys != nil && s.answers(st, &rt.f) {
		learn = st.toolsList && !rt.f.Msgs[0].IsError
	}
	if !st.lost && s.room(st, len(payload)) {
		st.add(payload)
		s.free(st.trim(rt.replayMax))
	}
	if st.keys != nil && s.answers(st, &rt.f) {
		s.finish(st)
	}
	s.mu.Unlock()
	if learn {
		// The event's data is never modified: read here, outside mu.
		s.learnTools(payload)
	}
}

// close routes a last line without its '\n', if any, and ends the
// session's streams: nothing more comes. The events of a stream no
// connection is writing are let go; the others once their connection
// ends (detach).
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
		if !st.attached {
			s.free(st.letGo())
		}
	}
	s.pending = map[string]*stream{}
	s.progress = map[string]*stream{}
	s.order = nil
	close(s.freed)
	s.freed, s.freedWaited = make(chan struct{}), false
	s.mu.Unlock()
}

// target is the stream a classified line goes to. Called with mu held.
func (s *session) target(line []byte, f *frame.Frame) *stream {
	if key, ok := answerKey(f); ok {
		if st := s.pending[key]; st != nil {
			return st
		}
	}
	if len(s.progress) > 0 {
		if key, ok := notificationProgressKey(line, f); ok && s.progress[key] != nil {
			return s.progress[key]
		}
	}
	if key, ok := subscriptionKey(line, f); ok {
		if st := s.pending[key]; st != nil && st.listen {
			return st
		}
	}
	for i := len(s.order) - 1; i >= 0; i-- {
		if st := s.order[i]; !st.complete && !st.listen {
			return st
		}
	}
	if s.conn.Stateless {
		return nil // no stream to carry it: the revision has no GET stream
	}
	return s.get
}

// answers reports whether f is an answer st waits for.
func (s *session) answers(st *stream, f *frame.Frame) bool {
	key, ok := answerKey(f)
	return ok && s.pending[key] == st
}

// answerKey is the route key of a line that is one response.
func answerKey(f *frame.Frame) (string, bool) {
	if f.Kind != frame.Single || len(f.Msgs) != 1 {
		return "", false
	}
	m := &f.Msgs[0]
	if !m.Answers || !m.HasID || m.ID.Key == nil {
		return "", false
	}
	return idKey(m.ID.Key), true
}

// finish completes st, which has its answer. Called with mu held.
func (s *session) finish(st *stream) {
	st.complete = true
	st.wake()
	if st.progress != "" && s.progress[st.progress] == st {
		delete(s.progress, st.progress)
	}
	for _, k := range st.keys {
		if s.pending[k] == st {
			delete(s.pending, k)
		}
	}
	for i, p := range s.order {
		if p == st {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	if s.freedWaited {
		close(s.freed)
		s.freed, s.freedWaited = make(chan struct{}), false
	}
}

// free gives n bytes of events back to the session's and the server's
// out budgets, and wakes a router waiting for room. Called with mu held.
func (s *session) free(n int) {
	if n == 0 {
		return
	}
	s.held -= n
	s.srv.memory().out.give(n)
	s.wakeRouter()
}

// wakeRouter wakes a router waiting for room. Called with mu held.
func (s *session) wakeRouter() {
	if s.drainedWaited {
		close(s.drained)
		s.drained, s.drainedWaited = make(chan struct{}), false
	}
}

// room counts n bytes of an event for st in the session's out budget and
// the server's; it reports false if they cannot be had, and the event is
// then dropped. Called with mu held, which it may let go while it waits.
//
// The rule (package documentation, "Memory"): first the events already
// sent and kept only for resumption go, then the streams whose client is
// gone (no connection writes them); then the router waits, holding the
// child's output back, for the connections writing the session's
// streams to send theirs, but no longer than Config.WriteTimeout; then
// every stream of the session still holding unsent events is dropped,
// its connection ended.
func (s *session) room(st *stream, n int) bool {
	m := s.srv.memory()
	var deadline time.Time
	for pass := 0; ; pass++ {
		fits := func() bool {
			if s.held+n <= m.session && m.out.take(n) {
				s.held += n
				return true
			}
			return false
		}
		if fits() {
			return true
		}
		s.shed(false)
		if s.held+n <= m.session {
			// The server's budget is short: the other sessions' sent
			// events and gone clients' streams go first.
			s.mu.Unlock()
			s.srv.shedOthers(s)
			s.mu.Lock()
		}
		if st.lost || s.ended {
			return false
		}
		if fits() {
			return true
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(s.srv.cfg.WriteTimeout)
		}
		if !now.Before(deadline) {
			s.shed(true)
			if !st.lost && fits() {
				return true
			}
			if st.keys != nil {
				s.lose(st)
			}
			s.srv.cfg.Logf("session %s: a child's line of %d bytes dropped: its clients read nothing for %v and the front holds its bound", s.id, n, s.srv.cfg.WriteTimeout)
			return false
		}
		ch1, ch2 := s.drained, m.out.waiter()
		s.drainedWaited = true
		s.mu.Unlock()
		waitRoom(ch1, ch2, deadline)
		s.mu.Lock()
	}
}

// shed lets go of the events the session can spare: those sent and kept
// only for resumption, the streams no connection writes (the client is
// gone), and with stalled the streams whose connection has not taken
// their events either. It reports whether it let any go. Called with mu
// held.
func (s *session) shed(stalled bool) bool {
	freed, lost := 0, false
	for _, st := range s.streams {
		freed += st.dropSent()
		if st.held == 0 || st.attached && !stalled {
			continue
		}
		if st.id == getStreamID {
			// The transport lets a server end its standalone stream at any
			// time: its messages are dropped, and a connection writing it
			// ends, to be opened again.
			freed += st.letGo()
			st.endConn()
			continue
		}
		lost = true
		s.lose(st)
	}
	if freed > 0 {
		s.held -= freed
		s.srv.memory().out.give(freed)
		s.wakeRouter()
	}
	return freed > 0 || lost
}

// lose drops st, a request's stream that held more than its client took:
// its events go, a connection writing it ends, a resumption of it is
// 404; what the child still writes for it is dropped, and its answer
// still completes it, so that no answer ever reaches another request.
// Called with mu held.
func (s *session) lose(st *stream) {
	st.lost = true
	held := st.letGo()
	s.held -= held
	s.srv.memory().out.give(held)
	s.wakeRouter()
	st.endConn()
	delete(s.streams, st.id)
	s.srv.cfg.Logf("session %s: stream %d dropped: its client did not read %d bytes in time", s.id, st.id, held)
}

// shedOthers lets go, in every session but except, of the events sent and
// kept only for resumption and of the streams no connection writes. It
// holds one session's lock at a time.
func (srv *Server) shedOthers(except *session) {
	srv.mu.Lock()
	all := make([]*session, 0, len(srv.sessions))
	for _, ss := range srv.sessions {
		if ss != except {
			all = append(all, ss)
		}
	}
	srv.mu.Unlock()
	for _, ss := range all {
		ss.mu.Lock()
		ss.shed(false)
		ss.mu.Unlock()
	}
}

// detach is called when a connection stops writing st: once the session
// has ended, st's events are let go. Called with mu held.
func (s *session) detach(st *stream) {
	if s.ended && !st.attached {
		s.free(st.letGo())
	}
}

// close ends the session from the client's side: the child's stdin is
// closed (the EOF a stdio client gives), and the caller's session ends
// as wrap's does. It returns at once.
func (s *session) close() { s.closeWith(nil) }

// closeWith is close with err, when not nil, as what Conn.In returns in
// place of io.EOF (ErrIdle).
func (s *session) closeWith(err error) {
	s.mu.Lock()
	already := s.closing
	s.closing = true
	s.mu.Unlock()
	if !already {
		s.lines.closeWrite(err) // the relay reads what was put, then err
	}
}
