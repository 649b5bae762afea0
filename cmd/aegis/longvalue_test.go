package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// Tests of values too long to record whole, and of lines too long to be
// records, through the real binary.

// wrapCalls runs aegis wrap around the echo child with these frames on
// its stdin.
func (f *fixture) wrapCalls(t *testing.T, frames ...string) {
	t.Helper()
	cmd := f.wrapCmd(nil, child("echo")...)
	cmd.Stdin = strings.NewReader(strings.Join(frames, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runBounded(t, cmd, 60*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("aegis wrap = exit %d\n%s", code, stderr.String())
	}
}

// runLogCmd runs aegis log with args and returns its exit code, stdout and
// stderr.
func runLogCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, append([]string{"log"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runBounded(t, cmd, 60*time.Second)
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func toolsCall(id, name string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `"}}`
}

// TestWrapLongIDAndTool: a call whose id and tool name are 1.5 MiB each,
// far under --max-frame, is recorded with both abbreviated: every line is
// short, verify finds the log valid, and log shows the call.
func TestWrapLongIDAndTool(t *testing.T) {
	f := newFixture(t)
	const n = 3 << 19
	id, tool := strings.Repeat("i", n), strings.Repeat("t", n)
	num := "1" + strings.Repeat("0", n-1)
	f.wrapCalls(t,
		toolsCall(`"`+id+`"`, tool),
		toolsCall(num, "echo"),
		toolsCall("7", "echo"))
	f.mustVerify(t, 0)
	for i, line := range bytes.Split(readAudit(f.audit), []byte("\n")) {
		if len(line) > 4096 {
			t.Errorf("audit line %d is %d bytes; want every long value abbreviated", i+1, len(line))
		}
	}
	var in *record.Intent
	for _, r := range f.records(t) {
		if b, ok := r.Body.(*record.Intent); ok && in == nil {
			in = b
		}
	}
	switch {
	case in == nil:
		t.Fatal("no intent recorded")
	case in.Call.Type != record.IDString || in.Call.Len != n || in.Call.Sum != sha256.Sum256([]byte(id)):
		t.Errorf("intent call = %v, %d bytes; want the string id abbreviated, %d bytes and its SHA-256", in.Call.Type, in.Call.Len, n)
	case in.ToolLen != n || in.ToolSum != sha256.Sum256([]byte(tool)) || string(in.Tool) != tool[:record.PrefixBytes]:
		t.Errorf("intent tool = %q, %d bytes; want a %d-byte prefix of %d bytes", in.Tool, in.ToolLen, record.PrefixBytes, n)
	}

	code, out, errOut := runLogCmd(t, f.audit)
	if code != 0 {
		t.Fatalf("aegis log = exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf(`"%s…" (%d bytes)`, id[:record.PrefixBytes], n),
		fmt.Sprintf(`%s… (%d bytes)`, tool[:record.PrefixBytes], n),
		fmt.Sprintf(`%s… (%d bytes)`, num[:record.PrefixBytes], n),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("aegis log output lacks %.80q…:\n%.2000s", want, out)
		}
	}
	if got := strings.Count(out, " ok "); got != 3 {
		t.Errorf("aegis log shows %d calls ok; want 3:\n%.2000s", got, out)
	}
	_, js, _ := runLogCmd(t, "--json", f.audit)
	if want := `"tool_sha256":"` + record.Digest(sha256.Sum256([]byte(tool))).String() + `"`; !strings.Contains(js, want) {
		t.Errorf("aegis log --json lacks %s:\n%.2000s", want, js)
	}
}

// TestLongLineReadOn: a line longer than any record, put in a log by
// hand, is reported by verify, which reads on and finds a later session
// tampered with; log skips the line, says so, and shows the calls after
// it.
func TestLongLineReadOn(t *testing.T) {
	f := newFixture(t)
	f.wrapCalls(t, toolsCall("1", "first"))
	f.wrapCalls(t, toolsCall("2", "second"))
	data := readAudit(f.audit)
	second := bytes.Index(data, []byte(`"kind":"session_start"`))
	second = bytes.Index(data[second+1:], []byte(`"kind":"session_start"`)) + second + 1
	second = bytes.LastIndexByte(data[:second], '\n') + 1
	long := []byte(strings.Repeat("L", record.MaxLine+100) + "\n")
	tampered := bytes.Replace(data[second:], []byte(`"tool":"second"`), []byte(`"tool":"SECOND"`), 1)
	log := append(append(append([]byte(nil), data[:second]...), long...), tampered...)
	if err := os.WriteFile(f.audit, log, 0o600); err != nil {
		t.Fatal(err)
	}
	longLine := bytes.Count(data[:second], []byte("\n")) + 1

	code, out := f.verify(t)
	if code != 1 {
		t.Errorf("aegis verify = exit %d; want 1\n%s", code, out)
	}
	for _, want := range []string{
		fmt.Sprintf("line %d: journal: bad record: line of %d bytes, longer than any record", longLine, record.MaxLine+100),
		fmt.Sprintf("line %d (seq %d): prev does not match", longLine+1, longLine-1),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("aegis verify output lacks %q:\n%s", want, out)
		}
	}
	// The tampered record is covered by its group's signature, carried
	// in the same line or attested by a later one (journal/doc.go,
	// "Signatures"): either way it no longer verifies.
	if !strings.Contains(out, "signature does not verify") && !strings.Contains(out, "attestation does not verify") {
		t.Errorf("aegis verify output says no signature or attestation fails over the tampered record:\n%s", out)
	}

	code, out, errOut := runLogCmd(t, f.audit)
	if code != 0 {
		t.Errorf("aegis log = exit %d; want 0\n%s", code, errOut)
	}
	if want := fmt.Sprintf("a line longer than any record (%d bytes; at most %d): skipped", record.MaxLine+100, record.MaxLine); !strings.Contains(errOut, want) {
		t.Errorf("aegis log stderr = %q; want it to say %q", errOut, want)
	}
	for _, want := range []string{"first", "SECOND"} {
		if !strings.Contains(out, want) {
			t.Errorf("aegis log output lacks the call to %s:\n%s", want, out)
		}
	}
}

// TestWrapArgvTooLong: a child command line too long for a session_start
// line (the record's argv is written whole) is refused before the log is
// opened: exit 2, a message saying why, no log made and no child run.
func TestWrapArgvTooLong(t *testing.T) {
	f := newFixture(t)
	marker := f.dir + "/child-ran"
	argv := []string{"sh", "-c", "touch " + marker}
	for range 10 {
		argv = append(argv, strings.Repeat("a", 120_000))
	}
	cmd := f.wrapCmd(nil, argv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runBounded(t, cmd, 60*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "too long to record") {
		t.Errorf("aegis wrap with a 1.2 MB argv = exit %d, %q; want 2 and why", code, stderr.String())
	}
	for _, p := range []string{f.audit, marker} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after the refusal (%v); want it never made", p, err)
		}
	}
}
