package relay

import (
	"bytes"

	"github.com/valyala/fastjson"

	"github.com/aegisrelay/aegis/journal/record"
)

// traceReader reads the W3C trace context a call carries in
// params._meta (traceparent, tracestate) for its intent's trace, so
// that a span built from the log continues the client's trace. A line
// without the bytes "traceparent" costs one search; one with them is
// parsed once, however many calls it holds. Only an unambiguous value is
// taken: params, _meta and each key present once, in no other case
// (readers that fold case, or keep the first or last duplicate, would
// read another), a string of its grammar (record.ValidTraceparent,
// record.ValidTracestate); anything else records no trace, or no
// tracestate. The bytes relayed are never changed.
type traceReader struct {
	line   []byte
	parsed bool
	p      fastjson.Parser
	v      *fastjson.Value // the line parsed; nil: no trace in it
}

// reset starts a new line.
func (tr *traceReader) reset(line []byte) { *tr = traceReader{line: line, p: tr.p} }

// of returns the trace of message i of the line (an element of a batch,
// or the line's one object).
func (tr *traceReader) of(i int, batch bool) record.Trace {
	if !tr.parsed {
		tr.parsed = true
		if bytes.Contains(tr.line, []byte("traceparent")) {
			tr.v, _ = tr.p.ParseBytes(tr.line)
		}
	}
	if tr.v == nil {
		return record.Trace{}
	}
	m := tr.v
	if batch {
		a, err := m.Array()
		if err != nil || i >= len(a) {
			return record.Trace{}
		}
		m = a[i]
	}
	meta := only(only(m, "params"), "_meta")
	parent := only(meta, "traceparent")
	if parent == nil || parent.Type() != fastjson.TypeString || !record.ValidTraceparent(parent.GetStringBytes()) {
		return record.Trace{}
	}
	t := record.Trace{Parent: bytes.Clone(parent.GetStringBytes())}
	if state := only(meta, "tracestate"); state != nil && state.Type() == fastjson.TypeString && record.ValidTracestate(state.GetStringBytes()) {
		t.State = bytes.Clone(state.GetStringBytes())
	}
	return t
}

// only is member key of object v when v holds it once and no key that
// equals it but for case; nil otherwise.
func only(v *fastjson.Value, key string) *fastjson.Value {
	if v == nil || v.Type() != fastjson.TypeObject {
		return nil
	}
	var found *fastjson.Value
	n, exact := 0, false
	v.GetObject().Visit(func(k []byte, m *fastjson.Value) {
		if bytes.EqualFold(k, []byte(key)) {
			found, exact = m, string(k) == key
			n++
		}
	})
	if n != 1 || !exact {
		return nil
	}
	return found
}
