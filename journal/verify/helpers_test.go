package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// Helpers that write logs with the journal's writer for verify to read.

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	k, err := record.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustDurability(t testing.TB, s string) journal.Durability {
	t.Helper()
	d, err := journal.ParseDurability(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func verifyFile(t testing.TB, path string, opts Options) *Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Stream(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verifyBytes(t testing.TB, b []byte, opts Options) *Report {
	t.Helper()
	rep, err := Stream(bytes.NewReader(b), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// fuzzKey signs record/testdata/genuine.jsonl (journal's fuzz tests).
var fuzzKey = func() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("aegis FuzzVerify"))
	return ed25519.NewKeyFromSeed(seed[:])
}()

var fuzzPub = fuzzKey.Public().(ed25519.PublicKey)

// mustGenuine returns the genuine log of journal's fuzz tests: two
// sessions of every record kind with a torn line between them.
func mustGenuine(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", "record", "testdata", "genuine.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// callRecords builds the records of one recorded tools/call as the relay
// does: an intent, then its outcome. Reused across calls; Append copies.
type callRecords struct {
	id  []byte
	in  record.Intent
	out record.Outcome
}

func newCallRecords() *callRecords {
	c := &callRecords{}
	c.in = record.Intent{Tool: []byte("read_file"), HasTool: true, RequestDigest: sha256.Sum256([]byte("request"))}
	c.out = record.Outcome{ResponseDigest: sha256.Sum256([]byte("response")), HasResponse: true, Status: record.StatusOK, LatencyNS: 123456}
	return c
}

func (c *callRecords) intent(n int) *record.Intent {
	c.id = strconv.AppendInt(c.id[:0], int64(n), 10)
	c.in.Call = record.Call{Type: record.IDNumber, Text: c.id}
	return &c.in
}

func (c *callRecords) outcome(intent uint64) *record.Outcome {
	c.out.Call, c.out.Intent = c.in.Call, intent
	return &c.out
}

// call records one tools/call as the relay does: intent, Wait before the
// request moves; outcome, Wait before the response moves.
func (c *callRecords) call(j *journal.Journal, n int) error {
	seq, err := j.Append(c.intent(n))
	if err == nil {
		err = j.Wait(seq, journal.BeforeRequest)
	}
	if err == nil {
		seq, err = j.Append(c.outcome(seq))
	}
	if err == nil {
		err = j.Wait(seq, journal.BeforeResponse)
	}
	return err
}
