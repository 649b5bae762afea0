package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal/record"
)

// Bad input at the edges: what the binary does, run as a user runs it,
// with real files, FIFOs, devices and children.

// edgeRun runs aegis with args and stdin, and returns its exit code,
// stdout and stderr. It fails the test if aegis has not exited after 60s:
// a FIFO or /dev/zero read without end shows up as that. The bound is for
// a read that never ends, not a timing: refusing a 2 GiB sparse file reads
// 2 GiB of NULs, well under a second alone and far longer on a CI machine
// whose two cores run three test binaries.
func edgeRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, aegisBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("aegis %s: still running after 60s (killed)\nstderr: %s", strings.Join(args, " "), errb.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// edgeFiles makes, in dir, the kinds of path that are not a regular file
// of a sane size: a FIFO with no writer, a symlink to /dev/zero, a
// directory, a 2 GiB sparse file.
func edgeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	p := map[string]string{
		"/dev/zero":              "/dev/zero",
		"a FIFO":                 filepath.Join(dir, "fifo"),
		"a symlink to /dev/zero": filepath.Join(dir, "zero-link"),
		"a directory":            filepath.Join(dir, "a-dir"),
		"a 2 GiB sparse file":    filepath.Join(dir, "sparse"),
	}
	if err := syscall.Mkfifo(p["a FIFO"], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", p["a symlink to /dev/zero"]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p["a directory"], 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p["a 2 GiB sparse file"], os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// callLine is one tools/call request.
const callLine = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n"

// TestVerifyDirectory: a directory stands for every regular file in it. A
// tampered log named audit.log is verified (invalid), a file that is not
// a log is reported as such (invalid) without being quoted, and only
// aegis's own head file, checkpoints and keys, and what is not a regular
// file, are passed over, each named on stderr.
func TestVerifyDirectory(t *testing.T) {
	f := newFixture(t)
	cmd := f.wrapCmd([]string{"--head-file", filepath.Join(f.dir, "audit.head")}, child("echo")...)
	cmd.Stdin = strings.NewReader(callLine)
	if err := cmd.Run(); err != nil {
		t.Fatalf("wrap: %v", err)
	}
	data := readAudit(f.audit)
	tampered := bytes.Replace(data, []byte(`"tool":"x"`), []byte(`"tool":"y"`), 1)

	logs := filepath.Join(t.TempDir(), "logs")
	os.Mkdir(logs, 0o700)
	put := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(logs, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	put("audit.jsonl", data, 0o600)
	head, _ := os.ReadFile(filepath.Join(f.dir, "audit.head"))
	put("audit.head", head, 0o600)
	for _, name := range []string{"audit.head.checkpoint", "audit.head.checkpoint.history"} {
		b, err := os.ReadFile(filepath.Join(f.dir, name))
		if err != nil {
			t.Fatalf("wrap --head-file wrote no %s: %v", name, err)
		}
		put(name, b, 0o600)
	}
	pub, _ := os.ReadFile(f.key + ".pub")
	put("signing.key.pub", pub, 0o644)
	priv, _ := os.ReadFile(f.key)
	put("real.key", priv, 0o600)
	os.Mkdir(filepath.Join(logs, "archive"), 0o700)
	syscall.Mkfifo(filepath.Join(logs, "pipe"), 0o600)

	code, out, stderr := edgeRun(t, "", "verify", "--key", f.pub, logs)
	if code != exitcode.OK {
		t.Fatalf("verify (a log, its head, its key, a subdirectory, a FIFO) = exit %d; want 0\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"audit.head: a head file", "audit.head.checkpoint: a checkpoint", "audit.head.checkpoint.history: a checkpoint", "signing.key.pub: a public key", "real.key: a private key", "archive: a directory: not read", "pipe: a FIFO (named pipe): not read"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("verify DIR stderr lacks the note %q:\n%s", want, stderr)
		}
	}

	put("audit.log", tampered, 0o600)
	code, out, _ = edgeRun(t, "", "verify", "--key", f.pub, logs)
	if code != exitcode.Invalid || !strings.Contains(out, "audit.log: INVALID") {
		t.Errorf("verify DIR with a tampered audit.log = exit %d; want 1 naming audit.log\n%s", code, out)
	}
	os.Remove(filepath.Join(logs, "audit.log"))

	secret := "MC4CAQAwBQYDK2VwBCIEISECRETSECRET"
	put("signing.key", []byte("-----BEGIN PRIVATE KEY-----\n"+secret+"\n-----END PRIVATE KEY-----\n"), 0o600)
	put("notes.txt", []byte("remember the milk\n"), 0o600)
	code, out, stderr = edgeRun(t, "", "verify", "--key", f.pub, logs)
	if code != exitcode.Invalid || !strings.Contains(out, "notes.txt: not an aegis audit log") || !strings.Contains(out, "signing.key: not an aegis audit log") {
		t.Errorf("verify DIR with files that are not logs = exit %d; want 1 naming each as not a log\n%s", code, out)
	}
	keyBody := strings.Split(string(priv), "\n")[1]
	if strings.Contains(out+stderr, "SECRET") || strings.Contains(out+stderr, "milk") || strings.Contains(out+stderr, keyBody) {
		t.Errorf("verify quoted a file that is not a log:\n%s%s", out, stderr)
	}
	code, out, _ = edgeRun(t, "", "verify", "--json", "--key", f.pub, logs)
	if code != exitcode.Invalid || strings.Count(out, "\n") != 3 || !strings.Contains(out, `"status":"invalid"`) {
		t.Errorf("verify --json DIR = exit %d; want 1, one object per log (3)\n%s", code, out)
	}
}

// TestVerifyReadWholeCaps: --key @FILE and --head-file FILE are read
// whole; anything but a small regular file is refused at once (2), with
// an error naming the file (and the cap, for one too large).
func TestVerifyReadWholeCaps(t *testing.T) {
	f := newFixture(t)
	cmd := f.wrapCmd(nil, child("echo")...)
	cmd.Stdin = strings.NewReader(callLine)
	if err := cmd.Run(); err != nil {
		t.Fatalf("wrap: %v", err)
	}
	edges := edgeFiles(t, t.TempDir())
	big := filepath.Join(f.dir, "big.pub")
	os.WriteFile(big, append([]byte(f.pub+"\n"), bytes.Repeat([]byte(" "), 8<<10)...), 0o644)
	for name, path := range edges {
		for _, flag := range [][]string{{"--key", "@" + path}, {"--head-file", path}} {
			code, _, stderr := edgeRun(t, "", append(append([]string{"verify"}, flag...), f.audit)...)
			want := "not a regular file"
			if name == "a 2 GiB sparse file" {
				want = "file too large: " + path + " holds 2147483648 bytes"
			}
			if code != exitcode.Usage || !strings.Contains(stderr, path) || !strings.Contains(stderr, want) {
				t.Errorf("verify %s %s = exit %d, stderr %q; want 2 naming the file and %q", flag[0], name, code, stderr, want)
			}
		}
	}
	code, _, stderr := edgeRun(t, "", "verify", "--key", "@"+big, f.audit)
	if code != exitcode.Usage || !strings.Contains(stderr, "at most 4096 bytes") {
		t.Errorf("verify --key @(8 KiB .pub) = exit %d, stderr %q; want 2 naming the 4096-byte cap", code, stderr)
	}
}

// TestSigningKeyEdges: --signing-key is read whole: a FIFO (no writer),
// /dev/zero, a symlink to it, a directory, a 2 GiB sparse file and a file
// over the cap are refused at once (2), before the audit file is created.
func TestSigningKeyEdges(t *testing.T) {
	f := newFixture(t)
	edges := edgeFiles(t, t.TempDir())
	big := filepath.Join(f.dir, "big.key")
	pemBytes, _ := os.ReadFile(f.key)
	os.WriteFile(big, append(pemBytes, bytes.Repeat([]byte("#\n"), 10<<10)...), 0o600)
	edges["a 20 KiB key file"] = big
	for name, path := range edges {
		code, _, stderr := edgeRun(t, callLine, "wrap", "--audit", f.audit, "--signing-key", path, "--", "cat")
		want := "not a regular file"
		if strings.Contains(name, "sparse") || strings.Contains(name, "KiB") {
			want = "file too large: " + path
		}
		if code != exitcode.Usage || !strings.Contains(stderr, want) || !strings.Contains(stderr, "16384") && want != "not a regular file" {
			t.Errorf("wrap --signing-key %s = exit %d, stderr %q; want 2 and %q with the cap", name, code, stderr, want)
		}
		if _, err := os.Stat(f.audit); err == nil {
			t.Fatalf("wrap --signing-key %s created the audit file", name)
		}
	}
}

// TestAuditRefusesNonLog: an --audit file that is not a log is refused
// (2), the child is never started, and the file keeps its bytes, size and
// mtime: binary, text, JSON that is not a record, a log with a tail no torn
// write leaves, NULs not preceded by a log, only NULs, a 2 GiB sparse
// file. A path that is not a regular file is refused the same way.
func TestAuditRefusesNonLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cmd := f.wrapCmd(nil, child("echo")...)
	cmd.Stdin = strings.NewReader(callLine)
	if err := cmd.Run(); err != nil {
		t.Fatalf("wrap: %v", err)
	}
	log := readAudit(f.audit)
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip("no /bin/true to copy:", err)
	}
	nuls := func(n int) []byte { return make([]byte, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		data []byte
	}{
		{"a copy of /bin/true", elf},
		{"a binary ending in NULs", cat(elf, nuls(8192))},
		{"text", []byte("hello world\n")},
		{"text without a line end", []byte("hello")},
		{"JSON that is not a record", []byte(`{"jsonrpc":"2.0","id":1}` + "\n")},
		{"JSON that is not a record, no line end", []byte(`{"jsonrpc":"2.0","id":1}`)},
		{"a log, then a line that is not a record", cat(log, []byte("garbage\n"))},
		{"a log, then garbage no torn write leaves", cat(log, []byte("garbage"))},
		{"a log, then binary", cat(log, elf[:4096])},
		{"a log, then a record prefix holding a control byte", cat(log, []byte(`{"v":2,"seq":9,"ts":"`+"\x07"))},
		{"text ending in a NUL run", cat([]byte("hello\n"), nuls(1<<20))},
		{"nothing but NULs", nuls(64 << 10)},
		{"NULs far from the end, then a record", cat(nuls(2<<20), log)},
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "child-ran")
	childArgv := []string{"sh", "-c", "touch " + marker + "; cat"}
	for _, tt := range tests {
		path := filepath.Join(dir, "audit.jsonl")
		if err := os.WriteFile(path, tt.data, 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour).Truncate(time.Second)
		os.Chtimes(path, old, old)
		code, _, stderr := edgeRun(t, callLine, append([]string{"wrap", "--audit", path, "--signing-key", f.key, "--"}, childArgv...)...)
		if code != exitcode.Usage || !strings.Contains(stderr, "not an aegis audit log") || !strings.Contains(stderr, "left as it was") {
			t.Errorf("wrap --audit (%s) = exit %d, stderr %q; want 2, not an aegis audit log", tt.name, code, stderr)
		}
		st, _ := os.Stat(path)
		after, _ := os.ReadFile(path)
		if !bytes.Equal(after, tt.data) || st.Size() != int64(len(tt.data)) || !st.ModTime().Equal(old) {
			t.Errorf("wrap --audit (%s) changed the file it refused: %d bytes (was %d), mtime %v (was %v), same bytes %v",
				tt.name, st.Size(), len(tt.data), st.ModTime(), old, bytes.Equal(after, tt.data))
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("wrap --audit (%s) started the child", tt.name)
		}
		os.Remove(path)
	}

	edges := edgeFiles(t, t.TempDir())
	for name, path := range edges {
		var before os.FileInfo
		if name == "a 2 GiB sparse file" {
			before, _ = os.Stat(path)
		}
		code, _, stderr := edgeRun(t, callLine, append([]string{"wrap", "--audit", path, "--signing-key", f.key, "--"}, childArgv...)...)
		want := "not a regular file"
		if before != nil {
			want = "holds nothing but 2147483648 NUL bytes"
		}
		if code != exitcode.Usage || !strings.Contains(stderr, want) {
			t.Errorf("wrap --audit (%s) = exit %d, stderr %q; want 2 and %q", name, code, stderr, want)
		}
		if before != nil {
			st, _ := os.Stat(path)
			sys, sys0 := st.Sys().(*syscall.Stat_t), before.Sys().(*syscall.Stat_t)
			if st.Size() != before.Size() || !st.ModTime().Equal(before.ModTime()) || sys.Blocks != sys0.Blocks {
				t.Errorf("wrap --audit (%s) changed it: size %d, mtime %v, blocks %d; was %d, %v, %d", name, st.Size(), st.ModTime(), sys.Blocks, before.Size(), before.ModTime(), sys0.Blocks)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("wrap --audit (%s) started the child", name)
		}
	}
}

// TestAuditContinuesTorn: what a crash does leave is still continued:
// a torn record at the end is answered by a recovery, and the log
// verifies.
func TestAuditContinuesTorn(t *testing.T) {
	f := newFixture(t)
	for i := range 2 {
		cmd := f.wrapCmd(nil, child("echo")...)
		cmd.Stdin = strings.NewReader(callLine)
		if err := cmd.Run(); err != nil {
			t.Fatalf("wrap %d: %v", i, err)
		}
		if i == 0 {
			af, _ := os.OpenFile(f.audit, os.O_WRONLY|os.O_APPEND, 0)
			af.WriteString(`{"v":2,"seq":4,"ts":"2026-`)
			af.Close()
		}
	}
	if n := bytes.Count(readAudit(f.audit), []byte(`"kind":"recovery"`)); n != 1 {
		t.Errorf("%d recovery records after a torn line; want 1", n)
	}
	f.mustVerify(t, exitcode.OK)
}

// TestSIGSYSAttribution: a child that sends itself SIGSYS is recorded as
// seccomp_killed only where aegis applied a seccomp filter, and then with
// the caveat that the signal may have been sent; without --confine it is
// an ordinary death by signal, its pending call unanswered.
func TestSIGSYSAttribution(t *testing.T) {
	self := []string{"sh", "-c", "read line; kill -SYS $$"}
	t.Run("without --confine", func(t *testing.T) {
		f := newFixture(t)
		code, _, stderr := edgeRun(t, callLine, append([]string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--"}, self...)...)
		if code != 128+int(syscall.SIGSYS) {
			t.Fatalf("wrap = exit %d; want %d\n%s", code, 128+int(syscall.SIGSYS), stderr)
		}
		end := f.sessionEnd(t)
		if end.SeccompKilled || end.ExitSignal != "SIGSYS" || end.Detail != supervise.SIGSYSUnfiltered {
			t.Errorf("session_end = seccomp_killed %v, signal %q, detail %q; want false, SIGSYS, %q", end.SeccompKilled, end.ExitSignal, end.Detail, supervise.SIGSYSUnfiltered)
		}
		outcomes := 0
		for _, r := range f.records(t) {
			if o, ok := r.Body.(*record.Outcome); ok {
				outcomes++
				if o.Status != record.StatusUnanswered {
					t.Errorf("outcome status %q; want %q", o.Status, record.StatusUnanswered)
				}
			}
		}
		if outcomes != 1 {
			t.Errorf("%d outcomes; want 1, the call's, unanswered", outcomes)
		}
		f.mustVerify(t, exitcode.OK)
	})
	t.Run("with --confine", func(t *testing.T) {
		if why := kernelCannotConfine(); why != "" {
			t.Skip(why)
		}
		f := newFixture(t)
		code, _, stderr := edgeRun(t, callLine, append([]string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--confine", "--allow-exec-support", "--"}, self...)...)
		if code == exitcode.Confinement {
			t.Fatalf("wrap --confine = exit %d on a kernel that can confine\n%s", code, stderr)
		}
		var applied bool
		for _, r := range f.records(t) {
			if e, ok := r.Body.(*record.Enforcement); ok {
				applied = e.SeccompApplied
			}
		}
		if !applied {
			t.Fatalf("enforcement record: seccomp_applied false on a kernel with seccomp\n%s", stderr)
		}
		if code != 128+int(syscall.SIGSYS) {
			t.Fatalf("wrap --confine = exit %d; want %d\n%s", code, 128+int(syscall.SIGSYS), stderr)
		}
		end := f.sessionEnd(t)
		if !end.SeccompKilled || end.Detail != supervise.SIGSYSFiltered || !strings.Contains(end.Detail, "sent itself") {
			t.Errorf("session_end = seccomp_killed %v, detail %q; want true, %q", end.SeccompKilled, end.Detail, supervise.SIGSYSFiltered)
		}
		f.mustVerify(t, exitcode.OK)
	})
}

// TestPolicyFileEdges: --policy is read whole too: a FIFO with no writer,
// /dev/zero and a directory are refused at once (2) by wrap and by
// policy check, before the audit file is created.
func TestPolicyFileEdges(t *testing.T) {
	f := newFixture(t)
	edges := edgeFiles(t, t.TempDir())
	for name, path := range edges {
		want := "not a regular file"
		if name == "a 2 GiB sparse file" {
			want = "too large"
		}
		code, _, stderr := edgeRun(t, callLine, "wrap", "--policy", path, "--audit", f.audit, "--signing-key", f.key, "--", "cat")
		if code != exitcode.Usage || !strings.Contains(stderr, want) || !strings.Contains(stderr, path) {
			t.Errorf("wrap --policy %s = exit %d, stderr %q; want 2 and %q naming the file", name, code, stderr, want)
		}
		if _, err := os.Stat(f.audit); err == nil {
			t.Fatalf("wrap --policy %s created the audit file", name)
		}
		if code, _, stderr := edgeRun(t, "", "policy", "check", path); code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("policy check %s = exit %d, stderr %q; want an error, %q", name, code, stderr, want)
		}
	}
}
