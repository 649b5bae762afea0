package verify

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestEgressVerifyCommand: aegis verify, the binary a user runs, says
// INVALID (exit 1) of a signed log whose connection ends without its
// opening record, naming the connection at its closing record's seq;
// of the same session whose open connection a crash left, it says
// INCOMPLETE (exit 3) and notes the connection.
func TestEgressVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	aegis := filepath.Join(dir, "aegis")
	build := exec.Command(goBin, "build", "-o", aegis, "github.com/aegisrelay/aegis/cmd/aegis")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/aegis: %v\n%s", err, out)
	}
	pub := "--key=" + record.FormatPublicKey(fuzzPub)
	for _, tc := range []struct {
		name  string
		steps []roundsStep
		exit  int
		want  []string
	}{
		{"closed, never opened", without(egressSteps(), "open3"), 1,
			[]string{"INVALID", "(seq 6): egress connection 3 ends allowed, but no opening record of this session opened it"}},
		{"cut with a connection open", without(without(egressSteps(), "end"), "close3"), 3,
			[]string{"INCOMPLETE", "note: session c3010203000000000000000000000000: egress connection 3 opened, not closed (the log ends)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.WriteFile(path, writeSteps(t, tc.steps), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(aegis, "verify", pub, path).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.exit {
				t.Fatalf("aegis verify: %v\n%s\nwant exit %d", err, out, tc.exit)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("aegis verify said\n%s\nwant %q", out, w)
				}
			}
		})
	}
}
