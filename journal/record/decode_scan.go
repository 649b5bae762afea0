package record

import (
	"bytes"
	"encoding/hex"
	"math"
	"time"
)

// The canonical scanner: the fast path of decoding, and so of verify. Nearly every line of a log is an intent or an outcome; scan
// reads such a line in the order the encoder writes it, straight into a
// slot, without building a JSON tree, turning bytes into strings that
// are not interned, or allocating.
//
// scan only reads. DecodeInto accepts a line that scan read only if the
// record encodes back to exactly the line (Decoder.canonical), the check
// every record of the general decoder passes too. Whatever scan does not
// expect — another kind, an escape in a string, a number outside the JSON
// grammar, a field out of range — makes it give up, and the general
// decoder judges the line, with its own errors. So that the two agree on
// every line, scan accepts only lines the general decoder accepts, and
// reads them to the same values:
//
//   - integers are digits (and a '-' where the field is signed) in the
//     field's range, as fastjson's Uint64 and Int64 read them;
//   - a call id that is a number follows the JSON grammar, and is kept as
//     written, as fastjson keeps it;
//   - an abbreviated call id, tool name or rule (appendAbbrev) has its
//     fields in the encoder's order (the canonical check would reject
//     any other), and "bytes" in int's range;
//   - strings hold no backslash, and are their bytes between the quotes,
//     as fastjson gives them (neither checks UTF-8 nor control bytes: the
//     re-encoding escapes or replaces those, and then differs);
//   - ts is TimeLayout with every field in range; a day past the end of
//     its month is left to the re-encoding (time.Date carries it into the
//     next month), so what passes is what time.Parse reads to the same
//     instant.
//
// TestScanAgrees and FuzzScanAgrees hold scan to this.

// scan decodes line into s if it is an intent or an outcome laid out as
// the encoder lays it out, and reports whether it did. s.rec.Signed is
// left for canonical to set.
func (d *Decoder) scan(s *Slot, line []byte) bool {
	c := cursor{b: line}
	r := &s.rec
	c.lit(`{"v":2,"seq":`)
	seq := c.uint()
	c.lit(`,"ts":"`)
	ts := c.time()
	c.lit(`","sid":"`)
	c.hex(r.SID[:])
	c.lit(`","kind":"`)
	kind, _ := parseKind(c.strBody())
	c.lit(`,"prev":"` + digestPrefix)
	c.hex(r.Prev[:])
	c.lit(`"`)
	if c.bad {
		return false
	}
	r.Seq, r.TS, r.Kind, r.Signed = seq, ts, kind, nil
	switch kind {
	case KindIntent:
		d.scanIntent(&c, &s.in)
		r.Body = &s.in
	case KindOutcome:
		d.scanOutcome(&c, &s.out)
		r.Body = &s.out
	default:
		return false
	}
	r.Sig = nil
	if c.maybe(SigField) {
		c.base64(s.sig[:])
		c.lit(`"`)
		r.Sig = s.sig[:]
	}
	c.lit(`}`)
	return !c.bad && c.i == len(line)
}

// scanIntent reads an intent's fields (Intent.AppendFields).
func (d *Decoder) scanIntent(c *cursor, in *Intent) {
	*in = Intent{}
	c.lit(`,"call":`)
	in.Call = c.call()
	c.lit(`,"tool":`)
	switch {
	case c.maybe(`null`):
	case c.maybe(`{`):
		in.Tool, in.ToolLen, in.ToolSum = c.abbrev()
		in.HasTool = true
	default:
		in.Tool, in.HasTool = c.str(), true
	}
	c.lit(`,"request_digest":"` + digestPrefix)
	c.hex(in.RequestDigest[:])
	c.lit(`"`)
	if c.maybe(`,"batch":{"index":`) {
		in.BatchIndex = int(c.int())
		c.lit(`,"size":`)
		in.BatchSize = int(c.int())
		c.lit(`}`)
		if in.BatchSize <= 0 {
			c.bad = true
		}
	}
	if c.maybe(`,"malformed":`) {
		in.Malformed = d.intern(c.str())
	}
	c.lit(`,"policy":{"verdict":`)
	in.Verdict = d.intern(c.str())
	c.lit(`,"rule":`)
	switch {
	case c.maybe(`null`):
	case c.maybe(`{`):
		var rule []byte
		rule, in.RuleLen, in.RuleSum = c.abbrev()
		in.Rule = d.intern(rule)
	default:
		in.Rule = d.intern(c.str())
	}
	c.lit(`,"set":`)
	in.Set = d.intern(c.str())
	c.lit(`},"capability":{"grant":"deny_all"`)
	in.Refused = c.maybe(`,"status":"denied","reason":"policy blocked before capability"`)
	c.lit(`}`)
}

// scanOutcome reads an outcome's fields (Outcome.AppendFields).
func (d *Decoder) scanOutcome(c *cursor, o *Outcome) {
	*o = Outcome{}
	c.lit(`,"call":`)
	o.Call = c.call()
	c.lit(`,"intent":`)
	o.Intent = c.uint()
	c.lit(`,"response_digest":`)
	if !c.maybe(`null`) {
		c.lit(`"` + digestPrefix)
		c.hex(o.ResponseDigest[:])
		c.lit(`"`)
		o.HasResponse = true
	}
	c.lit(`,"execution":{"status":`)
	o.Status = d.intern(c.str())
	c.lit(`,"reason":`)
	if !c.maybe(`null`) {
		o.Reason = d.intern(c.str())
	}
	c.lit(`},"latency_ns":`)
	o.LatencyNS = c.int()
}

// cursor reads a line from left to right. Its first failure sticks: every
// later read returns a zero value and consumes nothing, so that a scan
// reads straight through and checks bad once.
type cursor struct {
	b   []byte
	i   int
	bad bool
}

// lit consumes s, which must come next.
func (c *cursor) lit(s string) {
	if !c.maybe(s) {
		c.bad = true
	}
}

// maybe consumes s if it comes next, and reports whether it did.
func (c *cursor) maybe(s string) bool {
	if c.bad || len(c.b)-c.i < len(s) || string(c.b[c.i:c.i+len(s)]) != s {
		return false
	}
	c.i += len(s)
	return true
}

// digits consumes a run of decimal digits and returns how many there were.
func (c *cursor) digits() int {
	if c.bad {
		return 0
	}
	start := c.i
	for c.i < len(c.b) && c.b[c.i]-'0' <= 9 {
		c.i++
	}
	return c.i - start
}

// uint reads an unsigned integer: one or more digits, at most MaxUint64.
func (c *cursor) uint() uint64 {
	start := c.i
	if c.digits() == 0 {
		c.bad = true
		return 0
	}
	var n uint64
	for _, b := range c.b[start:c.i] {
		x := uint64(b - '0')
		if n > (math.MaxUint64-x)/10 {
			c.bad = true
			return 0
		}
		n = n*10 + x
	}
	return n
}

// int reads a signed integer: a '-' or not, then uint's digits, in
// int64's range.
func (c *cursor) int() int64 {
	neg := c.maybe("-")
	u := c.uint()
	switch {
	case c.bad:
		return 0
	case neg && u <= 1<<63:
		return -int64(u) // 1<<63 wraps to MinInt64, which is its own negation
	case !neg && u <= math.MaxInt64:
		return int64(u)
	}
	c.bad = true
	return 0
}

// strBody reads the rest of a string whose opening quote is consumed: its
// bytes up to the closing quote, which it consumes. A backslash before it
// fails the read. The bytes alias the line; their capacity ends with them.
func (c *cursor) strBody() []byte {
	if c.bad {
		return nil
	}
	rest := c.b[c.i:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		c.bad = true
		return nil
	}
	c.i += end + 1
	return rest[:end:end]
}

// str reads a string without escapes (strBody).
func (c *cursor) str() []byte {
	c.lit(`"`)
	return c.strBody()
}

// hex reads 2×len(dst) hex digits into dst.
func (c *cursor) hex(dst []byte) {
	n := 2 * len(dst)
	if c.bad || len(c.b)-c.i < n {
		c.bad = true
		return
	}
	if _, err := hex.Decode(dst, c.b[c.i:c.i+n]); err != nil {
		c.bad = true
		return
	}
	c.i += n
}

// base64 reads standard base64, with padding, of exactly len(dst) bytes
// into dst, up to the closing quote (not consumed).
func (c *cursor) base64(dst []byte) {
	if c.bad {
		return
	}
	rest := c.b[c.i:]
	end := bytes.IndexByte(rest, '"')
	var buf [66]byte // DecodedLen of a signature's 88 characters
	if end != strictBase64.EncodedLen(len(dst)) || strictBase64.DecodedLen(end) > len(buf) {
		c.bad = true
		return
	}
	n, err := strictBase64.Decode(buf[:], rest[:end])
	if err != nil || n != len(dst) {
		c.bad = true
		return
	}
	copy(dst, buf[:n])
	c.i += end
}

// call reads a JSON-RPC id: null, a string without escapes, or a number
// by the JSON grammar. A string's or number's Text aliases the line.
func (c *cursor) call() Call {
	switch {
	case c.bad || c.i >= len(c.b):
		c.bad = true
		return Call{}
	case c.maybe(`null`):
		return Call{Type: IDNull}
	case c.b[c.i] == '"':
		return Call{Type: IDString, Text: c.str()}
	case c.maybe(`{"type":"number",`):
		text, n, sum := c.abbrev()
		return Call{Type: IDNumber, Text: text, Len: n, Sum: sum}
	case c.maybe(`{"type":"string",`):
		text, n, sum := c.abbrev()
		return Call{Type: IDString, Text: text, Len: n, Sum: sum}
	}
	start := c.i
	c.maybe("-")
	if !c.maybe("0") {
		if c.i >= len(c.b) || c.b[c.i] < '1' || c.b[c.i] > '9' {
			c.bad = true
			return Call{}
		}
		c.digits()
	}
	if c.maybe(".") && c.digits() == 0 {
		c.bad = true
	}
	if c.maybe("e") || c.maybe("E") {
		_ = c.maybe("+") || c.maybe("-")
		if c.digits() == 0 {
			c.bad = true
		}
	}
	if c.bad {
		return Call{}
	}
	return Call{Type: IDNumber, Text: c.b[start:c.i:c.i]}
}

// abbrev reads the fields of an abbreviated value after its opening
// brace (and, for a call, its type), as appendAbbrev writes them; the
// prefix aliases the line. bytes is in int's range, as the general
// decoder requires.
func (c *cursor) abbrev() (prefix []byte, n int, sum Digest) {
	c.lit(`"prefix":`)
	prefix = c.str()
	c.lit(`,"bytes":`)
	u := c.uint()
	if u > math.MaxInt {
		c.bad = true
	}
	c.lit(`,"sha256":"` + digestPrefix)
	c.hex(sum[:])
	c.lit(`"}`)
	if c.bad {
		return nil, 0, Digest{}
	}
	return prefix, int(u), sum
}

// time reads a ts (TimeLayout), each field in its range.
func (c *cursor) time() time.Time {
	const n = len(TimeLayout)
	if c.bad || len(c.b)-c.i < n {
		c.bad = true
		return time.Time{}
	}
	b := c.b[c.i : c.i+n]
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[29] != 'Z' {
		c.bad = true
		return time.Time{}
	}
	year, month, day := decimal(b[0:4]), decimal(b[5:7]), decimal(b[8:10])
	hour, minute, sec, nsec := decimal(b[11:13]), decimal(b[14:16]), decimal(b[17:19]), decimal(b[20:29])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > 31 ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 || nsec < 0 {
		c.bad = true
		return time.Time{}
	}
	c.i += n
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
}

// decimal returns the value of b, up to nine decimal digits, or -1 if b
// holds anything else.
func decimal(b []byte) int {
	n := 0
	for _, x := range b {
		if x-'0' > 9 {
			return -1
		}
		n = n*10 + int(x-'0')
	}
	return n
}

// appendTS appends t as AppendTime does — TimeLayout, in UTC — without
// interpreting the layout, which is a fifth of the cost of decoding a
// line (canonical re-encodes every ts). A year TimeLayout does not write
// in four digits goes to AppendTime. TestAppendTS holds the two equal.
func appendTS(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return AppendTime(dst, t)
	}
	hour, minute, sec := t.Clock()
	b := [len(TimeLayout)]byte{4: '-', 7: '-', 10: 'T', 13: ':', 16: ':', 19: '.', 29: 'Z'}
	putDecimal(b[0:4], year)
	putDecimal(b[5:7], int(month))
	putDecimal(b[8:10], day)
	putDecimal(b[11:13], hour)
	putDecimal(b[14:16], minute)
	putDecimal(b[17:19], sec)
	putDecimal(b[20:29], t.Nanosecond())
	return append(dst, b[:]...)
}

// putDecimal writes v into b in decimal, zero-padded to len(b) digits.
func putDecimal(b []byte, v int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}
