package relay

import (
	"bytes"
	"encoding/json"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal/record"
)

// Tool lists (package pin): with Config.Tools, the client's tools/list
// requests are followed to their answers as initialize is (follow), and
// each clean answer is read and recorded (a tools record, and an anomaly
// when readers may read it differently) before it reaches the client.

// ToolLists reads one session's tools/list answers (pin.Session). Answer
// is given the response object msg, whether its request named a cursor,
// the call's id, the answer line's digest and length, and returns the
// records to append, in order. It is called with the relay's lock held,
// by one session.
type ToolLists interface {
	Answer(msg []byte, cursor bool, call record.Call, dg record.Digest, n int) []record.Body
}

// opToolsList marks a followed tools/list request in the table of calls
// in flight. frame does not classify tools/list (nothing else needs it),
// so the relay names it with an Op past frame's.
const opToolsList frame.Op = 255

// cursorMark in a followed tools/list's task bytes says that its request
// named a cursor: the answer is a later page of a listing.
const cursorMark = "cursor"

// followsTools reports whether m is a tools/list request to follow.
func (r *Relay) followsTools(m *frame.Message) bool {
	return r.cfg.Tools != nil && m.Type == frame.Request && m.ID.Key != nil && m.Op == frame.OpOther && string(m.Method) == "tools/list"
}

// followTools enters tools/list request m (at m.Off in line) in the table
// of calls in flight. Called with mu held.
func (r *Relay) followTools(m *frame.Message, line []byte, st *upstream, last uint64, n int) (uint64, int, error) {
	last, n, err := r.follow(m, st, nil, last, n)
	if err != nil {
		return 0, 0, err
	}
	c := r.inFlight.find(m.ID.Key)
	if c == nil {
		return last, n, nil
	}
	c.op = opToolsList
	c.task = c.task[:0]
	if hasCursor(line[m.Off:]) {
		c.task = append(c.task, cursorMark...)
	}
	return last, n, nil
}

// hasCursor reports whether the request object at the start of b names
// params.cursor (a string; null or absent is the first page).
func hasCursor(b []byte) bool {
	var req struct {
		Params struct {
			Cursor json.RawMessage `json:"cursor"`
		} `json:"params"`
	}
	if json.NewDecoder(bytes.NewReader(b)).Decode(&req) != nil {
		return false
	}
	return len(req.Params.Cursor) > 0 && string(req.Params.Cursor) != "null"
}

// toolsAnswered records m, the clean answer to the tools/list c, which
// st.dg's line holds at m.Off. Called with mu held, c removed from the
// table.
func (r *Relay) toolsAnswered(c *call, m *frame.Message, st *downstream) (uint64, int, error) {
	line := st.dg.line
	var raw json.RawMessage
	if json.NewDecoder(bytes.NewReader(line[m.Off:])).Decode(&raw) != nil {
		return 0, 0, nil
	}
	var last uint64
	n := 0
	for _, b := range r.cfg.Tools.Answer(raw, string(c.task) == cursorMark, callOf(m), st.dg.get(), len(line)) {
		seq, err := r.j.Append(b)
		if err != nil {
			return 0, 0, err
		}
		if b.Kind() == record.KindAnomaly {
			r.counts.Anomalies++
		}
		last, n = seq, n+1
	}
	return last, n, nil
}
