package httpfront

import (
	"strconv"
	"strings"
)

// event is one SSE event of a stream: its number in the stream (its id is
// "<stream>-<n>") and its data, a child's line without its line ending.
type event struct {
	n    uint64
	data []byte
}

// stream is the server's side of one SSE stream (or, for a client that
// takes JSON, of one answer): the events routed to it, kept until sent and
// then, up to replayMax of them, for a client that resumes with
// Last-Event-ID. Its fields are guarded by the session's mu.
type stream struct {
	id  uint64
	sse bool // an SSE stream; false: one JSON answer to a POST
	// keys are the route keys of the request it answers (routeKeys); nil
	// for the GET stream.
	keys []string
	// progress is the key of the progress token its request asked for
	// (progress.go), or "".
	progress string
	// events from first on, in order; held is the bytes of their data,
	// counted in the session's out budget.
	events []event
	held   int
	next   uint64 // the number of the next event
	sent   uint64 // events below it were written to a connection
	// complete: the answer is in (or the session ended); no more events.
	complete bool
	// lost: dropped for holding more than its client took (session.lose):
	// what is routed to it is dropped; no connection writes it again.
	lost bool
	// attached: a connection is writing the stream now, the conn'th
	// (0: the POST that opened it, from its start, so that its events
	// are never taken for a gone client's before it writes them).
	attached bool
	conn     uint64
	// writer ends the connection writing the stream (nil: none).
	writer *cutter
	// retired: answered and sent, counted among the streams kept.
	retired bool
	streamKind
	// cancelled: its client left before its answer (session.cancel).
	cancelled bool
	// notify wakes the connection writing the stream (capacity 1); each
	// connection has its own, closed when another takes the stream over.
	notify chan struct{}
}

// streamKind is what a stateless request's stream is, set as it opens.
type streamKind struct {
	// modern: a stateless (2026-07-28) request's, never resumed.
	modern bool
	// listen: a subscriptions/listen's, which carries the notifications
	// naming its id as their subscription.
	listen bool
	// toolsList: a tools/list's, whose answer tells the x-mcp-header
	// declarations of the tools (params.go).
	toolsList bool
}

func newStream(id uint64, sse bool, keys []string) *stream {
	return &stream{id: id, sse: sse, keys: keys, next: 1, sent: 1, notify: make(chan struct{}, 1)}
}

// add appends an event holding data (which it keeps: the caller gives it
// up, and has counted it) and wakes the connection writing the stream.
func (st *stream) add(data []byte) {
	st.events = append(st.events, event{n: st.next, data: data})
	st.held += len(data)
	st.next++
	st.wake()
}

// trim drops the oldest events already sent beyond replayMax; on the
// standalone stream, the oldest beyond replayMax whether sent or not: the
// server's messages there wait for a GET that may never come, and the
// transport lets a server close that stream at any time. It returns the
// bytes let go.
func (st *stream) trim(replayMax int) int {
	drop := 0
	for drop < len(st.events)-replayMax && (st.events[drop].n < st.sent || st.id == getStreamID) {
		drop++
	}
	return st.dropFirst(drop)
}

// dropSent drops every event already sent (kept only for a resumption)
// and returns the bytes let go.
func (st *stream) dropSent() int {
	drop := 0
	for drop < len(st.events) && st.events[drop].n < st.sent {
		drop++
	}
	return st.dropFirst(drop)
}

// letGo drops every event, sent or not, and returns the bytes let go.
func (st *stream) letGo() int {
	return st.dropFirst(len(st.events))
}

func (st *stream) dropFirst(drop int) int {
	if drop == 0 {
		return 0
	}
	freed := 0
	for _, e := range st.events[:drop] {
		freed += len(e.data)
	}
	n := copy(st.events, st.events[drop:])
	clear(st.events[n:])
	st.events = st.events[:n]
	st.held -= freed
	return freed
}

func (st *stream) wake() {
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// from returns the events numbered n and after, as many as make limit
// bytes of data (one at least), and whether more follow, in dst's array
// when it has room; the slice is the caller's, the data shared (never
// modified). A writer takes a
// bounded part of a stream at a time: events that the front lets go
// while a writer holds them (a standalone stream's oldest, beyond
// Replay) are memory beyond the count until that writer is done.
func (st *stream) from(dst []event, n uint64, limit int) (evs []event, more bool) {
	i := 0
	for i < len(st.events) && st.events[i].n < n {
		i++
	}
	j, size := i, 0
	for j < len(st.events) && (j == i || size+len(st.events[j].data) <= limit) {
		size += len(st.events[j].data)
		j++
	}
	return append(dst[:0], st.events[i:j]...), j < len(st.events)
}

// endConn ends the connection writing st, if one is: the write in
// progress fails at once, and the stream is free for another. Called
// with the session's mu held.
func (st *stream) endConn() {
	if st.writer != nil {
		st.writer.end()
		st.writer = nil
	}
	st.attached = false
	st.conn++
	st.wake()
}

// eventID is the SSE id of event n of stream s: the stream is named in it,
// so that Last-Event-ID says which stream to resume and where.
func eventID(s, n uint64) string {
	return string(appendEventID(nil, s, n))
}

// appendEventID appends eventID(s, n) to b.
func appendEventID(b []byte, s, n uint64) []byte {
	b = strconv.AppendUint(b, s, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, n, 10)
}

// parseEventID reads an id eventID wrote.
func parseEventID(id string) (s, n uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(a, 10, 64)
	n, err2 := strconv.ParseUint(b, 10, 64)
	return s, n, err1 == nil && err2 == nil
}
