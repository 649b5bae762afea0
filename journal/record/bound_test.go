package record

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// Tests of bounded values (doc.go, "Bounded values"): what a client or a
// child controls is abbreviated in the record, so that no line the
// journal writes is longer than its readers accept (MaxLine); what aegis's
// own caller supplies is refused by Append if it would make such a line.

func sumHex(s string) string {
	d := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(d[:])
}

// TestBoundedForms: the bytes of whole and abbreviated values, as doc.go
// states them.
func TestBoundedForms(t *testing.T) {
	long := strings.Repeat("a", MaxValueBytes+1)
	edge := strings.Repeat("a", MaxValueBytes)
	digits := "1" + strings.Repeat("0", 299)
	// 63 ASCII bytes then "é" (2 bytes): the prefix stops before it.
	split := strings.Repeat("b", 63) + "é" + strings.Repeat("c", 300)
	// Invalid UTF-8 counts 3 bytes (U+FFFD) toward the prefix.
	invalid := strings.Repeat("\xff", 30) + strings.Repeat("d", 300)
	// Control bytes: the prefix counts raw bytes, its escapes may be longer.
	control := strings.Repeat("\x01", 300)
	tests := []struct {
		name string
		body Body
		want string
	}{
		{"number id at the bound", &Outcome{Call: Call{Type: IDNumber, Text: []byte(strings.Repeat("9", MaxValueBytes))}},
			`"call":` + strings.Repeat("9", MaxValueBytes) + `,`},
		{"string id at the bound", &Outcome{Call: Call{Type: IDString, Text: []byte(edge)}},
			`"call":"` + edge + `",`},
		{"number id past the bound", &Outcome{Call: Call{Type: IDNumber, Text: []byte(digits)}},
			`"call":{"type":"number","prefix":"` + digits[:64] + `","bytes":300,"sha256":"` + sumHex(digits) + `"},`},
		{"string id past the bound", &Outcome{Call: Call{Type: IDString, Text: []byte(long)}},
			`"call":{"type":"string","prefix":"` + long[:64] + `","bytes":257,"sha256":"` + sumHex(long) + `"},`},
		{"string id cut before a character", &Outcome{Call: Call{Type: IDString, Text: []byte(split)}},
			`"call":{"type":"string","prefix":"` + split[:63] + `","bytes":365,"sha256":"` + sumHex(split) + `"},`},
		{"string id of invalid UTF-8", &Outcome{Call: Call{Type: IDString, Text: []byte(invalid)}},
			`"call":{"type":"string","prefix":"` + strings.Repeat("\uFFFD", 21) + `","bytes":330,"sha256":"` + sumHex(invalid) + `"},`},
		{"string id of control bytes", &Outcome{Call: Call{Type: IDString, Text: []byte(control)}},
			`"call":{"type":"string","prefix":"` + strings.Repeat(`\u0001`, 64) + `","bytes":300,"sha256":"` + sumHex(control) + `"},`},
		{"null id with a length", &Outcome{Call: Call{Type: IDNull, Len: 5}},
			`"call":null,`},
		{"tool at the bound", &Intent{Tool: []byte(edge), HasTool: true},
			`"tool":"` + edge + `",`},
		{"tool past the bound", &Intent{Tool: []byte(long), HasTool: true},
			`"tool":{"prefix":"` + long[:64] + `","bytes":257,"sha256":"` + sumHex(long) + `"},`},
		{"rule past the bound", &Intent{Rule: long},
			`"rule":{"prefix":"` + long[:64] + `","bytes":257,"sha256":"` + sumHex(long) + `"},`},
		{"rule empty", &Intent{}, `"rule":null,`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.body.AppendFields(nil))
			if !strings.Contains(got, tt.want) {
				t.Errorf("AppendFields = %s; want it to hold %s", got, tt.want)
			}
		})
	}
}

// TestCallBound: Bound keeps a short id as it is (aliased), abbreviates a
// long one into dst, and either way encodes as the id does.
func TestCallBound(t *testing.T) {
	ids := []Call{
		{Type: IDNull},
		{Type: IDNumber, Text: []byte("12")},
		{Type: IDString, Text: []byte("")},
		{Type: IDString, Text: []byte(strings.Repeat("x", MaxValueBytes))},
		{Type: IDString, Text: []byte(strings.Repeat("x", MaxValueBytes+1))},
		{Type: IDString, Text: []byte(strings.Repeat("é\x00\xff", 1<<19))},
		{Type: IDNumber, Text: []byte("-" + strings.Repeat("7", 3<<20) + "e+5")},
	}
	for _, c := range ids {
		enc := string(AppendCall(nil, c))
		dst := make([]byte, 0, PrefixBytes)
		b := c.Bound(dst)
		if got := string(AppendCall(nil, b)); got != enc {
			t.Errorf("appendCall(Bound(%.40q)) = %.200s; want %.200s", c.Text, got, enc)
		}
		long := len(c.Text) > MaxValueBytes && c.Type != IDNull
		switch {
		case !long && (len(b.Text) != len(c.Text) || len(c.Text) > 0 && &b.Text[0] != &c.Text[0]):
			t.Errorf("Bound(%.40q).Text is not c.Text; want the short id aliased", c.Text)
		case long && (!b.Abbreviated() || len(b.Text) > PrefixBytes || b.Len != len(c.Text) || b.Sum != sha256.Sum256(c.Text)):
			t.Errorf("Bound(%.40q) = %d-byte prefix, Len %d; want at most %d, Len %d, the id's SHA-256", c.Text, len(b.Text), b.Len, PrefixBytes, len(c.Text))
		case long && len(b.Text) > 0 && &b.Text[0] != &dst[:1][0]:
			t.Errorf("Bound(%.40q).Text is not in dst", c.Text)
		}
		// Bounding again, and bounding an equal id held elsewhere, give
		// the same Call.
		again := b.Bound(nil)
		other := Call{Type: c.Type, Text: bytes.Clone(c.Text)}.Bound(nil)
		for _, x := range []Call{again, other} {
			if x.Type != b.Type || x.Len != b.Len || x.Sum != b.Sum || !bytes.Equal(x.Text, b.Text) {
				t.Errorf("Bound of the same id = %+v; want %+v", x, b)
			}
		}
		if long {
			if n := testing.AllocsPerRun(10, func() { dst = c.Bound(dst).Text }); n != 0 {
				t.Errorf("Bound(long id, dst of %d bytes) allocates %v times; want 0", cap(dst), n)
			}
		}
	}
	a := Call{Type: IDString, Text: []byte(strings.Repeat("y", 300))}.Bound(nil)
	n := Call{Type: IDNumber, Text: []byte(strings.Repeat("1", 300))}.Bound(nil)
	s := Call{Type: IDString, Text: []byte(strings.Repeat("1", 300))}.Bound(nil)
	if string(AppendCall(nil, n)) == string(AppendCall(nil, s)) {
		t.Errorf("a number id and a string id of the same text encode the same: %s", AppendCall(nil, n))
	}
	if a.Sum == s.Sum {
		t.Errorf("two different long ids have the same digest")
	}
}

// TestLineOverhead: the common fields and a signature never take more
// than lineOverhead, with the longest seq, kind and a year of five digits.
func TestLineOverhead(t *testing.T) {
	var line []byte
	longest := ""
	for _, k := range kindNames {
		if len(k) > len(longest) {
			longest = k
		}
	}
	line = append(line, `{"v":2,"seq":18446744073709551615,"ts":"`...)
	line = AppendTime(line, time.Date(99999, 12, 31, 23, 59, 59, 999999999, time.UTC))
	line = append(line, `","sid":"0123456789abcdef0123456789abcdef","kind":"`+longest+`","prev":"`...)
	line = Digest{}.Append(line)
	line = append(line, '"')
	line = AppendSig(line, make([]byte, ed25519.SignatureSize))
	if len(line) > lineOverhead {
		t.Errorf("the longest line without kind fields is %d bytes; lineOverhead = %d", len(line), lineOverhead)
	}
}

// worstLine is b's line as the journal would write it with the longest
// common fields and a signature: the longest line b can make.
func worstLine(b Body) []byte { return appendWorstLine(nil, b) }

// appendWorstLine appends worstLine(b) to dst.
func appendWorstLine(dst []byte, b Body) []byte {
	var sid [16]byte
	line := append(dst, `{"v":2,"seq":18446744073709551615,"ts":"`...)
	line = AppendTime(line, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	line = append(line, `","sid":"`...)
	line = hex.AppendEncode(line, sid[:])
	line = append(line, `","kind":"`...)
	line = append(line, kindNames[b.Kind()]...)
	line = append(line, `","prev":"`...)
	line = Digest{}.Append(line)
	line = append(line, '"')
	line = b.AppendFields(line)
	return AppendSig(line, make([]byte, ed25519.SignatureSize))
}

// boundScratch is checkBounded's buffers, kept from one call to the next
// so that the lines of megabytes it writes grow once, not append by
// append on every call. The zero value is ready; not for concurrent use.
type boundScratch struct{ fields, line, again []byte }

// checkBounded holds b to the invariant: either Append refuses it
// (CheckFields), or its line is at most MaxLine bytes and decodes to a
// record that encodes back to the same line. wire says that b's long
// values are all ones the encoder abbreviates: it must not be refused.
func checkBounded(t *testing.T, sc *boundScratch, b Body, wire bool) {
	t.Helper()
	sc.fields = b.AppendFields(sc.fields[:0])
	fields := sc.fields
	if err := CheckFields(b.Kind(), len(fields)); err != nil {
		if wire {
			t.Fatalf("checkFields(%s with long client values) = %v; want them abbreviated, never refused", b.Kind(), err)
		}
		if !errors.Is(err, ErrRecord) {
			t.Fatalf("checkFields = %v; want ErrRecord", err)
		}
		return
	}
	sc.line = appendWorstLine(sc.line[:0], b)
	line := sc.line
	if len(line) > MaxLine {
		t.Fatalf("%s line of %d bytes, longer than MaxLine (%d), passes checkFields", b.Kind(), len(line), MaxLine)
	}
	var d Decoder
	rec, err := d.Decode(line)
	if err != nil {
		t.Fatalf("Decode(%s line of %d bytes) = %v: %.3000q", b.Kind(), len(line), err, line)
	}
	sc.again = appendWorstLine(sc.again[:0], rec.Body)
	if again := sc.again; !bytes.Equal(again, line) {
		t.Fatalf("re-encoding the decoded %s = %.300s; want %.300s", b.Kind(), again, line)
	}
	var s Slot
	if !d.scan(&s, line) && (b.Kind() == KindIntent || b.Kind() == KindOutcome) && !bytes.ContainsRune(line, '\\') {
		t.Errorf("the scanner gives up on an escape-free %s: %.300s", b.Kind(), line)
	}
}

// bodyWith returns a Body of kind selected by which whose field selected
// by field holds v, and whether every long value in it is one the
// encoder abbreviates (a client's or a child's).
func bodyWith(which, field uint8, v string) (Body, bool) {
	// vs and bv copy v (of up to megabytes): made only for the fields
	// that hold them, bv once for all of them.
	vs := func() []string { return []string{v, v + "2"} }
	var bounded *Bounded
	bv := func() Bounded {
		if bounded == nil {
			b := BoundedOf([]byte(v))
			bounded = &b
		}
		return *bounded
	}
	switch which % 12 {
	case 0:
		s := &SessionStart{Key: make([]byte, 32), Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: PassThroughSet,
			Confine: &ConfineRequest{}, Env: []string{"HOME"}}
		s.Key[0] = 9 // not a small-order point
		switch field % 8 {
		case 0:
			s.Aegis = v
		case 1:
			s.Argv = vs()
		case 2:
			s.Durability = v
		case 3:
			s.PolicySet = v
		case 4:
			s.Confine.Read = vs()
		case 5:
			s.Confine.Write = vs()
		case 6:
			s.Confine.Net = vs()
		case 7:
			s.Env = vs()
		}
		return s, false
	case 1:
		e := &Enforcement{FS: []FSRule{{Path: "/srv", Access: []string{"read"}}}}
		switch field % 7 {
		case 0:
			e.FS[0].Path = v
		case 1:
			e.FS[0].Access = vs()
		case 2:
			e.TCP, e.UDP = v, v
		case 3:
			e.Scopes = vs()
		case 4:
			e.Dropped = vs()
		case 5:
			e.NotCovered = vs()
		case 6:
			e.FS = append(e.FS, FSRule{Path: v, Access: vs()})
		}
		return e, false
	case 2:
		in := &Intent{Call: Call{Type: IDString, Text: []byte(v)}, Tool: []byte(v), HasTool: true, Rule: v, BatchSize: 2}
		switch field % 8 {
		case 5:
			in.Revision, in.HasRevision = bv(), true
			in.InputResponses = []InputResponse{{Key: bv(), Action: ActionAccept}, {Key: bv()}}
		case 6:
			in.Principal = v
			return in, false
		case 7:
			in.Round = Round{By: v}
			return in, false
		case 0:
			in.Call = number(len(v))
		case 1:
			in.Malformed = v
			return in, false
		case 2:
			in.Verdict = v
			return in, false
		case 3:
			in.Set = v
			return in, false
		case 4:
			in.Refused = true
		}
		return in, true
	case 3:
		o := &Outcome{Call: Call{Type: IDString, Text: []byte(v)}, HasResponse: true, Status: StatusOK}
		switch field % 5 {
		case 3:
			o.ResultType, o.HasResultType, o.TaskID, o.HasTaskID = bv(), true, bv(), true
		case 4:
			o.InputRequests = []InputRequest{{Key: bv(), Method: bv(), HasMethod: true}, {Key: bv()}}
		case 0:
			o.Call = number(len(v))
		case 1:
			o.Status = v
			return o, false
		case 2:
			o.Reason = v
			return o, false
		}
		return o, true
	case 4:
		return &Anomaly{Reason: v}, false
	case 5:
		if field%2 == 0 {
			return &PolicyReload{Set: v, Status: "applied"}, false
		}
		return &PolicyReload{Set: "sha256:00", Status: v}, false
	case 6:
		return &Recovery{TornBytes: len(v)}, true
	case 8:
		return &Protocol{Revision: bv()}, true
	case 9:
		tk := &Task{TaskID: bv(), Event: TaskEnd, Via: "tasks/get"}
		switch field % 5 {
		case 1:
			tk.Event, tk.InputRequests = TaskInputRequired, []InputRequest{{Key: bv(), Method: bv(), HasMethod: true}}
		case 2:
			tk.Event, tk.InputResponses = TaskUpdate, []InputResponse{{Key: bv()}}
		case 3:
			tk.Status = v
			return tk, false
		case 4:
			tk.Via = v
			return tk, false
		}
		return tk, true
	case 10:
		return &ServerRequest{Call: Call{Type: IDString, Text: []byte(v)}, Method: bv(), Calls: []uint64{1, 2}}, true
	case 11:
		if field%2 == 0 {
			return &ClientAnswer{Call: Call{Type: IDString, Text: []byte(v)}, Status: StatusOK}, true
		}
		return &ClientAnswer{Status: v}, false
	}
	e := &SessionEnd{Reason: EndClientEOF}
	switch field % 3 {
	case 0:
		e.Reason = v
	case 1:
		e.Detail = v
	case 2:
		e.ExitSignal = v
	}
	return e, false
}

// number returns a number id of n digits (of one, if n is 0): the frame
// parser hands the journal only ids that are JSON numbers.
func number(n int) Call {
	return Call{Type: IDNumber, Text: []byte("1" + strings.Repeat("0", max(n, 1)-1))}
}

// fill returns n bytes repeating pattern (or "x").
func fill(pattern []byte, n int) string {
	if len(pattern) == 0 {
		pattern = []byte("x")
	}
	return string(bytes.Repeat(pattern, n/len(pattern)+1)[:n])
}

// TestBoundedBodies holds every field of every kind, at sizes around the
// bounds and far past them, to the invariant (checkBounded).
func TestBoundedBodies(t *testing.T) {
	// Every pattern at the sizes around MaxValueBytes; near maxFields and
	// past it, the patterns that grow most when escaped (6×, 3×) and one
	// that does not grow.
	small := []int{0, 1, MaxValueBytes / 3, MaxValueBytes, MaxValueBytes + 1}
	cases := map[string][]int{"a": small, "é": small, `"\`: small, "\u2028z": small,
		"\x01": append(small, maxFields/12, maxFields/6-100, maxFields/6+1),
		"\xff": append(small, maxFields/6, maxFields/3+1),
		"b":    {maxFields/2 - 100, maxFields/2 + 1, maxFields - 200, 3 << 20}}
	// The fields bodyWith sets, per kind.
	fields := [12]uint8{8, 7, 8, 5, 1, 2, 1, 3, 1, 5, 1, 2}
	// Each value is made once, not once per kind and field: the largest
	// are megabytes, and a fresh copy of each per case is most of what
	// the test costs under the race detector.
	values := make(map[string][]string, len(cases))
	for p, sizes := range cases {
		for _, n := range sizes {
			values[p] = append(values[p], fill([]byte(p), n))
		}
	}
	var sc boundScratch
	for which := range uint8(12) {
		for field := range fields[which] {
			for _, vs := range values {
				for _, v := range vs {
					b, wire := bodyWith(which, field, v)
					checkBounded(t, &sc, b, wire)
				}
			}
		}
	}
}

// FuzzBoundedBody: no Body value makes a line that the readers reject
// (checkBounded), whatever its fields hold and however long they are.
//
// The value is n>>5 (mod 4 MiB) bytes long, divided by 2^k for k the low
// five bits of n (valueLen): every length below 4 MiB is one the fuzzer
// can reach (k = 0, as in the seeds). An exec costs in proportion to the
// value's length (every byte is escaped, up to three times over, and
// hashed), and Go's fuzzer changes an integer only by adding or
// subtracting at most 100: with the length in n's high bits, every input
// descended from a seed of megabytes would be of megabytes too, and a
// corpus grown from such seeds would spend the campaign on a few execs
// of megabytes. With k in the low bits, a step of n draws k afresh: the
// input descended from a long one is as long with odds of 1 in 32, and on
// average a sixteenth of its length.
func FuzzBoundedBody(f *testing.F) {
	f.Add(uint8(2), uint8(0), lengthN(3<<20), []byte("7"))
	f.Add(uint8(2), uint8(4), lengthN(2<<20), []byte("\x01"))
	f.Add(uint8(3), uint8(1), lengthN(1<<20), []byte("\xff\xfe"))
	f.Add(uint8(0), uint8(1), lengthN(maxFields/2), []byte("é"))
	f.Add(uint8(7), uint8(1), lengthN(maxFields-40), []byte("a"))
	f.Add(uint8(1), uint8(6), lengthN(MaxValueBytes+1), []byte(`\"`))
	var sc boundScratch
	f.Fuzz(func(t *testing.T, which, field uint8, n uint32, pattern []byte) {
		b, wire := bodyWith(which, field, fill(pattern, valueLen(n)))
		checkBounded(t, &sc, b, wire)
	})
}

// valueLen is FuzzBoundedBody's value length for n: (n>>5 mod 4 MiB) >> (n&31).
func valueLen(n uint32) int { return int((n>>5)%(4<<20)) >> (n & 31) }

// lengthN is an n for which valueLen is length (below 4 MiB).
func lengthN(length int) uint32 { return uint32(length) << 5 }

// TestValueLen: every length below 4 MiB has an n (lengthN), and an n
// one step (±1..100, what Go's fuzzer does to an integer) from a long
// value's is mostly a much shorter value.
func TestValueLen(t *testing.T) {
	for _, l := range []int{0, 1, MaxValueBytes, maxFields - 40, 3 << 20, 4<<20 - 1} {
		if got := valueLen(lengthN(l)); got != l {
			t.Errorf("valueLen(lengthN(%d)) = %d; want %d", l, got, l)
		}
	}
	n := lengthN(3 << 20)
	total, long := 0, 0
	for d := uint32(1); d <= 100; d++ {
		for _, m := range []uint32{n + d, n - d} {
			l := valueLen(m)
			total += l
			if l > 1<<20 {
				long++
			}
		}
	}
	if avg := total / 200; avg > (3<<20)/8 || long > 200/8 {
		t.Errorf("the 200 neighbours of a 3 MiB value average %d bytes, %d over 1 MiB; want a fraction of it", avg, long)
	}
}

// TestBoundedDecodeRejects: the decoders take an abbreviated value only as
// the encoder writes it.
func TestBoundedDecodeRejects(t *testing.T) {
	long := strings.Repeat("q", 300)
	intent := string(worstLine(&Intent{Call: Call{Type: IDString, Text: []byte(long)}, Tool: []byte(long), HasTool: true, Rule: long}))
	call := `{"type":"string","prefix":"` + long[:64] + `","bytes":300,"sha256":"` + sumHex(long) + `"}`
	tests := []struct {
		name, old, new string
	}{
		{"type other", `"type":"string"`, `"type":"object"`},
		{"no type", `{"type":"string",`, `{`},
		{"fields reordered", `"prefix":"` + long[:64] + `","bytes":300`, `"bytes":300,"prefix":"` + long[:64] + `"`},
		{"bytes zero", `"bytes":300,"sha256":"` + sumHex(long) + `"},"tool"`, `"bytes":0,"sha256":"` + sumHex(long) + `"},"tool"`},
		{"bytes negative", `"bytes":300`, `"bytes":-300`},
		{"bytes past int", `"bytes":300`, `"bytes":9223372036854775808`},
		{"prefix too long", `"prefix":"` + long[:64] + `"`, `"prefix":"` + long[:65] + `"`},
		{"extra field", call, call[:len(call)-1] + `,"x":1}`},
		{"digest cut", sumHex(long) + `"},"tool"`, sumHex(long)[:70] + `"},"tool"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(intent, tt.old) {
				t.Fatalf("line holds no %q", tt.old)
			}
			line := strings.Replace(intent, tt.old, tt.new, 1)
			var d Decoder
			if _, err := d.Decode([]byte(line)); !errors.Is(err, ErrRecord) {
				t.Errorf("Decode(%s) = %v; want ErrRecord", tt.name, err)
			}
			checkAgree(t, []byte(line))
		})
	}
	if got := checkAgree(t, []byte(intent)); !got {
		t.Errorf("the scanner gives up on an intent with abbreviated values")
	}
}
