package record

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"math"
	"time"

	"github.com/valyala/fastjson"
)

// Record is one decoded line of a log.
type Record struct {
	Seq  uint64
	TS   time.Time
	SID  [16]byte
	Kind Kind
	Prev Digest
	Body Body   // *SessionStart, *Intent, … matching Kind
	Sig  []byte // nil when the line is unsigned
	// Signed is the part of the line the signature covers (everything
	// before `,"sig":`); it aliases the line passed to Decoder.Decode.
	Signed []byte
	// AttSig, when not nil, is the record's attestation (AppendAtt): a
	// signature, by its session's key, of the line with seq AttSeq
	// (AppendAttestMessage).
	AttSig []byte
	AttSeq uint64
}

// Decoder decodes lines into Records, checking that each line is exactly
// what the journal's encoder writes for it. Not goroutine-safe; reusable.
// It keeps its parser's memory, its encoding buffer and up to maxInterned
// short strings it has decoded: Decode allocates only the record it
// returns, and DecodeInto, verify's, nothing in steady state for the
// intents and outcomes that make up nearly all of a log.
type Decoder struct {
	p       fastjson.Parser
	enc     []byte
	strs    map[string]string // see intern
	scratch Slot              // Decode's
}

// Slot is the storage one line decodes into (Decoder.DecodeInto): the
// Record, the bodies of the kinds every call writes (intent, outcome) and
// the signature, so that decoding those allocates nothing. Decoding into
// a slot overwrites it. Its record is valid while the slot is not decoded
// into again and the line it was decoded from is unchanged: Signed, and a
// call id, a tool name or a bounded value of rounds (Bounded) written
// without escapes, alias the line, and the lists of rounds are the slot's
// storage. Bodies of the other kinds are allocated and owned by the
// record.
type Slot struct {
	rec Record
	in  Intent
	out Outcome
	sig [ed25519.SignatureSize]byte
	att [ed25519.SignatureSize]byte
}

// Record returns the record last decoded into s (Decoder.DecodeInto).
func (s *Slot) Record() *Record { return &s.rec }

// Decode decodes one line (without its '\n'). The returned Record's Signed
// aliases line; its other fields are its own. Each call allocates the
// record, its body and the slices in them.
func (d *Decoder) Decode(line []byte) (*Record, error) {
	s := &d.scratch
	if err := d.DecodeInto(s, line); err != nil {
		return nil, err
	}
	// The slot's record is d's to reuse and may alias line: copy it out.
	// (A body the general decoder made is the record's own already.)
	r := new(Record)
	*r = s.rec
	switch r.Body {
	case &s.in:
		in := new(Intent)
		*in = s.in
		in.Call.Text = append([]byte(nil), in.Call.Text...)
		in.Tool = append([]byte(nil), in.Tool...)
		in.Revision.Text = append([]byte(nil), in.Revision.Text...)
		in.InputResponses = ownInputResponses(in.InputResponses)
		r.Body = in
	case &s.out:
		o := new(Outcome)
		*o = s.out
		o.Call.Text = append([]byte(nil), o.Call.Text...)
		o.ResultType.Text = append([]byte(nil), o.ResultType.Text...)
		o.TaskID.Text = append([]byte(nil), o.TaskID.Text...)
		o.InputRequests = ownInputRequests(o.InputRequests)
		r.Body = o
	}
	if r.Sig != nil {
		r.Sig = append([]byte(nil), r.Sig...)
	}
	if r.AttSig != nil {
		r.AttSig = append([]byte(nil), r.AttSig...)
	}
	return r, nil
}

// DecodeInto decodes one line (without its '\n') into s; s.rec is the
// record, valid as slot says. The line is read by the canonical scanner
// (scanExact) when it can, else by the general decoder, and either way it
// is accepted only if it is exactly what the encoder writes for the
// record: the scanner checks that field by field as it reads, and where
// it cannot (a loose line), and for the general decoder, encoding the
// record again must give back exactly the line (canonical). Errors, and
// what is accepted, are the general decoder's: whatever the scanner does
// not take, the general decoder judges.
func (d *Decoder) DecodeInto(s *Slot, line []byte) error {
	if ok, exact := d.scanExact(s, line); ok && (exact || d.canonical(&s.rec, line)) {
		return nil
	}
	return d.decodeGeneral(s, line)
}

// strictBase64 decodes standard base64 and rejects non-zero padding bits,
// so that one signature or key has exactly one text. (Strict returns a
// copy: made once here, not per line.)
var strictBase64 = base64.StdEncoding.Strict()

// decodeGeneral decodes any line with the JSON parser, field by field, and
// says what is wrong with it if anything is.
func (d *Decoder) decodeGeneral(s *Slot, line []byte) error {
	s.rec = Record{}
	v, err := d.p.ParseBytes(line)
	if err != nil {
		return recordError("not JSON: %v", err)
	}
	o, err := v.Object()
	if err != nil {
		return recordError("not a JSON object")
	}
	r := &s.rec
	g := getter{o: o}
	if ver := g.uint("v"); g.err == nil && ver != Version {
		return recordError("schema version %d, want %d", ver, Version)
	}
	r.Seq = g.uint("seq")
	if ts := g.str("ts"); g.err == nil {
		if r.TS, err = parseTime(ts); err != nil {
			g.fail("ts %q is not RFC 3339 UTC with nanoseconds", ts)
		}
	}
	if sid := g.str("sid"); g.err == nil {
		// Check the length first: hex.Decode writes len(src)/2 bytes.
		if len(sid) != 32 {
			g.fail("sid %q is not 16 bytes of hex", sid)
		} else if _, err := hex.Decode(r.SID[:], sid); err != nil {
			g.fail("sid %q is not 16 bytes of hex", sid)
		}
	}
	if k := g.str("kind"); g.err == nil {
		var ok bool
		if r.Kind, ok = parseKind(k); !ok {
			g.fail("unknown kind %q", k)
		}
	}
	r.Prev = g.digest("prev")
	if g.err != nil {
		return g.err
	}
	if r.Body, err = decodeBody(r.Kind, g); err != nil {
		return err
	}
	if o.Get("att") != nil {
		a := g.obj("att")
		r.AttSeq = a.uint("seq")
		r.AttSig = a.key("sig", ed25519.SignatureSize)
		g.merge(a)
		if g.err != nil {
			return g.err
		}
	}
	if o.Get("sig") != nil {
		r.Sig = g.key("sig", ed25519.SignatureSize)
		if g.err != nil {
			return g.err
		}
	}
	if !d.canonical(r, line) {
		return recordError("not in canonical form (unknown or reordered fields, white space or escapes)")
	}
	return nil
}

// canonical reports whether line is exactly what the encoder writes for r
// and, if it is, sets r.Signed. This rejects unknown fields, duplicate
// fields, another order, white space, other escapes.
func (d *Decoder) canonical(r *Record, line []byte) bool {
	var sid [32]byte
	hex.Encode(sid[:], r.SID[:])
	enc := AppendCommon(d.enc[:0], r.Seq, r.TS, &sid, r.Kind, r.Prev)
	enc = r.Body.AppendFields(enc)
	if r.AttSig != nil {
		enc = AppendAtt(enc, r.AttSeq, r.AttSig)
	}
	signedLen := len(enc)
	if r.Sig != nil {
		enc = AppendSig(enc, r.Sig)
	} else {
		enc = append(enc, '}')
	}
	d.enc = enc
	if !bytes.Equal(enc, line) {
		return false
	}
	r.Signed = line[:signedLen]
	return true
}

// maxInterned bounds the strings a Decoder keeps (intern), and
// maxInternedLen their length: a log full of distinct values costs an
// allocation per value, as without interning, never unbounded memory.
const (
	maxInterned    = 256
	maxInternedLen = 64
)

// intern returns b as a string. Verdicts, statuses, policy sets, rules
// and reasons repeat from record to record: a short one already seen is
// returned without allocating.
func (d *Decoder) intern(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(s) <= maxInternedLen && len(d.strs) < maxInterned {
		if d.strs == nil {
			d.strs = make(map[string]string)
		}
		d.strs[s] = s
	}
	return s
}

// getter reads fields of one object, keeping the first error.
type getter struct {
	o   *fastjson.Object
	err error
}

func (g *getter) fail(format string, args ...any) {
	if g.err == nil {
		g.err = recordError(format, args...)
	}
}

func (g *getter) get(name string) *fastjson.Value {
	if g.err != nil {
		return nil
	}
	v := g.o.Get(name)
	if v == nil {
		g.fail("missing field %q", name)
	}
	return v
}

func (g *getter) has(name string) bool { return g.err == nil && g.o.Get(name) != nil }

func (g *getter) str(name string) []byte {
	v := g.get(name)
	if v == nil {
		return nil
	}
	b, err := v.StringBytes()
	if err != nil {
		g.fail("field %q is not a string", name)
	}
	return b
}

// nstr reads a string or null ("" for null).
func (g *getter) nstr(name string) string {
	v := g.get(name)
	if v == nil || v.Type() == fastjson.TypeNull {
		return ""
	}
	b, err := v.StringBytes()
	if err != nil {
		g.fail("field %q is not a string or null", name)
	}
	return string(b)
}

func (g *getter) uint(name string) uint64 {
	v := g.get(name)
	if v == nil {
		return 0
	}
	n, err := v.Uint64()
	if err != nil {
		g.fail("field %q is not an unsigned integer", name)
	}
	return n
}

func (g *getter) int(name string) int64 {
	v := g.get(name)
	if v == nil {
		return 0
	}
	n, err := v.Int64()
	if err != nil {
		g.fail("field %q is not an integer", name)
	}
	return n
}

func (g *getter) bool(name string) bool {
	v := g.get(name)
	if v == nil {
		return false
	}
	b, err := v.Bool()
	if err != nil {
		g.fail("field %q is not a boolean", name)
	}
	return b
}

func (g *getter) strs(name string) []string {
	v := g.get(name)
	if v == nil {
		return nil
	}
	a, err := v.Array()
	if err != nil {
		g.fail("field %q is not an array", name)
		return nil
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		b, err := e.StringBytes()
		if err != nil {
			g.fail("field %q holds a non-string", name)
			return nil
		}
		out = append(out, string(b))
	}
	return out
}

func (g *getter) obj(name string) *getter {
	v := g.get(name)
	if v == nil {
		return &getter{err: g.err}
	}
	o, err := v.Object()
	if err != nil {
		g.fail("field %q is not an object", name)
		return &getter{err: g.err}
	}
	return &getter{o: o}
}

func (g *getter) digest(name string) (d Digest) {
	s := g.str(name)
	if g.err != nil {
		return d
	}
	h, ok := bytes.CutPrefix(s, []byte(digestPrefix))
	if !ok || len(h) != 2*len(d) {
		g.fail("field %q is not sha256:<64 hex>", name)
	} else if _, err := hex.Decode(d[:], h); err != nil {
		g.fail("field %q is not sha256:<64 hex>", name)
	}
	return d
}

func (g *getter) key(name string, size int) []byte {
	s := g.str(name)
	if g.err != nil {
		return nil
	}
	b64, ok := bytes.CutPrefix(s, []byte(keyPrefix))
	raw, err := strictBase64.AppendDecode(nil, b64)
	if !ok || err != nil || len(raw) != size {
		g.fail("field %q is not ed25519:<base64 of %d bytes>", name, size)
		return nil
	}
	return raw
}

// merge moves a nested getter's error into g.
func (g *getter) merge(n *getter) {
	if g.err == nil {
		g.err = n.err
	}
}

func (g *getter) call() Call {
	v := g.get("call")
	if v == nil {
		return Call{}
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return Call{Type: IDNull}
	case fastjson.TypeNumber:
		// fastjson's number scanning is lax (01, 1-2, Inf, NaN), and the
		// text is written back as read, so the canonical check would not
		// catch a line that is not JSON: hold it to the JSON grammar.
		text := v.MarshalTo(nil)
		c := cursor{b: text}
		if id := c.call(); c.bad || c.i != len(text) || id.Type != IDNumber {
			g.fail("field \"call\" is a number that is not JSON")
			return Call{}
		}
		return Call{Type: IDNumber, Text: text}
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return Call{Type: IDString, Text: append([]byte(nil), b...)}
	case fastjson.TypeObject:
		// An abbreviated id (AppendCall): a JSON-RPC id is never an object.
		a := g.obj("call")
		c := Call{Type: IDNumber}
		switch t := a.str("type"); string(t) {
		case "number":
		case "string":
			c.Type = IDString
		default:
			a.fail("field \"call\" is an abbreviated id of type %q", t)
		}
		c.Text, c.Len, c.Sum = a.abbrev()
		g.merge(a)
		return c
	}
	g.fail("field \"call\" is not a JSON-RPC id")
	return Call{}
}

// abbrev reads the fields of an abbreviated value (appendAbbrev); the
// prefix is a copy.
func (g *getter) abbrev() (prefix []byte, n int, sum Digest) {
	prefix = append([]byte(nil), g.str("prefix")...)
	u := g.uint("bytes")
	if g.err == nil && u > math.MaxInt {
		g.fail("field \"bytes\" is out of range")
	}
	return prefix, int(u), g.digest("sha256")
}

// bounded reads a field that appendBounded wrote: a string or an
// abbreviated value.
func (g *getter) bounded(name string) (s []byte, n int, sum Digest) {
	v := g.get(name)
	if v == nil || v.Type() != fastjson.TypeObject {
		return append([]byte(nil), g.str(name)...), 0, sum
	}
	a := g.obj(name)
	s, n, sum = a.abbrev()
	g.merge(a)
	return s, n, sum
}

// decodeBody reads the kind fields of a record of kind k from g: each
// kind's decodeFields (record.go, beside its AppendFields) does it.
func decodeBody(k Kind, g getter) (Body, error) {
	// Direct calls, not through an interface, so that g stays on the stack.
	var b Body
	var err error
	switch k {
	case KindSessionStart:
		x := &SessionStart{}
		b, err = x, x.decodeFields(&g)
	case KindEnforcement:
		x := &Enforcement{}
		b, err = x, x.decodeFields(&g)
	case KindIntent:
		x := &Intent{}
		b, err = x, x.decodeFields(&g)
	case KindOutcome:
		x := &Outcome{}
		b, err = x, x.decodeFields(&g)
	case KindAnomaly:
		x := &Anomaly{}
		b, err = x, x.decodeFields(&g)
	case KindPolicyReload:
		x := &PolicyReload{}
		b, err = x, x.decodeFields(&g)
	case KindRecovery:
		x := &Recovery{}
		b, err = x, x.decodeFields(&g)
	case KindSessionEnd:
		x := &SessionEnd{}
		b, err = x, x.decodeFields(&g)
	case KindProtocol:
		x := &Protocol{}
		b, err = x, x.decodeFields(&g)
	case KindTask:
		x := &Task{}
		b, err = x, x.decodeFields(&g)
	case KindServerRequest:
		x := &ServerRequest{}
		b, err = x, x.decodeFields(&g)
	case KindClientAnswer:
		x := &ClientAnswer{}
		b, err = x, x.decodeFields(&g)
	case KindApproval:
		x := &Approval{}
		b, err = x, x.decodeFields(&g)
	case KindClose:
		x := &Close{}
		b, err = x, x.decodeFields(&g)
	case KindTools:
		x := &Tools{}
		b, err = x, x.decodeFields(&g)
	case KindEgress:
		x := &Egress{}
		b, err = x, x.decodeFields(&g)
	}
	if err != nil {
		return nil, err
	}
	if g.err != nil {
		return nil, g.err
	}
	return b, nil
}
