package record

import (
	"os"
	"path/filepath"
	"testing"
)

// readTestdata returns a log in testdata/, written by the journal's writer
// (journal's TestRecordTestdata keeps them, and rewrites them with
// -update): genuine.jsonl, two sessions with every record kind and a torn
// line between them; smallorder.jsonl, a session signed by a small-order
// key; load.jsonl, calls appended by 4 goroutines at once.
func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func mustGenuine(tb testing.TB) []byte { return readTestdata(tb, "genuine.jsonl") }
