package otelexport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestTapLines: a journal given Exporter.TapLines hands it, with each
// group, the SHA-256 of each line as its chain computes them, and the
// spans name their records by those digests: every span's
// aegis.record.digest and aegis.outcome.digest is the digest of the line
// of that seq in the file the journal wrote, and the next line's prev.
// The records are a golden log's calls, appended to a real journal at
// strict (each group synced and tapped on its own).
func TestTapLines(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "journal", "record", "testdata", "decided.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	e, err := Start(Config{Client: rec, Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("aegis otelexport taplines test"))
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.Strict},
		Key: ed25519.NewKeyFromSeed(seed[:]), TapLines: e.TapLinesFunc(), TapSync: e.TapSyncFunc()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: "pass-through"}); err != nil {
		t.Fatal(err)
	}
	var dec record.Decoder
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		r, err := dec.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Body.(type) {
		case *record.Intent, *record.Outcome:
		default:
			continue // the journal writes its own session_start and session_end
		}
		seq, err := j.Append(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Wait(seq, journal.BeforeRequest); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(written, []byte("\n")), []byte("\n"))
	if len(rec.got) != 3 {
		t.Fatalf("%d spans; want 3, one per call", len(rec.got))
	}
	for _, s := range rec.got {
		a := attrs(s)
		for _, k := range []string{"aegis.record", "aegis.outcome"} {
			seq := a[k+".seq"].GetIntValue()
			if seq <= 0 || int(seq) >= len(lines)-1 {
				t.Fatalf("%s: %s.seq = %d, not a call's line of %d", s.Name, k, seq, len(lines))
			}
			want := digest(lines[seq])
			if got := a[k+".digest"].GetStringValue(); got != want {
				t.Errorf("%s: %s.digest = %s; want %s, the line's", s.Name, k, got, want)
			}
			if !bytes.Contains(lines[seq+1], []byte(`"prev":"`+want+`"`)) {
				t.Errorf("%s: line %d's prev is not %s", s.Name, seq+1, want)
			}
		}
	}
}
