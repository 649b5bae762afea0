package record

import (
	"bytes"
	"math"
	"time"
)

// The canonical scanner: the fast path of decoding, and so of verify. Nearly every line of a log is an intent or an outcome; scan
// reads such a line in the order the encoder writes it, straight into a
// slot, without building a JSON tree, turning bytes into strings that
// are not interned, or allocating.
//
// scan checks the canonical form of what it reads as it reads it: a
// field in a form the encoder never writes (a leading zero, -0, an
// upper-case hex digit, a day past the end of its month) makes it give
// up, and a field whose canonical form depends on more than its own bytes
// (a string with a byte outside printable ASCII, which the encoder may
// escape or replace; an empty string the encoder writes as null or
// leaves out; an abbreviated value; a value longer than the encoder
// writes whole) makes the line loose. DecodeInto accepts a line that scan
// read exactly (not loose) as it is, and a loose one only if the record
// encodes back to exactly the line (Decoder.canonical), the check every
// record of the general decoder passes too: re-encoding a line costs
// nearly as much as scanning it, and nearly every line of a log is exact.
// Whatever scan does not expect — another kind, an escape in a string, a number outside the JSON
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
//   - a list of rounds (input_requests, input_responses) holds at most
//     MaxListEntries entries, each with its fields in the encoder's
//     order, and its "more" is in 1…2^62, as the general decoder takes
//     them; an empty bounded value is nil, as the general decoder reads
//     it;
//   - strings hold no backslash, and are their bytes between the quotes,
//     as fastjson gives them (neither checks UTF-8 nor control bytes: the
//     re-encoding escapes or replaces those, and then differs);
//   - ts is TimeLayout with every field in range, the day in its month,
//     so what passes is what time.Parse reads to the same instant (a day
//     past the end of its month, which time.Date carries into the next,
//     would not encode back to the line);
//   - a line read exactly is what the encoder writes for its record
//     (canonical holds), and its Signed is the line up to its signature,
//     or up to its closing brace when unsigned, as canonical sets it.
//
// TestScanAgrees and FuzzScanAgrees hold scan to this.

// scan decodes line into s if it is an intent or an outcome laid out as
// the encoder lays it out, and reports whether it did (scanExact).
func (d *Decoder) scan(s *Slot, line []byte) bool {
	ok, _ := d.scanExact(s, line)
	return ok
}

// scanExact decodes line into s if it is an intent or an outcome laid
// out as the encoder lays it out, and reports whether it did and whether
// it read the line exactly: every field in the one form the encoder
// writes it in, so that the line is canonical. If exact, s.rec.Signed is
// set; otherwise it is left for canonical to set.
func (d *Decoder) scanExact(s *Slot, line []byte) (ok, exact bool) {
	c := cursor{b: line}
	r := &s.rec
	c.lit(LineStart)
	seq := c.uint()
	c.lit(fieldTS)
	ts := c.time()
	c.lit(fieldSID)
	c.hex(r.SID[:])
	c.lit(fieldKind)
	kind, _ := parseKind(c.strBody())
	c.lit(fieldPrev)
	c.hex(r.Prev[:])
	c.lit(`"`)
	if c.bad {
		return false, false
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
		return false, false
	}
	r.Sig, r.AttSig, r.AttSeq = nil, nil, 0
	if c.maybe(AttField) {
		r.AttSeq = c.uint()
		c.lit(SigField)
		c.base64(s.att[:])
		c.lit(`"}`)
		r.AttSig = s.att[:]
	}
	signed := c.i
	if c.maybe(SigField) {
		c.base64(s.sig[:])
		c.lit(`"`)
		r.Sig = s.sig[:]
	}
	c.lit(`}`)
	if c.bad || c.i != len(line) {
		return false, false
	}
	if c.loose {
		return true, false
	}
	r.Signed = line[:signed]
	return true, true
}

// scanIntent reads an intent's fields (Intent.AppendFields).
func (d *Decoder) scanIntent(c *cursor, in *Intent) {
	resps := in.InputResponses[:0] // its storage, kept from line to line
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
		in.Tool, in.HasTool = c.bounded(), true
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
		in.Malformed = d.intern(c.nonEmpty())
	}
	if c.maybe(`,"revision":`) {
		in.Revision, in.HasRevision = c.boundedValue(), true
	}
	if c.maybe(`,"principal":`) {
		in.Principal = d.intern(c.nonEmpty())
	}
	if c.maybe(`,"round":{"of":`) {
		if !c.maybe(`null`) {
			in.Round.Of, in.Round.HasOf = c.uint(), true
		}
		c.lit(`,"by":`)
		in.Round.By = d.intern(c.nonEmpty())
		c.lit(`,"n":`)
		in.Round.N = int(c.int())
		c.lit(`}`)
	}
	if c.maybe(`,"request_state":"` + digestPrefix) {
		c.hex(in.RequestState[:])
		c.lit(`"`)
		in.HasRequestState = true
	}
	if c.maybe(`,"input_responses":[`) {
		in.InputResponses, in.InputResponsesMore = d.scanResponses(c, resps)
	}
	c.lit(`,"policy":{"verdict":`)
	in.Verdict = d.intern(c.nonEmpty())
	c.lit(`,"rule":`)
	switch {
	case c.maybe(`null`):
	case c.maybe(`{`):
		var rule []byte
		rule, in.RuleLen, in.RuleSum = c.abbrev()
		in.Rule = d.intern(rule)
	default:
		in.Rule = d.intern(c.nonEmpty())
		if len(in.Rule) > MaxValueBytes {
			c.loose = true // abbreviated by the encoder (appendBounded)
		}
	}
	c.lit(`,"set":`)
	in.Set = d.intern(c.nonEmpty())
	if c.maybe(`,"line":`) {
		in.RuleLine = int(c.int())
		if in.RuleLine <= 0 {
			c.loose = true // the encoder writes none
		}
	}
	if c.maybe(`,"reason":`) {
		in.PolicyReason = string(c.nonEmpty())
	}
	c.lit(`},"capability":{"grant":"deny_all"`)
	in.Refused = c.maybe(`,"status":"denied","reason":"policy blocked before capability"`)
	c.lit(`}`)
}

// scanOutcome reads an outcome's fields (Outcome.AppendFields).
func (d *Decoder) scanOutcome(c *cursor, o *Outcome) {
	reqs := o.InputRequests[:0] // its storage, kept from line to line
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
		o.Reason = d.intern(c.nonEmpty())
	}
	c.lit(`},"latency_ns":`)
	o.LatencyNS = c.int()
	if c.maybe(`,"result_type":`) {
		o.ResultType, o.HasResultType = c.boundedValue(), true
	}
	if c.maybe(`,"task_id":`) {
		o.TaskID, o.HasTaskID = c.boundedValue(), true
	}
	if c.maybe(`,"input_requests":[`) {
		o.InputRequests, o.InputRequestsMore = scanRequests(c, reqs)
	}
	if c.maybe(`,"request_state":"` + digestPrefix) {
		c.hex(o.RequestState[:])
		c.lit(`"`)
		o.HasRequestState = true
	}
}

// boundedValue reads a value appendBounded wrote: a string (bounded) or
// an abbreviated value (abbrev). An empty text is nil, as the general
// decoder reads it.
func (c *cursor) boundedValue() Bounded {
	var b Bounded
	if c.maybe(`{`) {
		b.Text, b.Len, b.Sum = c.abbrev()
	} else {
		b.Text = c.bounded()
	}
	if len(b.Text) == 0 {
		b.Text = nil
	}
	return b
}

// scanRequests reads the entries of input_requests after its opening
// bracket, and the "more" after it, into rs[:0] (a list is never nil, as
// the general decoder reads it). More than MaxListEntries entries, or a
// "more" out of its range, fail the read (the general decoder rejects
// them).
func scanRequests(c *cursor, rs []InputRequest) ([]InputRequest, int) {
	if rs == nil {
		rs = make([]InputRequest, 0, 4)
	}
	for !c.bad && !c.maybe(`]`) {
		if len(rs) > 0 {
			c.lit(`,`)
		}
		c.lit(`{"key":`)
		r := InputRequest{Key: c.boundedValue()}
		c.lit(`,"method":`)
		if !c.maybe(`null`) {
			r.Method, r.HasMethod = c.boundedValue(), true
		}
		c.lit(`}`)
		if rs = append(rs, r); len(rs) > MaxListEntries {
			c.bad = true
		}
	}
	return rs, c.more()
}

// scanResponses reads the entries of input_responses after its opening
// bracket, and the "more" after it, into rs[:0], as scanRequests does.
func (d *Decoder) scanResponses(c *cursor, rs []InputResponse) ([]InputResponse, int) {
	if rs == nil {
		rs = make([]InputResponse, 0, 4)
	}
	for !c.bad && !c.maybe(`]`) {
		if len(rs) > 0 {
			c.lit(`,`)
		}
		c.lit(`{"key":`)
		r := InputResponse{Key: c.boundedValue()}
		c.lit(`,"action":`)
		if !c.maybe(`null`) {
			r.Action = d.intern(c.nonEmpty())
		}
		c.lit(`}`)
		if rs = append(rs, r); len(rs) > MaxListEntries {
			c.bad = true
		}
	}
	return rs, c.more()
}

// more reads the "more" that may follow a list: 1 to 2^62, as the
// general decoder takes it.
func (c *cursor) more() int {
	if !c.maybe(`,"more":`) {
		return 0
	}
	n := c.uint()
	if n == 0 || n > 1<<62 {
		c.bad = true
	}
	return int(n)
}

// cursor reads a line from left to right. Its first failure sticks: every
// later read returns a zero value and consumes nothing, so that a scan
// reads straight through and checks bad once. loose: a read took text
// whose canonical form it did not check (scanExact).
type cursor struct {
	b     []byte
	i     int
	bad   bool
	loose bool
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

// uint reads an unsigned integer: one or more digits, at most MaxUint64,
// without a leading zero (strconv.AppendUint writes none).
func (c *cursor) uint() uint64 {
	start := c.i
	if n := c.digits(); n == 0 || n > 1 && c.b[start] == '0' {
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
// int64's range; not -0 (strconv.AppendInt writes 0).
func (c *cursor) int() int64 {
	neg := c.maybe("-")
	u := c.uint()
	switch {
	case c.bad:
		return 0
	case neg && u == 0:
		c.bad = true
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
// fails the read; a byte outside printable ASCII, which the encoder may
// escape or replace (appendString), makes the read loose. The bytes alias
// the line; their capacity ends with them.
func (c *cursor) strBody() []byte {
	if c.bad {
		return nil
	}
	rest := c.b[c.i:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		c.bad = true
		return nil
	}
	for _, b := range rest[:end] {
		switch {
		case b == '\\':
			c.bad = true
			return nil
		case b < 0x20 || b >= 0x80:
			c.loose = true
		}
	}
	c.i += end + 1
	return rest[:end:end]
}

// str reads a string without escapes (strBody).
func (c *cursor) str() []byte {
	c.lit(`"`)
	return c.strBody()
}

// nonEmpty reads a string (str) that the encoder writes only when it is
// not empty: an empty one is loose (written as null, left out, or
// replaced by a default).
func (c *cursor) nonEmpty() []byte {
	s := c.str()
	if len(s) == 0 {
		c.loose = true
	}
	return s
}

// bounded reads a string (str) that the encoder abbreviates when it is
// longer than MaxValueBytes (appendBounded): a longer one is loose.
func (c *cursor) bounded() []byte {
	s := c.str()
	if len(s) > MaxValueBytes {
		c.loose = true
	}
	return s
}

// hex reads 2×len(dst) lower-case hex digits into dst, the only case
// the encoder writes (hex.AppendEncode).
func (c *cursor) hex(dst []byte) {
	n := 2 * len(dst)
	if c.bad || len(c.b)-c.i < n {
		c.bad = true
		return
	}
	src := c.b[c.i : c.i+n]
	var bad byte
	for i := range dst {
		hi, lo := lowerHex[src[2*i]], lowerHex[src[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo&0xf
	}
	if bad&0x80 != 0 {
		c.bad = true
		return
	}
	c.i += n
}

// lowerHex maps a lower-case hex digit to its value and any other byte to
// 0xff.
var lowerHex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, d := range []byte("0123456789abcdef") {
		t[d] = byte(i)
	}
	return t
}()

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
	// The decoder skips line ends wherever they are: a text with them is
	// not the one the encoder writes.
	if bytes.IndexByte(rest[:end], '\r') >= 0 || bytes.IndexByte(rest[:end], '\n') >= 0 {
		c.loose = true
	}
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
		return Call{Type: IDString, Text: c.bounded()}
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
	if c.i-start > MaxValueBytes {
		c.loose = true // abbreviated by the encoder (Call.fitsWhole)
	}
	return Call{Type: IDNumber, Text: c.b[start:c.i:c.i]}
}

// abbrev reads the fields of an abbreviated value after its opening
// brace (and, for a call, its type), as appendAbbrev writes them; the
// prefix aliases the line. bytes is in int's range, as the general
// decoder requires. The read is loose: whether the encoder abbreviates the
// value, and to that prefix, depends on more than these fields.
func (c *cursor) abbrev() (prefix []byte, n int, sum Digest) {
	c.loose = true
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
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 || nsec < 0 {
		c.bad = true
		return time.Time{}
	}
	c.i += n
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
}

// daysIn returns the days of month (1–12) in year, by the Gregorian
// calendar time.Date uses: it carries a later day into the next month,
// and the record would encode otherwise.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
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
