package record

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Tests of verify's fast path: the canonical scanner (decode_scan.go)
// against the general decoder, the reused storage records are decoded
// into, and the chunks verify holds on to while a line is pending.

// checkAgree decodes line with the scanner and with the general decoder
// alone and fails if they disagree: a line the scanner reads exactly must
// be canonical (re-encode to itself), with the Signed canonical gives; a
// line the scanner takes (exactly, or loose and re-encoding to itself)
// must be one the general decoder accepts, read to the same record; and
// DecodeInto, which tries the one and then the other, must accept what
// the general decoder accepts, with its error. It reports whether the
// scanner took the line.
func checkAgree(t *testing.T, line []byte) bool {
	t.Helper()
	var ds, dg, di Decoder
	var ss, sg, si Slot
	ok, exact := ds.scanExact(&ss, line)
	if exact {
		signed := ss.rec.Signed
		if !ok {
			t.Fatalf("scanExact(%q) = not ok, exact", line)
		}
		if !ds.canonical(&ss.rec, line) {
			t.Fatalf("scanExact(%q) = exact; but the record encodes to %q", line, ds.enc)
		}
		if !bytes.Equal(signed, ss.rec.Signed) || len(signed) != len(ss.rec.Signed) {
			t.Fatalf("scanExact(%q): Signed = %q; canonical sets %q", line, signed, ss.rec.Signed)
		}
	}
	scanned := ok && (exact || ds.canonical(&ss.rec, line))
	gerr := dg.decodeGeneral(&sg, line)
	if scanned {
		if gerr != nil {
			t.Fatalf("scan(%q) = accepted; the general decoder says %v", line, gerr)
		}
		if got, want := recordOf(&ss.rec), recordOf(&sg.rec); !reflect.DeepEqual(got, want) {
			t.Fatalf("scan(%q) = %+v; the general decoder reads %+v", line, got, want)
		}
	}
	ierr := di.DecodeInto(&si, line)
	if (ierr == nil) != (gerr == nil) || ierr != nil && ierr.Error() != gerr.Error() {
		t.Fatalf("decodeInto(%q) = %v; the general decoder says %v", line, ierr, gerr)
	}
	return scanned
}

// comparableRecord is a Record in a form reflect.DeepEqual compares by value:
// the body dereferenced, an empty slice the same as a nil one.
type comparableRecord struct {
	Seq          uint64
	TS           time.Time
	SID          [16]byte
	Kind         Kind
	Prev         Digest
	Body         any
	Sig, Signed  string
	HasSig       bool
	BodyTypeName string
}

func recordOf(r *Record) comparableRecord {
	c := comparableRecord{Seq: r.Seq, TS: r.TS, SID: r.SID, Kind: r.Kind, Prev: r.Prev,
		Sig: string(r.Sig), Signed: string(r.Signed), HasSig: r.Sig != nil, BodyTypeName: reflect.TypeOf(r.Body).String()}
	switch b := r.Body.(type) {
	case *Intent:
		in := *b
		in.Call.Text, in.Tool = nilIfEmpty(in.Call.Text), nilIfEmpty(in.Tool)
		in.Revision.Text = nilIfEmpty(in.Revision.Text)
		c.Body = in
	case *Outcome:
		o := *b
		o.Call.Text = nilIfEmpty(o.Call.Text)
		o.ResultType.Text, o.TaskID.Text = nilIfEmpty(o.ResultType.Text), nilIfEmpty(o.TaskID.Text)
		c.Body = o
	default:
		c.Body = reflect.ValueOf(b).Elem().Interface()
	}
	return c
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// genuineLine returns the genuine log's line that holds all of marks.
func genuineLine(t *testing.T, marks ...string) string {
	t.Helper()
	for _, l := range strings.Split(string(mustGenuine(t)), "\n") {
		all := true
		for _, m := range marks {
			all = all && strings.Contains(l, m)
		}
		if all {
			return l
		}
	}
	t.Fatalf("the genuine log has no line holding %q", marks)
	return ""
}

// TestScanAgrees holds the scanner to the general decoder on every line
// of the genuine log and on lines changed where the two read differently
// (numbers, strings, times, signatures), and checks that the scanner
// takes every intent and outcome it should, so that verify's fast path
// is the path taken.
func TestScanAgrees(t *testing.T) {
	for i, line := range bytes.Split(mustGenuine(t), []byte("\n")) {
		scanned := checkAgree(t, line)
		hot := bytes.Contains(line, []byte(`"kind":"intent"`)) || bytes.Contains(line, []byte(`"kind":"outcome"`))
		if want := hot && !bytes.Contains(line, []byte(`\`)); scanned != want {
			t.Errorf("genuine line %d: scanned = %v; want %v (%s)", i, scanned, want, line)
		}
	}

	intent := genuineLine(t, `"kind":"intent"`, `"call":1,`, `"sig":`)
	outcome := genuineLine(t, `"kind":"outcome"`, `"call":1,`, `"sig":`)
	batch := genuineLine(t, `"kind":"intent"`, `"call":"b-1"`)
	refused := genuineLine(t, `"kind":"intent"`, `"malformed"`)
	sig := intent[strings.Index(intent, `,"sig":"ed25519:`)+len(`,"sig":"ed25519:`) : len(intent)-2]
	// fast: the scanner reads the line and it re-encodes to itself. Some
	// lines the scanner reads do not (a raw control byte, an upper-case
	// hex digit, February 30th): the general decoder judges those.
	tests := []struct {
		name, line, old, new string
		fast                 bool
	}{
		{"intent", intent, "", "", true},
		{"outcome", outcome, "", "", true},
		{"call 0", intent, `"call":1,`, `"call":0,`, true},
		{"call -0", intent, `"call":1,`, `"call":-0,`, true},
		{"call 1.50e+3", intent, `"call":1,`, `"call":1.50e+3,`, true},
		{"call -2E-7", intent, `"call":1,`, `"call":-2E-7,`, true},
		{"call 01 (not JSON; fastjson takes it)", intent, `"call":1,`, `"call":01,`, false},
		{"call 1. (not JSON)", intent, `"call":1,`, `"call":1.,`, false},
		{"call .5 (not JSON)", intent, `"call":1,`, `"call":.5,`, false},
		{"call 1e (not JSON)", intent, `"call":1,`, `"call":1e,`, false},
		{"call 1-2 (not JSON)", intent, `"call":1,`, `"call":1-2,`, false},
		{"call +1", intent, `"call":1,`, `"call":+1,`, false},
		{"call Inf", intent, `"call":1,`, `"call":Inf,`, false},
		{"call NaN", intent, `"call":1,`, `"call":NaN,`, false},
		{"call true", intent, `"call":1,`, `"call":true,`, false},
		{"call empty string", intent, `"call":1,`, `"call":"",`, true},
		{"call string with escape", intent, `"call":1,`, `"call":"a\"b",`, false},
		{"call string with raw control byte", intent, `"call":1,`, "\"call\":\"a\x01\",", false},
		{"call string, invalid UTF-8", intent, `"call":1,`, "\"call\":\"a\xff\",", false},
		{"call string with U+FFFD", intent, `"call":1,`, "\"call\":\"a\uFFFD\",", true},
		{"tool empty", intent, `"tool":"echo"`, `"tool":""`, true},
		{"tool with escaped slash", intent, `"tool":"echo"`, `"tool":"a\/b"`, false},
		{"tool a number", intent, `"tool":"echo"`, `"tool":1`, false},
		{"seq max", intent, `"seq":2,`, `"seq":18446744073709551615,`, true},
		{"seq overflow", intent, `"seq":2,`, `"seq":18446744073709551616,`, false},
		{"seq leading zero", intent, `"seq":2,`, `"seq":02,`, false},
		{"seq negative", intent, `"seq":2,`, `"seq":-2,`, false},
		{"seq empty", intent, `"seq":2,`, `"seq":,`, false},
		{"latency min", outcome, `"latency_ns":1234`, `"latency_ns":-9223372036854775808`, true},
		{"latency max", outcome, `"latency_ns":1234`, `"latency_ns":9223372036854775807`, true},
		{"latency overflow", outcome, `"latency_ns":1234`, `"latency_ns":9223372036854775808`, false},
		{"latency underflow", outcome, `"latency_ns":1234`, `"latency_ns":-9223372036854775809`, false},
		{"latency -0", outcome, `"latency_ns":1234`, `"latency_ns":-0`, false},
		{"latency fraction", outcome, `"latency_ns":1234`, `"latency_ns":1234.0`, false},
		{"intent seq overflow", outcome, `"intent":2,`, `"intent":99999999999999999999,`, false},
		{"no response", outcome, `"response_digest":"sha256:`, `"response_digest":null,"x":"`, false},
		{"response null", outcome, `"response_digest":"sha256:82f3e9c695dc6b8d1b11818d5701919e286de8d47f7c3eb3100c485f79e57828"`, `"response_digest":null`, true},
		{"status empty", outcome, `"status":"ok"`, `"status":""`, true},
		{"reason empty string", outcome, `"reason":null`, `"reason":""`, false},
		{"reason string", outcome, `"reason":null`, `"reason":"gone"`, true},
		{"batch size 0", batch, `"size":3`, `"size":0`, false},
		{"batch size -1", batch, `"size":3`, `"size":-1`, false},
		{"batch index -1", batch, `"index":0`, `"index":-1`, true},
		{"batch size huge", batch, `"size":3`, `"size":9223372036854775807`, true},
		{"refused, escape-free call", refused, refused[strings.Index(refused, `"call":`):strings.Index(refused, `,"tool"`)], `"call":3`, true},
		{"grant other", refused, `"grant":"deny_all"`, `"grant":"allow_all"`, false},
		{"status other", refused, `"status":"denied"`, `"status":"allowed"`, false},
		{"verdict empty", intent, `"verdict":"pass-through"`, `"verdict":""`, false},
		{"rule empty", intent, `"rule":null`, `"rule":""`, false},
		{"ts Feb 30", intent, `"ts":"2026-01-02`, `"ts":"2026-02-30`, false},
		{"ts Feb 29 2028", intent, `"ts":"2026-01-02`, `"ts":"2028-02-29`, true},
		{"ts month 13", intent, `"ts":"2026-01-02`, `"ts":"2026-13-02`, false},
		{"ts day 00", intent, `"ts":"2026-01-02`, `"ts":"2026-01-00`, false},
		{"ts year 0000", intent, `"ts":"2026-01-02`, `"ts":"0000-01-02`, true},
		{"ts hour 24", intent, `T03:04:05.`, `T24:04:05.`, false},
		{"ts second 60", intent, `T03:04:05.`, `T03:04:60.`, false},
		{"ts offset", intent, `034Z"`, `034+00:00"`, false},
		{"ts lowercase z", intent, `034Z"`, `034z"`, false},
		{"ts signed digit", intent, `"ts":"2026-01-02`, `"ts":"2026-01-+2`, false},
		{"sid uppercase", intent, `"sid":"a1`, `"sid":"A1`, false},
		{"sid 31 digits", intent, `"sid":"a1`, `"sid":"1`, false},
		{"sid not hex", intent, `"sid":"a1`, `"sid":"g1`, false},
		{"prev uppercase", intent, `"prev":"sha256:`, `"prev":"SHA256:`, false},
		{"kind outcome on an intent", intent, `"kind":"intent"`, `"kind":"outcome"`, false},
		{"kind unknown", intent, `"kind":"intent"`, `"kind":"intent2"`, false},
		{"sig cut", intent, sig, sig[:len(sig)-4], false},
		{"sig longer", intent, sig, sig + "AAAA", false},
		{"sig padding bits", intent, sig, sig[:len(sig)-3] + "B==", false},
		{"sig no padding", intent, sig, sig[:len(sig)-2], false},
		{"sig not base64", intent, sig, "!" + sig[1:], false},
		{"sig empty", intent, sig, "", false},
		{"sig not last", intent, `,"sig":"ed25519:`, `,"sig2":1,"sig":"ed25519:`, false},
		{"unsigned", intent, intent[strings.Index(intent, `,"sig":`) : len(intent)-1], "", true},
		{"white space", intent, `"seq":2,`, `"seq": 2,`, false},
		{"trailing space", intent + " ", "", "", false},
		{"trailing byte", intent + "}", "", "", false},
		{"cut", intent[:len(intent)-1], "", "", false},
		{"v 3", intent, `"v":2`, `"v":3`, false},
		{"duplicate field", intent, `"tool":"echo"`, `"tool":"echo","tool":"echo"`, false},
		{"empty", "", "", "", false},
		{"not JSON", "junk", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := edited(t, tt.line, tt.old, tt.new)
			if got := checkAgree(t, line); got != tt.fast {
				t.Errorf("fast path taken for %q = %v; want %v", line, got, tt.fast)
			}
		})
	}
}

// TestScanExact: the lines the scanner reads exactly, which DecodeInto
// takes without encoding them again, and the loose ones it hands to the
// re-encoding (checkAgree holds both to it).
func TestScanExact(t *testing.T) {
	intent := genuineLine(t, `"kind":"intent"`, `"call":1,`, `"sig":`)
	outcome := genuineLine(t, `"kind":"outcome"`, `"call":1,`, `"sig":`)
	batch := genuineLine(t, `"kind":"intent"`, `"call":"b-1"`)
	refused := genuineLine(t, `"kind":"intent"`, `"malformed"`)
	long := strings.Repeat("x", MaxValueBytes)
	tests := []struct {
		name, line, old, new string
		want                 bool
	}{
		{"intent", intent, "", "", true},
		{"outcome", outcome, "", "", true},
		{"batch", batch, "", "", true},
		{"refused, escape-free call", refused, refused[strings.Index(refused, `"call":`):strings.Index(refused, `,"tool"`)], `"call":3`, true},
		{"unsigned", intent, intent[strings.Index(intent, `,"sig":`) : len(intent)-1], "", true},
		{"call -0", intent, `"call":1,`, `"call":-0,`, true},
		{"call empty string", intent, `"call":1,`, `"call":"",`, true},
		{"call string of MaxValueBytes", intent, `"call":1,`, `"call":"` + long + `",`, true},
		{"call string longer", intent, `"call":1,`, `"call":"x` + long + `",`, false},
		{"call number longer", intent, `"call":1,`, `"call":1` + strings.Repeat("0", MaxValueBytes) + `,`, false},
		{"call abbreviated", intent, `"call":1,`, `"call":{"type":"number","prefix":"1","bytes":300,"sha256":"sha256:` + strings.Repeat("0", 64) + `"},`, false},
		{"call string with U+FFFD", intent, `"call":1,`, "\"call\":\"a\uFFFD\",", false},
		{"call string with DEL", intent, `"call":1,`, "\"call\":\"a\x7f\",", true},
		{"tool empty", intent, `"tool":"echo"`, `"tool":""`, true},
		{"tool longer", intent, `"tool":"echo"`, `"tool":"x` + long + `"`, false},
		{"status empty", outcome, `"status":"ok"`, `"status":""`, true},
		{"reason string", outcome, `"reason":null`, `"reason":"gone"`, true},
		{"ts Feb 29 2028", intent, `"ts":"2026-01-02`, `"ts":"2028-02-29`, true},
		{"ts Feb 29 2100", intent, `"ts":"2026-01-02`, `"ts":"2100-02-29`, false},
		{"ts Apr 31", intent, `"ts":"2026-01-02`, `"ts":"2026-04-31`, false},
		{"sid uppercase", intent, `"sid":"a1`, `"sid":"A1`, false},
		{"seq leading zero", intent, `"seq":2,`, `"seq":02,`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := edited(t, tt.line, tt.old, tt.new)
			checkAgree(t, line)
			if got := scannedExactly(line); got != tt.want {
				t.Errorf("scanExact(%q) exact = %v; want %v", line, got, tt.want)
			}
		})
	}
}

// FuzzScanAgrees holds the scanner to the general decoder on any line
// (checkAgree): the fast path may take fewer lines, never more, and reads
// the ones it takes to the same records.
func FuzzScanAgrees(f *testing.F) {
	for _, line := range bytes.Split(mustGenuine(f), []byte("\n")) {
		f.Add(line)
	}
	for _, line := range bytes.Split(readTestdata(f, "smallorder.jsonl"), []byte("\n")) {
		f.Add(line)
	}
	for _, line := range bytes.Split(readTestdata(f, "rounds.jsonl"), []byte("\n")) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgree(t, line)
	})
}

// TestScanTakesBenchLog: every line of a log written under load is an
// intent or an outcome the scanner takes, but its first and last, and
// reads exactly, without encoding it again.
func TestScanTakesBenchLog(t *testing.T) {
	data := readTestdata(t, "load.jsonl")
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for i, line := range lines {
		want := i > 0 && i < len(lines)-1
		if got := checkAgree(t, line); got != want {
			t.Errorf("line %d: scanned = %v; want %v (%s)", i, got, want, line)
		}
		if got := scannedExactly(line); got != want {
			t.Errorf("line %d: read exactly = %v; want %v (%s)", i, got, want, line)
		}
	}
}

// scannedExactly reports whether the scanner reads line exactly
// (scanExact): DecodeInto takes it without encoding it again.
func scannedExactly(line []byte) bool {
	var d Decoder
	var s Slot
	_, exact := d.scanExact(&s, line)
	return exact
}

// TestDecodeIntoAllocs: decoding an intent or an outcome into a slot, as
// verify does, allocates nothing once the decoder has seen its strings.
func TestDecodeIntoAllocs(t *testing.T) {
	lines := []string{
		genuineLine(t, `"kind":"intent"`, `"call":1,`),
		genuineLine(t, `"kind":"outcome"`, `"call":1,`),
		genuineLine(t, `"kind":"intent"`, `"call":"b-1"`),
		genuineLine(t, `"kind":"intent"`, `"rule":"read_*"`),
		// The fields of rounds (rounds.go), lists among them.
		roundsLine(t, `"kind":"intent"`, `"revision":"2026-07-28"`, `"principal"`),
		roundsLine(t, `"kind":"outcome"`, `"result_type":"complete"`),
		roundsLine(t, `"kind":"outcome"`, `"task_id":"task-7"`),
		roundsLine(t, `"kind":"outcome"`, `"input_requests"`, `"more":2`),
		roundsLine(t, `"kind":"intent"`, `"input_responses"`, `"more":3`),
	}
	for _, l := range lines {
		line := []byte(l)
		var d Decoder
		var s Slot
		got := testing.AllocsPerRun(100, func() {
			if err := d.DecodeInto(&s, line); err != nil {
				t.Fatal(err)
			}
		})
		if got != 0 {
			t.Errorf("decodeInto(%s) allocates %v times; want 0", line, got)
		}
	}
}

// TestDecodeOwns: what Decode returns is its own but for Signed, though
// the decoder reuses its storage and the scanner reads in place.
func TestDecodeOwns(t *testing.T) {
	var d Decoder
	lines := bytes.Split(bytes.TrimSuffix(mustGenuine(t), []byte("\n")), []byte("\n"))
	var recs []*Record
	var want []comparableRecord
	for _, line := range lines {
		line = bytes.Clone(line)
		r, err := d.Decode(line)
		if err != nil {
			continue
		}
		recs = append(recs, r)
		w := recordOf(r)
		w.Signed = ""
		want = append(want, w)
		for i := range line {
			line[i] = 'x'
		}
	}
	if len(recs) < 15 {
		t.Fatalf("Decode took %d lines of the genuine log; want all but the torn one", len(recs))
	}
	for i, r := range recs {
		got := recordOf(r)
		got.Signed = ""
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("record %d changed after its line was overwritten and more were decoded:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
}

// TestAppendTime holds AppendTime to time.AppendFormat with TimeLayout,
// in UTC: the digits it writes itself are the layout's.
func TestAppendTime(t *testing.T) {
	times := []time.Time{
		{},
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		time.Date(2028, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("east", 5*3600+30*60)),
		time.Now(),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(rng.Int64N(400*365*86400)-100*365*86400, rng.Int64N(1e9)))
	}
	for _, ts := range times {
		if got, want := AppendTime([]byte("x"), ts), ts.UTC().AppendFormat([]byte("x"), TimeLayout); !bytes.Equal(got, want) {
			t.Errorf("AppendTime(%v) = %s; want %s", ts, got, want)
		}
	}
}

// TestDecodeNumberIDs: a call id that fastjson reads as a number but the
// JSON grammar does not is no JSON line, and no record: the canonical
// check cannot catch it, since the id is written back as read.
func TestDecodeNumberIDs(t *testing.T) {
	intent := genuineLine(t, `"kind":"intent"`, `"call":1,`, `"sig":`)
	for _, tt := range []struct {
		id   string
		want bool // decodes
	}{
		{"1", true}, {"-0", true}, {"1.5e+3", true}, {"12345678901234567890123", true},
		{"01", false}, {"1-2", false}, {"Inf", false}, {"NaN", false}, {"-", false},
		{"1.", false}, {"+1", false}, {".5", false}, {"1e", false}, {"0x10", false},
	} {
		line := strings.Replace(intent, `"call":1,`, `"call":`+tt.id+`,`, 1)
		var d Decoder
		_, err := d.Decode([]byte(line))
		if got := err == nil; got != tt.want {
			t.Errorf("Decode(call %s) error = %v; want decodes = %v", tt.id, err, tt.want)
		}
	}
}

// edited is line with its first old replaced by new (line itself if old
// is empty); a line that holds no old fails the test.
func edited(t *testing.T, line, old, new string) []byte {
	t.Helper()
	if old != "" {
		if !strings.Contains(line, old) {
			t.Fatalf("line %q holds no %q", line, old)
		}
		line = strings.Replace(line, old, new, 1)
	}
	return []byte(line)
}
