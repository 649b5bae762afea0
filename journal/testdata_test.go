package journal

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite record/testdata from the writer")

// TestRecordTestdata pins what the writer writes to the files record's
// tests decode. The genuine log (fixed clock, key and session id) is a
// golden file: the writer writes it byte for byte the same each run, so a
// change to the format shows as a diff of record/testdata/attested.jsonl.
// (record/testdata/genuine.jsonl is the genuine log as the writer wrote
// it when it signed the last record of every group: record's tests
// decode its lines, and verify's TestGroupSignedLogsUnchanged checks it
// still verifies as it did.)
// So is the session smallOrderLog forges. The log written under load by 4 appenders is a corpus (its interleaving
// differs from run to run); -update rewrites both.
func TestRecordTestdata(t *testing.T) {
	genuine := filepath.Join("record", "testdata", "attested.jsonl")
	load := filepath.Join("record", "testdata", "load.jsonl")
	smallOrder := filepath.Join("record", "testdata", "smallorder.jsonl")
	g := mustGenuine(t)
	if *update {
		if err := os.WriteFile(genuine, g, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(smallOrder, smallOrderLog(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(load, buildLog(t, "none", 4, 200), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		path string
		got  []byte
	}{{genuine, g}, {smallOrder, smallOrderLog()}} {
		want, err := os.ReadFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tt.got, want) {
			t.Errorf("the log written differs from %s; if the format changed on purpose, rerun with -update", tt.path)
		}
	}
	if _, err := os.Stat(load); err != nil {
		t.Error(err)
	}
}
