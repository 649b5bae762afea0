package record

import (
	"bytes"
	"testing"
)

// TestIdleDecode: the golden session_end of a session the HTTP front
// ended for idleness (testdata/idle.jsonl, written by the journal's writer
// in package verify's TestIdleGolden) decodes to reason idle, by both
// decoders.
func TestIdleDecode(t *testing.T) {
	lines := bytes.Split(bytes.TrimSuffix(readTestdata(t, "idle.jsonl"), []byte("\n")), []byte("\n"))
	var d Decoder
	r, err := d.Decode(lines[len(lines)-1])
	if err != nil {
		t.Fatalf("Decode(session_end) = %v", err)
	}
	if end, ok := r.Body.(*SessionEnd); !ok || end.Reason != EndIdle {
		t.Fatalf("Decode(session_end) = %+v; want reason %q", r.Body, EndIdle)
	}
	for _, l := range lines {
		checkAgree(t, l)
	}
}
