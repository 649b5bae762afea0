package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
)

// aegisBin is the real aegis binary, built once by TestMain; childBin is
// the server the tests wrap (testdata/child), built beside it.
var aegisBin, childBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aegis-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	aegisBin = filepath.Join(dir, "aegis")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// Every aegis the tests run keeps its cache (prove's and wrap's index of
	// sealed segments) in this run's folder, never the user's; noCache is a
	// cache folder that cannot be made (its parent is a regular file). Go's
	// build cache, which defaults to a folder in the same XDG_CACHE_HOME,
	// stays where it is (GOCACHE), so that what the tests build is cached.
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command(gobin, "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	// Nor the user's configuration and logs: verify without --key pins to
	// the default key's .pub when one exists there, and log and verify
	// with no FILE read the state folder's logs.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	noCache = filepath.Join(dir, "not-a-folder", "cache")
	if err := os.WriteFile(filepath.Join(dir, "not-a-folder"), nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	childBin = filepath.Join(dir, "aegis-test-child")
	for _, b := range []struct{ out, pkg string }{{aegisBin, "."}, {childBin, "./testdata/child"}} {
		build := exec.Command(gobin, "build", "-o", b.out, b.pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b.pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// noCache is an XDG_CACHE_HOME no folder can be made in (TestMain).
var noCache string

// fixture is a key and an audit path in a fresh folder.
type fixture struct {
	dir, key, pub, audit string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, key: filepath.Join(dir, "signing.key"), audit: filepath.Join(dir, "audit.jsonl")}
	// A fresh key, written as aegis keygen writes it (the same functions):
	// the fixture's tests are not about keygen, whose own tests start the
	// binary (script/keygen.txtar, TestFirstHour), and a start of aegis per
	// fixture is most of what a fixture costs.
	key, err := record.GenerateKey()
	if err != nil {
		t.Fatalf("keygen: %v", err)
	}
	if f.pub, err = userfiles.WriteKey(f.key, key, false); err != nil {
		t.Fatalf("keygen: %v", err)
	}
	return f
}

// child returns the argv of the test child (testdata/child) in mode.
func child(mode string) []string {
	return []string{"env", "AEGIS_TEST_CHILD=" + mode, childBin}
}

// wrapCmd returns an aegis wrap command around argv. Its --grace, 5s, is
// what a child that exits on its stdin's EOF may take: a child starting
// cold on a loaded machine can take a large part of a second before it
// reads a byte. Tests of the escalation itself (a child
// that hangs) pass a shorter one in extra.
func (f *fixture) wrapCmd(extra []string, argv ...string) *exec.Cmd {
	args := append([]string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--grace", "5s"}, extra...)
	args = append(append(args, "--"), argv...)
	return exec.Command(aegisBin, args...)
}

// verify runs aegis verify --key and returns its exit code and output.
func (f *fixture) verify(t *testing.T) (int, string) {
	t.Helper()
	cmd := exec.Command(aegisBin, "verify", "--key", "@"+f.key+".pub", f.audit)
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

func (f *fixture) mustVerify(t *testing.T, want int) {
	t.Helper()
	if code, out := f.verify(t); code != want {
		t.Fatalf("aegis verify = exit %d; want %d\n%s", code, want, out)
	}
}

// readAudit returns the content of an audit file (or nothing, if it cannot
// be read): what a live file holds, without the pre-zeroed space at its end
// (journal/prezero.go).
//
// Tests call it often, some every few milliseconds while they wait for a
// record, on files that end in up to a MiB of zeros. Under the race
// detector a fresh buffer of that size (os.ReadFile's) and a byte-by-byte
// trim of the zeros cost tens of milliseconds a call, so the file is read
// into a buffer kept for the next call, the zeros found by the assembly
// IndexByte and Count, and only what precedes them copied out.
func readAudit(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	bp := auditBufs.Get().(*[]byte)
	defer auditBufs.Put(bp)
	buf := (*bp)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	*bp = buf
	return bytes.Clone(trimNULs(buf))
}

var auditBufs = sync.Pool{New: func() any { return new([]byte) }}

// trimNULs is bytes.TrimRight(b, "\x00"): where b's first NUL begins a run
// to its end (the pre-zeroed space), b up to it; otherwise (NULs inside
// what was written) TrimRight itself.
func trimNULs(b []byte) []byte {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return b
	}
	if bytes.Count(b[i:], []byte{0}) == len(b)-i {
		return b[:i]
	}
	return bytes.TrimRight(b, "\x00")
}

// records decodes the audit file.
func (f *fixture) records(t *testing.T) []*record.Record {
	t.Helper()
	data := readAudit(f.audit)
	var d record.Decoder
	var out []*record.Record
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		r, err := d.Decode(line)
		if err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func (f *fixture) kinds(t *testing.T) map[record.Kind]int {
	n := map[record.Kind]int{}
	for _, r := range f.records(t) {
		n[r.Kind]++
	}
	return n
}

func (f *fixture) sessionEnd(t *testing.T) *record.SessionEnd {
	t.Helper()
	recs := f.records(t)
	if len(recs) == 0 {
		t.Fatal("empty audit log")
	}
	e, ok := recs[len(recs)-1].Body.(*record.SessionEnd)
	if !ok {
		t.Fatalf("last record is %v; want session_end", recs[len(recs)-1].Kind)
	}
	return e
}

// runBounded runs cmd with a deadline, killing it if it hangs.
func runBounded(t *testing.T, cmd *exec.Cmd, d time.Duration) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		// Where each process of the tree waits, then a goroutine dump
		// (SIGQUIT) from aegis before it is killed: a hang in a CI run
		// says where it is.
		tree := processTree(cmd.Process.Pid)
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		var stderr string
		if b, ok := cmd.Stderr.(*bytes.Buffer); ok {
			stderr = b.String()
		}
		var stdin string
		if r, ok := cmd.Stdin.(*strings.Reader); ok && r.Size() <= 4096 {
			in := make([]byte, r.Size())
			r.ReadAt(in, 0)
			stdin = string(in)
		}
		t.Fatalf("%v hung for %v\nstdin: %q\nprocesses:\n%s\nstderr:\n%s", cmd.Args, d, stdin, tree, stderr)
	}
}

// processTree lists pid and its descendants with their state, the kernel
// function each waits in and its threads' count.
func processTree(pid int) string {
	var b strings.Builder
	var walk func(pid int, depth int)
	walk = func(pid int, depth int) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		fmt.Fprintf(&b, "%s%s wchan=%s threads=%d\n", strings.Repeat("  ", depth), strings.TrimSpace(string(stat)), wchan, len(tasks))
		for _, task := range tasks {
			children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
			for _, c := range strings.Fields(string(children)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n, depth+1)
				}
			}
		}
	}
	walk(pid, 0)
	return b.String()
}

func TestVerifyExitCodes(t *testing.T) {
	f := newFixture(t)
	cmd := f.wrapCmd(nil, child("echo")...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n")
	if err := cmd.Run(); err != nil {
		t.Fatalf("wrap: %v", err)
	}
	f.mustVerify(t, 0)
	other := newFixture(t)
	if code, out := exec.Command(aegisBin, "verify", "--key", other.pub, f.audit), ""; true {
		o, _ := code.CombinedOutput()
		out = string(o)
		if code.ProcessState.ExitCode() != 1 || !strings.Contains(out, "not the pinned key") {
			t.Errorf("verify pinned to another key = exit %d; want 1\n%s", code.ProcessState.ExitCode(), out)
		}
	}
	data := readAudit(f.audit)
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := filepath.Join(f.dir, "cut.jsonl")
	os.WriteFile(cut, bytes.Join(lines[:len(lines)-2], nil), 0o600)
	tampered := filepath.Join(f.dir, "tampered.jsonl")
	os.WriteFile(tampered, bytes.Replace(data, []byte(`"tool":"x"`), []byte(`"tool":"y"`), 1), 0o600)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"valid unpinned", []string{f.audit}, 0},
		{"valid pinned inline", []string{"--key", f.pub, f.audit}, 0},
		{"cut tail", []string{"--key", f.pub, cut}, 3},
		{"tampered", []string{"--key", f.pub, tampered}, 1},
		{"missing file", []string{filepath.Join(f.dir, "nope")}, 2},
		{"bad key", []string{"--key", "ed25519:nope", f.audit}, 2},
		{"no file", nil, 2},
		{"worst of several", []string{f.audit, cut, tampered}, 1},
		{"json", []string{"--json", f.audit}, 0},
	}
	for _, tt := range tests {
		cmd := exec.Command(aegisBin, append([]string{"verify"}, tt.args...)...)
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != tt.want {
			t.Errorf("verify %s: exit %d; want %d\n%s", tt.name, got, tt.want, out)
		}
	}
}

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(aegisBin, "demo", "--dir", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runBounded(t, cmd, 60*time.Second)
	if cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("aegis demo = exit %d\n%s", cmd.ProcessState.ExitCode(), out.String())
	}
	for _, want := range []string{"VALID (pinned", "tool_error", "rpc_error", "[batch 2/2]", "slow"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("aegis demo output lacks %q:\n%s", want, out.String())
		}
	}
	// In the order things happen: wrap says where it records, then the
	// client's transcript, then wrap's audit head.
	rec, first, head := strings.Index(out.String(), "aegis: recording "), strings.Index(out.String(), "→ initialize"), strings.Index(out.String(), "aegis: audit head ")
	if rec < 0 || first < 0 || head < 0 || !(rec < first && first < head) {
		t.Errorf("aegis demo: recording line at %d, first client line at %d, audit head at %d; want them in that order\n%s", rec, first, head, out.String())
	}
}
