package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// egressGolden is the golden log of a confined session under
// --allow-egress, written by aegis wrap (cmd/aegis's
// TestConfineEgressEscape -egress-golden), whose key is egressGoldenKey;
// record's tests decode it.
var (
	egressGolden    = filepath.Join("testdata", "egress.jsonl")
	egressGoldenKey = filepath.Join("testdata", "egress.pub")
)

// TestEgressGolden: the log of egress records a real wrap wrote
// (connections allowed, each with its opening record, and refused: no
// grant, a literal, the metadata address, a ClientHello naming another
// server) verifies, pinned to its key, and holds those records.
func TestEgressGolden(t *testing.T) {
	data, err := os.ReadFile(egressGolden)
	if err != nil {
		t.Fatal(err)
	}
	pubText, err := os.ReadFile(egressGoldenKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := record.ParsePublicKey(strings.TrimSpace(string(pubText)))
	if err != nil {
		t.Fatal(err)
	}
	if rep := verifyBytes(t, data, Options{Key: pub}); rep.Status != Valid || len(rep.Sessions) != 1 {
		t.Fatalf("Verify(%s) = %v, %d sessions, problems %v; want valid, one session", egressGolden, rep.Status, len(rep.Sessions), rep.Problems)
	}
	var got []string
	var d record.Decoder
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		r, err := d.Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := r.Body.(*record.Egress); ok {
			got = append(got, fmt.Sprintf("%d %s %s %v", e.Conn, e.Method, e.Decision, e.Open))
		}
	}
	want := []string{"1 GET allowed true", "1 GET allowed false", "2 CONNECT allowed true", "3 GET refused false",
		"4 GET refused false", "5 GET refused false", "6 CONNECT refused false", "2 CONNECT allowed false"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("egress records %q; want %q", got, want)
	}
}
