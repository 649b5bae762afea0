package record

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestDecidedDecode: the golden intents whose policy names the rule's
// line and a refusal's reason (testdata/decided.jsonl, written by the
// journal's writer in package verify's TestDecidedGolden) decode to both,
// by both decoders, and encode back byte for byte; the lines the encoder
// never writes (line 0 or negative, an empty reason, the two swapped) are
// rejected.
func TestDecidedDecode(t *testing.T) {
	lines := bytes.Split(bytes.TrimSuffix(readTestdata(t, "decided.jsonl"), []byte("\n")), []byte("\n"))
	var got []string
	var refused string
	for _, l := range lines {
		checkAgree(t, l)
		var d Decoder
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", l, err)
		}
		if in, ok := r.Body.(*Intent); ok {
			got = append(got, in.Verdict+" "+strconv.Itoa(in.RuleLine)+" "+in.PolicyReason)
			if in.PolicyReason != "" && refused == "" {
				refused = string(l)
			}
		}
	}
	want := []string{"allowed 4 ", `denied 4 arguments: duplicate key "path"`, "denied 4 condition: no such key: path"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("intents decode to\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	const both = `,"line":4,"reason":"arguments: duplicate key \"path\""}`
	if !strings.Contains(refused, both) {
		t.Fatalf("premise: the golden intent holds %s", both)
	}
	for _, tt := range []struct{ name, with string }{
		{"line 0", `,"line":0,"reason":"arguments: duplicate key \"path\""}`},
		{"negative line", `,"line":-4,"reason":"arguments: duplicate key \"path\""}`},
		{"line not a number", `,"line":"4","reason":"arguments: duplicate key \"path\""}`},
		{"empty reason", `,"line":4,"reason":""}`},
		{"swapped", `,"reason":"arguments: duplicate key \"path\"","line":4}`},
	} {
		bad := strings.Replace(refused, both, tt.with, 1)
		var d Decoder
		if _, err := d.Decode([]byte(bad)); err == nil {
			t.Errorf("%s: Decode(%.300s) = nil error; want rejected", tt.name, bad)
		}
	}
}
