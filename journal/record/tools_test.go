package record

import (
	"bytes"
	"strings"
	"testing"
)

// TestToolsGoldenDecode: the golden log of two sessions of a server whose
// tools changed (testdata/tools.jsonl, written by aegis wrap: tools pinned
// on first use; then one changed, one renamed, one ambiguous, one removed;
// then an acceptance) decodes, by both decoders, to those tools records,
// each re-encoding to its own fields.
func TestToolsGoldenDecode(t *testing.T) {
	lines := bytes.Split(bytes.TrimSuffix(readTestdata(t, "tools.jsonl"), []byte("\n")), []byte("\n"))
	var got []string
	for _, l := range lines {
		checkAgree(t, l)
		var d Decoder
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", l, err)
		}
		tr, ok := r.Body.(*Tools)
		if !ok {
			continue
		}
		if enc := tr.AppendFields(nil); !bytes.Contains(l, enc) {
			t.Errorf("re-encoded %s\nnot in %s", enc, l)
		}
		var b strings.Builder
		b.WriteString(tr.Event)
		for _, e := range tr.Tools {
			b.WriteString(" " + e.Name.String() + ":" + e.Pin)
			if e.Pin == PinRenamed {
				b.WriteString("<" + e.From.String())
			}
			if e.HasDigest == (e.Pin == PinAmbiguous) {
				t.Errorf("%s: digest %v with pin %s", e.Name.String(), e.HasDigest, e.Pin)
			}
		}
		for _, rm := range tr.Removed {
			b.WriteString(" -" + rm.String())
		}
		if tr.Event == ToolsAccept {
			b.WriteString(" " + tr.Tool.String() + " by " + tr.User)
		}
		got = append(got, b.String())
	}
	want := []string{"list echo:first add:first", "list echo:changed sum:renamed<add x:ambiguous -add", "accept echo by root"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tools records %q; want %q", got, want)
	}
}
