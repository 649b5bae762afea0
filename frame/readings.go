package frame

import (
	"bytes"
	"cmp"
	"slices"
)

// This file reads a line as the other readers a peer may use would, and
// collects what they find that the line read as one JSON value does not
// (Frame.Hidden). The readers and how they split and read are written down
// in doc.go ("Every reading of a line").

// otherReadings fills f.Hidden, and sets f.Anomaly where the readings
// differ, once the line has been read as one value into f. A line without
// a bare CR inside it that is one JSON value with no message in a nested
// array (nearly every line) costs one IndexByte.
func (c *Classifier) otherReadings(line []byte, f *Frame) {
	cr := interiorCR(line)
	nested := c.others > 0 // messages in arrays nested in the batch
	if f.Kind != NotJSON && !cr && !nested {
		return
	}
	prev := c.out
	c.out, c.lenient = &c.hidden, true
	if f.Kind == NotJSON {
		// A stream decoder (Go's json.Decoder, the Go SDK) or one that
		// reads the first value and ignores the rest (Jackson's default)
		// reads the values at the front of the line.
		c.stream(line, 0)
	}
	if cr {
		content := line
		if n := len(content); n > 0 && content[n-1] == '\n' {
			content = content[:n-1]
		}
		full := 0
		for base := 0; base <= len(content); {
			k := bytes.IndexByte(content[base:], '\r')
			if k < 0 {
				k = len(content) - base
			}
			piece := content[base : base+k]
			if skipWS(piece, 0) < len(piece) {
				full++
				c.stream(piece, base)
			}
			base += k + 1
		}
		if full > 1 && f.Anomaly == "" {
			f.Anomaly = AnomalyCR
		}
	}
	if nested && f.Anomaly == "" {
		f.Anomaly = AnomalyNested
	}
	c.out, c.base, c.failed, c.lenient = prev, 0, failNone, false
	if f.Anomaly != "" {
		f.Hidden = c.unseen(f.Msgs)
	}
}

// interiorCR reports whether line has a CR that a reader ending lines at a
// bare CR would end a line at before the line's own end: any CR but one
// right before the final '\n' or at the very end.
func interiorCR(line []byte) bool {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return bytes.IndexByte(line[:n], '\r') >= 0
}

// stream reads seg (at offset base in the line) as a stream decoder does:
// value after value, white space between, until the end or the first byte
// that does not start a valid value. It reads as leniently as the readers
// it stands for: a leading byte order mark is skipped, as some readers
// drop it, and NaN and ±Infinity are numbers, as Python's json reads them.
func (c *Classifier) stream(seg []byte, base int) {
	c.base = base
	i := skipWS(seg, 0)
	if bytes.HasPrefix(seg[i:], bom) {
		i = skipWS(seg, i+len(bom))
	}
	for i < len(seg) && len(c.hidden) < MaxBatch {
		c.failed = failNone
		switch seg[i] {
		case '{':
			i = c.message(seg, i, 0)
		case '[':
			i, _ = c.batch(seg, i, 0)
		default:
			i = c.skipValue(seg, i, 0)
		}
		if i < 0 {
			return
		}
		i = skipWS(seg, i)
	}
}

// unseen keeps in c.hidden the tool calls and answers (all it holds) that
// seen (ordered by Off) does not hold, each object once, ordered by Off,
// and returns them.
func (c *Classifier) unseen(seen []Message) []Message {
	h := c.hidden
	slices.SortStableFunc(h, func(a, b Message) int { return cmp.Compare(a.Off, b.Off) })
	out, last := h[:0], -1
	for _, m := range h {
		if m.Off == last {
			continue
		}
		last = m.Off
		if _, found := slices.BinarySearchFunc(seen, m.Off, func(s Message, off int) int { return cmp.Compare(s.Off, off) }); found {
			continue
		}
		out = append(out, m)
	}
	c.hidden = out
	return out
}
