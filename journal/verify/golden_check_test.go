package verify

import (
	"bytes"
	"os"
	"testing"

	"github.com/aegisrelay/aegis/internal/journaltest"
)

// checkGolden: got, a log the journal's writer wrote, is the golden file
// at path byte for byte (-update rewrites it), and verifies.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the log written differs from %s; if the format changed on purpose, rerun with -update", path)
	}
	if rep := verifyBytes(t, got, Options{Key: journaltest.FuzzPub}); rep.Status != Valid {
		t.Errorf("Verify(%s) = %v, problems %v; want valid", path, rep.Status, rep.Problems)
	}
}
