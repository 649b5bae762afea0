package calls

import (
	"bytes"

	"github.com/aegisrelay/aegis/journal/record"
)

// Call is one call: the intent that opened it and, once read, the outcome
// that answered it. A call is one round (one request and its response)
// today; the rounds and tasks of the protocol's later calls go here.
type Call[C any] struct {
	// Intent is the seq of the intent that opened the call.
	Intent uint64
	// Data is what the caller gave Count with the intent.
	Data C

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
	c := Call[C]{Intent: seq, Data: data, typ: id.Type}
	if len(id.Text) <= len(c.short) && id.Len <= 0 {
		c.n = uint8(copy(c.short[:], id.Text))
	} else {
		l := id
		l.Text = bytes.Clone(id.Text)
		c.long = &l
	}
	return c
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
