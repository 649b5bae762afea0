package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestAppendCommon: for every line the journal's writer wrote in
// testdata, the common fields AppendCommon spells for its decoded record
// are the line's first bytes, up to its kind fields: the writer, the
// decoder and the scanner read and write one header.
func TestAppendCommon(t *testing.T) {
	var d Decoder
	n := 0
	for _, name := range []string{"genuine.jsonl", "smallorder.jsonl", "load.jsonl"} {
		for line := range bytes.Lines(readTestdata(t, name)) {
			line = bytes.TrimSuffix(line, []byte("\n"))
			r, err := d.Decode(line)
			if err != nil {
				continue // the torn line of genuine.jsonl
			}
			var sid [32]byte
			hex.Encode(sid[:], r.SID[:])
			got := AppendCommon(nil, r.Seq, r.TS, &sid, r.Kind, r.Prev)
			want := r.Body.AppendFields(bytes.Clone(got))
			if !bytes.HasPrefix(line, got) || !bytes.HasPrefix(r.Signed, want) {
				t.Errorf("%s seq %d: AppendCommon = %s; want a prefix of %.200s", name, r.Seq, got, line)
			}
			n++
		}
	}
	if n < 20 {
		t.Fatalf("read %d records of testdata; want at least 20", n)
	}
}

// TestPeekChain: PeekChain reads the seq and prev of a line that begins
// as a record does, and passes over every other line, the way the tree
// picks its leaves (package tlog's Chain).
func TestPeekChain(t *testing.T) {
	prev := sha256.Sum256([]byte("x"))
	ph := hex.EncodeToString(prev[:])
	rec := func(seq string) string {
		return LineStart + seq + `,"ts":"2026-01-02T03:04:05.000000006Z","sid":"0123456789abcdef0123456789abcdef","kind":"intent","prev":"sha256:` + ph + `","call":1}`
	}
	tests := []struct {
		name string
		line string
		seq  uint64
		ok   bool
	}{
		{"record", rec("7"), 7, true},
		{"seq 0", rec("0"), 0, true},
		{"largest seq", rec("18446744073709551615"), 18446744073709551615, true},
		{"seq past uint64", rec("18446744073709551616"), 0, false},
		{"leading zero", rec("07"), 0, false},
		{"no seq", rec(""), 0, false},
		{"seq not a number", rec("x"), 0, false},
		{"negative seq", rec("-1"), 0, false},
		{"not ended by a brace", strings.TrimSuffix(rec("7"), "}"), 0, false},
		{"another version", strings.Replace(rec("7"), `"v":2`, `"v":3`, 1), 0, false},
		{"white space", " " + rec("7"), 0, false},
		{"upper-case prev", strings.Replace(rec("7"), ph, strings.ToUpper(ph), 1), 7, true},
		{"short prev", strings.Replace(rec("7"), ph, ph[:63], 1), 0, false},
		{"prev not hex", strings.Replace(rec("7"), ph, "g"+ph[1:], 1), 0, false},
		{"no prev", strings.Replace(rec("7"), `"prev"`, `"prex"`, 1), 0, false},
		{"prev past the window", strings.Replace(rec("7"), `"kind":"intent"`, `"kind":"`+strings.Repeat("i", peekWindow)+`"`, 1), 0, false},
		{"seq only", LineStart + "7}", 0, false},
		{"empty", "", 0, false},
		{"a prefix of the start", LineStart[:5], 0, false},
		{"NULs", "\x00\x00\x00", 0, false},
	}
	for _, tt := range tests {
		seq, p, ok := PeekChain([]byte(tt.line))
		if ok != tt.ok || seq != tt.seq || (ok && p != prev) {
			t.Errorf("%s: PeekChain(%.60q…) = %d, %v, %v; want %d, %v, %v", tt.name, tt.line, seq, p, ok, tt.seq, prev, tt.ok)
		}
	}
}
