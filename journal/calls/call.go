package calls

import (
	"bytes"

	"github.com/aegisrelay/aegis/journal/record"
)

// Call is one call: the intent that opened it and, once read, what
// answered it: an outcome; or several rounds, each an intent and its
// outcome, every round after the first linked to the input_required
// outcome before it (doc.go, "Rounds and tasks"); and, if an outcome made
// it a task, the task's records up to its end. Status and LatencyNS are
// the call's so far, final once Done.
type Call[C any] struct {
	// Intent is the seq of the intent that opened the call.
	Intent uint64
	// Data is what the caller gave Count with the intent.
	Data C
	// Status is the final status so far: the last round's outcome status,
	// or its task's end status; "" until the first outcome is read.
	Status string
	// Reason is the outcome's (or the task end's) execution reason.
	Reason string
	// ResultType is the final outcome's result_type when its status is
	// other (the resultType that names what the answer was).
	ResultType string
	// LatencyNS is the call's whole latency, from its first intent to its
	// final outcome or task end, when HasLatency: the recorded latency_ns
	// where that is the whole (a call of one round, a task of the first
	// round), else the difference of the records' ts.
	LatencyNS  int64
	HasLatency bool
	// Done: nothing more will be added to the call, by the records or by
	// the end of its session (a call awaiting a retry or a task end when
	// its session closes is done as it is).
	Done bool

	start int64      // the first intent's ts, in Unix nanoseconds
	t     *thread[C] // the rounds and task; nil for a call of one round and no task

	// The call's id, kept beyond the record it was decoded from (whose
	// Text aliases a line that will be recycled). An id of up to
	// len(short) bytes — nearly every one — is kept inline, so that
	// keeping it allocates nothing; a longer one, or an abbreviated one,
	// is copied (a decoded id holds at most MaxValueBytes).
	typ   record.IDType
	n     uint8
	short [22]byte
	long  *record.Call
}

func makeCall[C any](seq uint64, id record.Call, data C) Call[C] {
	c := Call[C]{Intent: seq, Data: data}
	c.setID(id)
	return c
}

// setID keeps id as the call's (inline if short).
func (c *Call[C]) setID(id record.Call) {
	c.typ, c.n, c.long = id.Type, 0, nil
	if len(id.Text) <= len(c.short) && id.Len <= 0 {
		c.n = uint8(copy(c.short[:], id.Text))
	} else {
		l := id
		l.Text = bytes.Clone(id.Text)
		c.long = &l
	}
}

// matches reports whether id is the call's id: recorded the same, whole
// or abbreviated.
func (c *Call[C]) matches(id record.Call) bool {
	if c.long != nil {
		l := c.long
		return l.Type == id.Type && l.Len == id.Len && l.Sum == id.Sum && bytes.Equal(l.Text, id.Text)
	}
	return c.typ == id.Type && id.Len <= 0 && bytes.Equal(c.short[:c.n], id.Text)
}

// ID returns the call's id as its intent recorded it; its Text aliases c.
func (c *Call[C]) ID() record.Call {
	if c.long != nil {
		return *c.long
	}
	return record.Call{Type: c.typ, Text: c.short[:c.n]}
}

// callText is id as its record writes it.
func callText(id record.Call) string {
	return string(record.AppendCall(nil, id)[len(`"call":`):])
}
