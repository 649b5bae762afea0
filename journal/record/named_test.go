package record

import (
	"bytes"
	"strings"
	"testing"
)

// TestNamedDecode: the golden session_start that names its server and
// client (testdata/named.jsonl, written by the journal's writer in package
// verify's TestNamedGolden) decodes to both, by both decoders; the lines
// the encoder never writes (an empty name, the two swapped, a name that
// is not a string) are rejected.
func TestNamedDecode(t *testing.T) {
	lines := bytes.Split(bytes.TrimSuffix(readTestdata(t, "named.jsonl"), []byte("\n")), []byte("\n"))
	line := string(lines[0])
	var d Decoder
	r, err := d.Decode([]byte(line))
	if err != nil {
		t.Fatalf("Decode(session_start) = %v", err)
	}
	st, ok := r.Body.(*SessionStart)
	if !ok || st.Name != "server-memory" || st.Client != "claude-desktop" {
		t.Fatalf("Decode(session_start) = %+v; want name server-memory, client claude-desktop", r.Body)
	}
	for _, l := range lines {
		checkAgree(t, l)
	}
	const both = `"name":"server-memory","client":"claude-desktop",`
	if !strings.Contains(line, both) {
		t.Fatalf("premise: the golden session_start holds %s", both)
	}
	for _, tt := range []struct{ name, with string }{
		{"empty name", `"name":"","client":"claude-desktop",`},
		{"empty client", `"name":"server-memory","client":"",`},
		{"swapped", `"client":"claude-desktop","name":"server-memory",`},
		{"name not a string", `"name":1,"client":"claude-desktop",`},
	} {
		bad := strings.Replace(line, both, tt.with, 1)
		var d Decoder
		if _, err := d.Decode([]byte(bad)); err == nil {
			t.Errorf("%s: Decode(%.300s) = nil error; want rejected", tt.name, bad)
		}
	}
}
