package main

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// TestVerifyCheckpoints: verify's checkpoint check (for verify.go to
// call) on a log written by the real wrap: valid against its checkpoints
// (exit 0), invalid once a record is rewritten (exit 1, naming it), and
// unreadable checkpoint files are a usage error (exit 2).
func TestVerifyCheckpoints(t *testing.T) {
	f := newProveFixture(t)
	pub, err := record.ReadPublicKeyFile(f.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	set := func(path string) *segment.Set {
		s, err := segment.Sets([]string{path}, true)
		if err != nil || len(s) != 1 {
			t.Fatal(s, err)
		}
		return s[0]
	}
	if code, lines := checkCheckpoints(set(f.audit), []string{f.old, f.new}, pub); code != exitcode.OK || len(lines) != 1 || !strings.Contains(lines[0], "extends all 2") {
		t.Errorf("checkCheckpoints(genuine) = %d, %q; want 0 and one line", code, lines)
	}
	rewritten := filepath.Join(t.TempDir(), "audit.jsonl")
	data := readAudit(f.audit)
	os.WriteFile(rewritten, []byte(strings.Replace(string(data), `"tool":"echo"`, `"tool":"ohce"`, 1)), 0o600)
	if code, lines := checkCheckpoints(set(rewritten), []string{f.old, f.new}, pub); code != exitcode.Invalid || !strings.Contains(strings.Join(lines, "\n"), "rewritten") {
		t.Errorf("checkCheckpoints(rewritten) = %d, %q; want 1 naming a rewrite", code, lines)
	}
	_, other, _ := ed25519.GenerateKey(nil)
	if code, lines := checkCheckpoints(set(f.audit), []string{f.new}, other.Public().(ed25519.PublicKey)); code != exitcode.Invalid || !strings.Contains(strings.Join(lines, "\n"), "not a valid checkpoint") {
		t.Errorf("checkCheckpoints(another key) = %d, %q; want 1", code, lines)
	}
	if code, _ := checkCheckpoints(set(f.audit), []string{filepath.Join(f.dir, "missing")}, pub); code != exitcode.Usage {
		t.Errorf("checkCheckpoints(a missing file) = %d; want 2", code)
	}
}

// TestWrapRefusesRollback: wrap continues a log only if it extends the
// checkpoint kept beside its head file. An older copy of the log put
// back, its tail cut, or a record rewritten is refused (exit 2) and left
// as it is; the log as it was is continued.
func TestWrapRefusesRollback(t *testing.T) {
	f := newFixture(t)
	head := filepath.Join(f.dir, "audit.head")
	session := func() (int, string) {
		cmd := f.wrapCmd([]string{"--head-file", head}, child("echo")...)
		cmd.Stdin = strings.NewReader(callLine)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		runBounded(t, cmd, 30*time.Second)
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	if code, errOut := session(); code != 0 {
		t.Fatalf("first session: exit %d\n%s", code, errOut)
	}
	older := readAudit(f.audit)
	if code, errOut := session(); code != 0 {
		t.Fatalf("second session: exit %d\n%s", code, errOut)
	}
	current := readAudit(f.audit)
	lines := bytes.SplitAfter(current, []byte("\n"))
	rewritten := bytes.Replace(current, []byte(`"tool":"x"`), []byte(`"tool":"y"`), 1)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"an older copy", older, "rolled back"},
		{"its tail cut", bytes.Join(lines[:len(lines)-3], nil), "rolled back"},
		{"a record rewritten", rewritten, "audit.jsonl"},
	} {
		if err := os.WriteFile(f.audit, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		code, errOut := session()
		if code != exitcode.Usage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: wrap = exit %d; want 2 saying %q\n%s", tc.name, code, tc.want, errOut)
		}
		if got := readAudit(f.audit); !bytes.Equal(got, tc.data) {
			t.Errorf("%s: wrap changed the log it refused", tc.name)
		}
	}
	if err := os.WriteFile(f.audit, current, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, errOut := session(); code != 0 {
		t.Errorf("the log as it was: exit %d; want it continued\n%s", code, errOut)
	}
	f.mustVerify(t, 0)
}
