package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	xtlog "golang.org/x/mod/sumdb/tlog"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// proveFixture is a log written by the real aegis wrap (two sessions of
// calls to the echo child) and two checkpoints of it signed with the
// fixture's key: old, of its first session, and new, of all of it.
type proveFixture struct {
	*fixture
	lines    [][]byte // the log's lines: every one a leaf (no torn line)
	old, new string   // checkpoint files
}

func newProveFixture(t *testing.T) *proveFixture {
	t.Helper()
	f := &proveFixture{fixture: newFixture(t)}
	var calls strings.Builder
	for session := range 2 {
		calls.Reset()
		for i := range 4 {
			calls.WriteString(`{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"tools/call","params":{"name":"echo"}}` + "\n")
		}
		cmd := f.wrapCmd(nil, child("echo")...)
		cmd.Stdin = strings.NewReader(calls.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("wrap (session %d): %v\n%s", session, err, out)
		}
		if session == 0 {
			f.old = f.checkpoint(t, "old.checkpoint", 0)
		}
	}
	f.new = f.checkpoint(t, "new.checkpoint", 0)
	return f
}

// checkpoint signs a checkpoint of the log's first n lines (0: all) with
// the fixture's key, as wrap --checkpoint-file would, and writes it to
// name in the fixture's folder.
func (f *proveFixture) checkpoint(t *testing.T, name string, n int) string {
	t.Helper()
	f.lines = bytes.Split(bytes.TrimSuffix(readAudit(f.audit), []byte("\n")), []byte("\n"))
	if n == 0 {
		n = len(f.lines)
	}
	key, err := record.ReadPrivateKeyFile(f.key, false)
	if err != nil {
		t.Fatal(err)
	}
	tr := tlog.NewTree()
	for _, l := range f.lines[:n] {
		tr.AppendLine(l)
	}
	c := tlog.Checkpoint{Origin: tlog.Origin(f.lines[0]), Size: uint64(n), Root: tr.Root()}
	s, err := tlog.Signer(c.Origin, key)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := tlog.Sign(c, s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// aegis runs the real binary and returns its exit status, stdout and stderr.
func runAegis(t *testing.T, args ...string) (int, []byte, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		t.Fatalf("aegis %q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.Bytes(), stderr.String()
}

func writeProveFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProveInclusion: aegis prove inclusion prints the proof of a record
// (its exact line, its index, the tree, the audit path), which x/mod's
// tlog accepts and aegis prove check accepts holding only the public key,
// the checkpoint and the proof; a changed proof, another line, another
// key's checkpoint are refused (exit 1).
func TestProveInclusion(t *testing.T) {
	f := newProveFixture(t)
	for _, seq := range []int{0, 3, len(f.lines) - 1} {
		code, out, stderr := runAegis(t, "prove", "inclusion", "--checkpoint", f.new, "--seq", itoa(seq), f.audit)
		if code != 0 {
			t.Fatalf("prove inclusion --seq %d = exit %d; want 0\n%s", seq, code, stderr)
		}
		var p tlog.Inclusion
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("prove inclusion printed %q: %v", out, err)
		}
		if p.Line != string(f.lines[seq]) || p.Index != uint64(seq) || p.Size != uint64(len(f.lines)) {
			t.Fatalf("proof of seq %d: line %.40q…, index %d, size %d; want line %.40q…, %d, %d", seq, p.Line, p.Index, p.Size, f.lines[seq], seq, len(f.lines))
		}
		rp := make(xtlog.RecordProof, len(p.Hashes))
		for i, h := range p.Hashes {
			rp[i] = xtlog.Hash(h)
		}
		if err := xtlog.CheckRecord(rp, int64(p.Size), xtlog.Hash(p.Root), int64(seq), xtlog.RecordHash(f.lines[seq])); err != nil {
			t.Errorf("x/mod CheckRecord(proof of seq %d) = %v", seq, err)
		}
		proof := writeProveFile(t, filepath.Join(f.dir, "p.json"), out)
		line := writeProveFile(t, filepath.Join(f.dir, "line"), append(bytes.Clone(f.lines[seq]), '\n'))
		if code, _, stderr := runAegis(t, "prove", "check", "--key", "@"+f.key+".pub", "--checkpoint", f.new, "--proof", proof, "--line", line); code != 0 {
			t.Errorf("prove check of seq %d = exit %d; want 0\n%s", seq, code, stderr)
		}
	}
	code, out, _ := runAegis(t, "prove", "inclusion", "--checkpoint", f.new, "--seq", "2", f.audit)
	if code != 0 {
		t.Fatal("prove inclusion --seq 2 failed")
	}
	proof := writeProveFile(t, filepath.Join(f.dir, "p.json"), out)
	other := filepath.Join(t.TempDir(), "other.key")
	if err := exec.Command(aegisBin, "keygen", "--out", other).Run(); err != nil {
		t.Fatal(err)
	}
	var p tlog.Inclusion
	if err := json.Unmarshal(out, &p); err != nil || len(p.Hashes) == 0 {
		t.Fatalf("prove inclusion's proof = %v, %d hashes; want one with hashes\n%s", err, len(p.Hashes), out)
	}
	p.Hashes[0][0] ^= 1
	bad, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a hash changed", []string{"--key", "@" + f.key + ".pub", "--checkpoint", f.new, "--proof", writeProveFile(t, filepath.Join(f.dir, "bad.json"), bad)}, "does not check"},
		{"another line", []string{"--key", "@" + f.key + ".pub", "--checkpoint", f.new, "--proof", proof, "--line", writeProveFile(t, filepath.Join(f.dir, "l3"), f.lines[3])}, "another line"},
		{"another key", []string{"--key", "@" + other + ".pub", "--checkpoint", f.new, "--proof", proof}, "checkpoint"},
		{"another checkpoint", []string{"--key", "@" + f.key + ".pub", "--checkpoint", f.old, "--proof", proof}, "no checkpoint of tree size"},
	}
	for _, tt := range tests {
		code, _, stderr := runAegis(t, append([]string{"prove", "check"}, tt.args...)...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("prove check, %s = exit %d, %q; want 1 and %q", tt.name, code, stderr, tt.want)
		}
	}
	// A root that does not match is shown as aegis shows hashes, in
	// base64: the checkpoint's, never as a list of decimal bytes.
	_, _, stderr := runAegis(t, "prove", "check", "--key", "@"+f.key+".pub", "--checkpoint", f.new, "--proof", filepath.Join(f.dir, "bad.json"))
	if !strings.Contains(stderr, p.Root.String()) || decimalBytes.MatchString(stderr) {
		t.Errorf("prove check, a hash changed: %q; want the checkpoint's root %s in base64, no decimal bytes", stderr, p.Root)
	}
}

// decimalBytes is a byte slice as %v prints it.
var decimalBytes = regexp.MustCompile(`\[\d+ \d+ \d+`)

// TestProveConsistency: the proof that the checkpoint of all the log
// extends the one of its first session is printed and checks, with x/mod's
// tlog and with prove check; with the checkpoints swapped it does not.
func TestProveConsistency(t *testing.T) {
	f := newProveFixture(t)
	code, out, stderr := runAegis(t, "prove", "consistency", "--old", f.old, "--new", f.new, "--key", "@"+f.key+".pub", f.audit)
	if code != 0 {
		t.Fatalf("prove consistency = exit %d; want 0\n%s", code, stderr)
	}
	var p tlog.Consistency
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	tp := make(xtlog.TreeProof, len(p.Hashes))
	for i, h := range p.Hashes {
		tp[i] = xtlog.Hash(h)
	}
	if err := xtlog.CheckTree(tp, int64(p.NewSize), xtlog.Hash(p.NewRoot), int64(p.OldSize), xtlog.Hash(p.OldRoot)); err != nil {
		t.Errorf("x/mod CheckTree = %v", err)
	}
	proof := writeProveFile(t, filepath.Join(f.dir, "c.json"), out)
	if code, stdout, stderr := runAegis(t, "prove", "check", "--key", "@"+f.key+".pub", "--old", f.old, "--new", f.new, "--proof", proof); code != 0 || !bytes.HasPrefix(stdout, []byte("ok: ")) {
		t.Errorf("prove check = exit %d, %q; want 0\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runAegis(t, "prove", "check", "--key", "@"+f.key+".pub", "--old", f.new, "--new", f.old, "--proof", proof); code != 1 {
		t.Errorf("prove check, checkpoints swapped = exit %d; want 1\n%s", code, stderr)
	}
	p.Hashes[0][0] ^= 1
	bad, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runAegis(t, "prove", "check", "--key", "@"+f.key+".pub", "--old", f.old, "--new", f.new, "--proof", writeProveFile(t, filepath.Join(f.dir, "bad.json"), bad))
	if code != 1 || !strings.Contains(stderr, p.OldRoot.String()) && !strings.Contains(stderr, p.NewRoot.String()) || decimalBytes.MatchString(stderr) {
		t.Errorf("prove check, a hash changed = exit %d, %q; want 1, the root it misses (%s or %s) in base64, no decimal bytes", code, stderr, p.OldRoot, p.NewRoot)
	}
}

// TestProveTampered: a log rewritten after its checkpoint, or cut short
// of it, gets no proof: exit 1, naming what was found.
func TestProveTampered(t *testing.T) {
	f := newProveFixture(t)
	data := readAudit(f.audit)
	rewritten := bytes.Replace(data, []byte(`"tool":"echo"`), []byte(`"tool":"ohce"`), 1)
	cut := data[:bytes.LastIndexByte(data[:len(data)-1], '\n')+1]
	for _, tt := range []struct {
		name string
		log  []byte
		want string
	}{
		{"rewritten", rewritten, "rewritten"},
		{"cut", cut, "cut"},
	} {
		path := writeProveFile(t, filepath.Join(t.TempDir(), "audit.jsonl"), tt.log)
		code, out, stderr := runAegis(t, "prove", "inclusion", "--checkpoint", f.new, "--seq", "1", path)
		if code != 1 || len(out) != 0 || !strings.Contains(stderr, tt.want) {
			t.Errorf("prove inclusion of a log %s = exit %d, %d bytes out, %q; want 1, nothing, %q", tt.name, code, len(out), stderr, tt.want)
		}
	}
	if code, _, stderr := runAegis(t, "prove", "inclusion", "--checkpoint", f.new, "--seq", itoa(len(f.lines)), f.audit); code != 1 || !strings.Contains(stderr, "not in the checkpoint") {
		t.Errorf("prove inclusion past the checkpoint = exit %d, %q; want 1", code, stderr)
	}
	if code, _, _ := runAegis(t, "prove", "inclusion", "--seq", "1", f.audit); code != 2 {
		t.Errorf("prove inclusion without --checkpoint = exit %d; want 2", code)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestProveByName: LOG may be the NAME of a server with one log in the
// state folder, as aegis log takes it; a NAME with several logs is
// refused, naming them.
func TestProveByName(t *testing.T) {
	f := newProveFixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	state := filepath.Join(os.Getenv("XDG_STATE_HOME"), "aegis")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	writeProveFile(t, filepath.Join(state, "srv.jsonl"), readAudit(f.audit))
	code, want, stderr := runAegis(t, "prove", "inclusion", "--checkpoint", f.new, "--seq", "3", f.audit)
	if code != 0 {
		t.Fatalf("prove inclusion FILE = exit %d; want 0\n%s", code, stderr)
	}
	code, got, stderr := runAegis(t, "prove", "inclusion", "--checkpoint", f.new, "--seq", "3", "srv")
	if code != 0 || !bytes.Equal(got, want) || len(want) == 0 {
		t.Errorf("prove inclusion srv = exit %d, %q, %s; want 0 and the proof from the file, %q", code, got, stderr, want)
	}
	writeProveFile(t, filepath.Join(state, "srv-2.jsonl"), readAudit(f.audit))
	if code, _, stderr := runAegis(t, "prove", "inclusion", "--checkpoint", f.new, "--seq", "3", "srv"); code != 2 || !strings.Contains(stderr, "srv-2.jsonl") {
		t.Errorf("prove inclusion srv, two logs = exit %d, %q; want 2, naming srv-2.jsonl", code, stderr)
	}
}
