package verify

import (
	"bytes"
	"os"
	"testing"

	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/journal"
)

// Helpers that write logs with the journal's writer for verify to read;
// those that need no journal are in internal/journaltest.

var (
	testKey     = journaltest.Key
	mustGenuine = journaltest.Genuine
	fuzzPub     = journaltest.FuzzPub
)

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

// callRecords records tools/calls through a journal as the relay does.
type callRecords struct{ *journaltest.Calls }

func newCallRecords() *callRecords { return &callRecords{journaltest.NewCalls()} }

// call records one tools/call: intent, Wait before the request moves;
// outcome, Wait before the response moves.
func (c *callRecords) call(j *journal.Journal, n int) error {
	seq, err := j.Append(c.Intent(n))
	if err == nil {
		err = j.Wait(seq, journal.BeforeRequest)
	}
	if err == nil {
		seq, err = j.Append(c.Outcome(seq))
	}
	if err == nil {
		err = j.Wait(seq, journal.BeforeResponse)
	}
	return err
}
