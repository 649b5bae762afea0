package journal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// TestAppendRefusesLongRecord: Append refuses a record too long for a
// line, writes nothing of it, and the journal goes on; long client
// values are abbreviated, and the log verifies.
func TestAppendRefusesLongRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	key := testKey(t)
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"server", strings.Repeat("A", 2<<20)}
	if _, err := j.Append(&record.SessionStart{Aegis: "test", Argv: argv, Durability: "strict", PolicySet: record.PassThroughSet}); !errors.Is(err, record.ErrRecord) {
		t.Fatalf("Append(session_start with a 2 MiB argument) = %v; want ErrRecord", err)
	}
	must := func(b record.Body) uint64 {
		t.Helper()
		seq, err := j.Append(b)
		if err != nil {
			t.Fatalf("Append(%s) = %v", b.Kind(), err)
		}
		if err := j.Wait(seq, BeforeResponse); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	if seq := must(&record.SessionStart{Aegis: "test", Argv: argv[:1], Durability: "strict", PolicySet: record.PassThroughSet}); seq != 0 {
		t.Errorf("seq after a refused record = %d; want 0", seq)
	}
	id := record.Call{Type: record.IDString, Text: []byte(strings.Repeat("i", 3<<19))}
	tool := []byte(strings.Repeat("\x01", 3<<19))
	iseq := must(&record.Intent{Call: id, Tool: tool, HasTool: true, Rule: strings.Repeat("r", 1<<20)})
	must(&record.Outcome{Call: id.Bound(nil), Intent: iseq, Status: record.StatusOK})
	if _, err := j.Append(&record.PolicyReload{Set: "sha256:00", Status: "rejected: " + strings.Repeat("e", 2<<20)}); !errors.Is(err, record.ErrRecord) {
		t.Errorf("Append(policy_reload with a 2 MiB status) = %v; want ErrRecord", err)
	}
	must(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 1, Outcomes: 1}})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verifyFile(t, path, verify.Options{Key: key.Public().(ed25519.PublicKey)})
	if rep.Status != verify.Valid || rep.Records != 4 {
		t.Fatalf("Verify = %v, %d records, %v %v; want valid, 4", rep.Status, rep.Records, rep.Problems, rep.Gaps)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var d record.Decoder
	rec, err := d.Decode(lines[1])
	if err != nil {
		t.Fatal(err)
	}
	in := rec.Body.(*record.Intent)
	switch {
	case len(lines[1]) > 2048:
		t.Errorf("intent line of %d bytes; want the long values abbreviated", len(lines[1]))
	case !in.Call.Abbreviated() || in.Call.Len != len(id.Text) || in.Call.Sum != sha256.Sum256(id.Text):
		t.Errorf("decoded call = %+v; want abbreviated, Len %d", in.Call, len(id.Text))
	case in.ToolLen != len(tool) || in.ToolSum != sha256.Sum256(tool) || !utf8.Valid(in.Tool) || len(in.Tool) != record.PrefixBytes:
		t.Errorf("decoded tool = %q, %d bytes; want a %d-byte prefix of %d bytes", in.Tool, in.ToolLen, record.PrefixBytes, len(tool))
	case in.RuleLen != 1<<20 || in.Rule != strings.Repeat("r", record.PrefixBytes):
		t.Errorf("decoded rule = %q, %d bytes; want a prefix of %d", in.Rule, in.RuleLen, 1<<20)
	}
}
