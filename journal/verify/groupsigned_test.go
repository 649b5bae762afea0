package verify_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
	"github.com/aegisrelay/aegis/journal/verify/verifyjson"
)

var updateGroupSigned = flag.Bool("update-groupsigned", false, "rewrite testdata/groupsigned/want from this verify")

// TestGroupSignedLogsUnchanged: logs written before attestations
// (testdata/groupsigned: every golden log of journal/testdata/golden and
// journal/record/testdata as the writer wrote them when it signed the
// last record of every group) verify as they did: verify's JSON document
// of each, byte for byte, is want/'s, which the verify of that writer
// produced (-update-groupsigned, run at that commit).
func TestGroupSignedLogsUnchanged(t *testing.T) {
	dir := filepath.Join("testdata", "groupsigned")
	for _, file := range []string{"genuine.jsonl", "load.jsonl", "named.jsonl", "rounds.jsonl", "smallorder.jsonl", "prezeroed.jsonl", "torn.jsonl", "rotated/audit.jsonl"} {
		sets, err := segment.Sets([]string{filepath.Join(dir, file)}, strings.HasPrefix(file, "rotated/"))
		if err != nil || len(sets) != 1 {
			t.Fatalf("%s: %d sets, %v", file, len(sets), err)
		}
		rep, err := verify.Set(sets[0], verify.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(verifyjson.New(file, false, rep), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		wantPath := filepath.Join(dir, "want", strings.ReplaceAll(file, "/", "_")+".json")
		if *updateGroupSigned {
			if err := os.MkdirAll(filepath.Dir(wantPath), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(wantPath, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(wantPath)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("verify %s =\n%s\nwant (%s)\n%s", file, got, wantPath, want)
		}
	}
}
