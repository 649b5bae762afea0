package policy

import (
	"bytes"
	"os"
	"testing"
)

// TestWriteExplanation: what aegis policy explain prints, for every kind
// of answer (an exact name, a glob, the default, an approval, a rate, a
// condition with a later rule that also matches, names no call can carry
// to the rules), is the golden file's bytes, which the command printed
// when this wording lived in cmd/aegis.
func TestWriteExplanation(t *testing.T) {
	p, err := Load("testdata/explain.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, tool := range []string{"read_file", "delete_all", "write_file", "search", "echo", "nope", "bad\x01", "a\xffb"} {
		p.WriteExplanation(&got, tool)
	}
	want, err := os.ReadFile("testdata/explain.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("WriteExplanation =\n%s\nwant (testdata/explain.golden)\n%s", got.Bytes(), want)
	}
}
