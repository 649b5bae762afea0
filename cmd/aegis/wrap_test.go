package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// streamGen builds random client or server streams: frames of every shape
// the wire can carry, and the number of tools/call requests among them.
type streamGen struct {
	r         *rand.Rand
	calls     int
	anomalies int
	id        int
}

func (g *streamGen) frame() string {
	g.id++
	id := strconv.Itoa(g.id)
	switch g.r.IntN(14) {
	case 0, 1, 2:
		g.calls++
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo ` + id + `"}}}`
	case 3:
		g.calls++
		return `{"jsonrpc":"2.0","id":"s-` + id + `","method":"tools\/call","params":{"name":"add"}}`
	case 4:
		g.calls += 2
		return `[{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b` + id + `","method":"tools/call","params":{"name":"b"}}]`
	case 5:
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`
	case 6:
		return `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	case 7:
		return ""
	case 8:
		g.anomalies++
		return "not json at all \x00\xff"
	case 9:
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\r"
	case 10:
		g.calls++
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"big","arguments":{"blob":"` + strings.Repeat("y", g.r.IntN(3<<20)) + `"}}}`
	case 11:
		return "   \t "
	case 12:
		g.anomalies++
		return `{"a":1} {"b":2}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("z", g.r.IntN(5000)) + `"}]}}`
}

// stream returns n frames joined by '\n', sometimes without the last one.
func (g *streamGen) stream(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		b.WriteString(g.frame())
		if i < n-1 || g.r.IntN(2) == 0 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// splitWriter writes p in random pieces, to exercise every split of frames
// across reads.
func splitWrite(w io.Writer, p []byte, r *rand.Rand) error {
	for len(p) > 0 {
		n := 1 + r.IntN(min(len(p), []int{1, 7, 300, 70000}[r.IntN(4)]))
		if _, err := w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// TestByteIdentity is relay's byte-identity property through the real
// binary and real pipes: random streams arrive byte for byte on the other
// side, both ways, and every tools/call the client sent has exactly one
// intent.
func TestByteIdentity(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 42))
			f := newFixture(t)
			up := &streamGen{r: r}
			down := &streamGen{r: r}
			in := up.stream(5 + r.IntN(60))
			out := down.stream(5 + r.IntN(60))
			inPath, outPath := filepath.Join(f.dir, "in"), filepath.Join(f.dir, "out")
			os.WriteFile(outPath, out, 0o600)
			cmd := f.wrapCmd([]string{"--durability", []string{"strict", "reply", "none"}[seed%3]}, child("copy")...)
			cmd.Env = append(os.Environ(), "AEGIS_TEST_IN="+inPath, "AEGIS_TEST_OUT="+outPath)
			stdin, _ := cmd.StdinPipe()
			var got bytes.Buffer
			cmd.Stdout = &got
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			go func() {
				splitWrite(stdin, in, r)
				stdin.Close()
			}()
			runBounded(t, cmd, 60*time.Second)
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("wrap exit %d\n%s", code, stderr.String())
			}
			childIn, _ := os.ReadFile(inPath)
			if !bytes.Equal(childIn, in) {
				t.Errorf("child read %d bytes; client wrote %d (first difference at %d)", len(childIn), len(in), firstDiff(childIn, in))
			}
			if !bytes.Equal(got.Bytes(), out) {
				t.Errorf("client read %d bytes; child wrote %d (first difference at %d)", got.Len(), len(out), firstDiff(got.Bytes(), out))
			}
			kinds := f.kinds(t)
			if n := kinds[record.KindIntent]; n != up.calls {
				t.Errorf("%d intents; the client sent %d tools/call", n, up.calls)
			}
			if n := kinds[record.KindAnomaly]; n != up.anomalies {
				t.Errorf("%d anomalies; the client sent %d lines that are not one JSON value", n, up.anomalies)
			}
			f.mustVerify(t, 0)
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// session drives a wrapped child as a line-oriented client.
type session struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *syncBuffer
}

// syncBuffer is a bytes.Buffer that the process's stderr copier and the
// test may use at the same time (a failing test reads it while wrap runs).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (f *fixture) start(t *testing.T, extra []string, env []string, argv ...string) *session {
	t.Helper()
	cmd := f.wrapCmd(extra, argv...)
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	s := &session{t: t, cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20), stderr: &syncBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("write to wrap: %v", err)
	}
}

func (s *session) recv() string {
	s.t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := s.stdout.ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			s.t.Fatalf("read from wrap: %v (stderr: %s)", r.err, s.stderr)
		}
		return strings.TrimSuffix(r.line, "\n")
	case <-time.After(30 * time.Second):
		s.t.Fatalf("no answer from wrap in 30s (stderr: %s)", s.stderr)
	}
	return ""
}

// wait waits for wrap to exit, bounded, and returns its exit code.
func (s *session) wait(d time.Duration) int {
	s.t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		// SIGQUIT makes the Go runtime print every goroutine's stack to
		// stderr before exiting: the failure then says where wrap waits.
		s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		s.t.Fatalf("wrap did not exit within %v (stderr: %s)", d, s.stderr)
	}
	return s.cmd.ProcessState.ExitCode()
}

func call(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

// TestOrdering checks from the child's and the client's side: the child
// finds a call's intent in the audit file when the call reaches it, and the
// client finds the outcome there when the response reaches it.
func TestOrdering(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"strict", "reply", "none"} {
		t.Run(level, func(t *testing.T) {
			f := newFixture(t)
			s := f.start(t, []string{"--durability", level}, []string{"AEGIS_TEST_AUDIT=" + f.audit}, child("check-intent")...)
			for i, id := range []string{"1", `"one"`, "1.0", "2", "2"} {
				s.send(call(id, "t"+strconv.Itoa(i)))
				resp := s.recv()
				if !strings.Contains(resp, `"text":"ok"`) {
					t.Fatalf("call %s: the child did not find its intent in the audit file: %s", id, resp)
				}
				audit := readAudit(f.audit)
				if got := bytes.Count(audit, []byte(`"kind":"outcome"`)); got != i+1 {
					t.Fatalf("after response %d the audit holds %d outcomes; want %d", i+1, got, i+1)
				}
			}
			s.stdin.Close()
			if code := s.wait(10 * time.Second); code != 0 {
				t.Fatalf("wrap exit %d; want 0 (%s)", code, s.stderr)
			}
			if !strings.Contains(s.stderr.String(), "audit head ") {
				t.Errorf("wrap did not print the audit head on exit: %s", s.stderr)
			}
			f.mustVerify(t, 0)
			end := f.sessionEnd(t)
			if end.Reason != record.EndClientEOF || end.Counts.Intents != 5 || end.Counts.Outcomes != 5 {
				t.Errorf("session_end = %+v; want client_eof, 5 intents, 5 outcomes", end)
			}
		})
	}
}

// shortGrace is the --grace of tests whose child never exits by itself:
// they wait it out, once or twice.
var shortGrace = []string{"--grace", "300ms"}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		mode       string
		env        []string
		send       []string
		closeStdin bool
		signal     syscall.Signal
		wantExit   int
		wantReason string
		wantStatus string // the outcome of the first call
	}{
		{"child dies mid-call", "die-on-call", nil, []string{call("1", "x")}, false, 0, 3, record.EndChildExit, record.StatusUnanswered},
		{"child exit code passed on", "echo", []string{"AEGIS_TEST_EXIT=7"}, []string{call("1", "x")}, true, 0, 7, record.EndClientEOF, record.StatusOK},
		{"child never answers, SIGTERM", "hang", nil, []string{call("1", "x")}, true, 0, 128 + 15, record.EndClientEOF, record.StatusUnanswered},
		{"child ignores SIGTERM, SIGKILL", "hang-noterm", nil, []string{call("1", "x")}, true, 0, 128 + 9, record.EndClientEOF, record.StatusUnanswered},
		{"signal forwarded", "hang", nil, []string{call("1", "x")}, false, syscall.SIGTERM, 128 + 15, record.EndSignal, record.StatusUnanswered},
		{"client dies", "echo", nil, []string{call("1", "x"), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"na`}, true, 0, 0, record.EndClientEOF, record.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			s := f.start(t, shortGrace, tt.env, child(tt.mode)...)
			if tt.mode == "hang-noterm" {
				s.recv() // the child ignores SIGTERM from now on
			}
			for _, l := range tt.send {
				s.send(l)
			}
			if tt.wantStatus == record.StatusOK {
				s.recv()
			}
			if tt.signal != 0 {
				waitForRecords(t, f, record.KindIntent, 1)
				s.cmd.Process.Signal(tt.signal)
			}
			if tt.closeStdin {
				s.stdin.Close()
			}
			if code := s.wait(20 * time.Second); code != tt.wantExit {
				t.Errorf("wrap exit %d; want %d (%s)", code, tt.wantExit, s.stderr)
			}
			f.mustVerify(t, 0)
			end := f.sessionEnd(t)
			if end.Reason != tt.wantReason {
				t.Errorf("session_end reason %q; want %q", end.Reason, tt.wantReason)
			}
			for _, r := range f.records(t) {
				if o, ok := r.Body.(*record.Outcome); ok {
					if o.Status != tt.wantStatus {
						t.Errorf("first outcome %s (%s); want %s", o.Status, o.Reason, tt.wantStatus)
					}
					break
				}
			}
		})
	}
}

func waitForRecords(t *testing.T, f *fixture, k record.Kind, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		data := readAudit(f.audit)
		if bytes.Count(data, []byte(`"kind":"`+k.String()+`"`)) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %d %v records after 10s", n, k)
}

func TestJunkAndBigResponse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.start(t, nil, nil, child("junk")...)
	if got := s.recv(); got != "this is not json" {
		t.Fatalf("first line %q; want the child's junk relayed", got)
	}
	if got := s.recv(); got != "\x00\x01\x02 {{{" {
		t.Fatalf("second line %q; want the child's junk relayed", got)
	}
	s.send(call("1", "x"))
	if got := s.recv(); !strings.Contains(got, `"id":1`) {
		t.Fatalf("answer %q", got)
	}
	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)

	f = newFixture(t)
	s = f.start(t, nil, nil, child("big")...)
	s.send(call("7", "big"))
	if got := s.recv(); len(got) < 20<<20 || !strings.HasSuffix(got, "}]}}") {
		t.Fatalf("20 MiB answer arrived as %d bytes", len(got))
	}
	s.stdin.Close()
	if code := s.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	if n := f.kinds(t)[record.KindOutcome]; n != 1 {
		t.Errorf("%d outcomes; want 1", n)
	}
}

func TestFrameTooLarge(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"client", "child"} {
		t.Run(dir, func(t *testing.T) {
			f := newFixture(t)
			mode := "echo"
			if dir == "child" {
				mode = "big"
			}
			s := f.start(t, []string{"--max-frame", "1MiB"}, []string{"AEGIS_TEST_LOG=" + filepath.Join(f.dir, "child.log")}, child(mode)...)
			if dir == "client" {
				// wrap ends the session mid-frame: the rest of the write fails.
				go io.WriteString(s.stdin, call("1", "huge")+strings.Repeat(" ", 2<<20)+"\n")
			} else {
				s.send(call("1", "big"))
			}
			if code := s.wait(20 * time.Second); code != 65 {
				t.Fatalf("exit %d; want 65 (%s)", code, s.stderr)
			}
			f.mustVerify(t, 0)
			if end := f.sessionEnd(t); end.Reason != record.EndFrameTooLarge {
				t.Errorf("session_end reason %q; want frame_too_large", end.Reason)
			}
			if dir == "client" {
				if log, _ := os.ReadFile(filepath.Join(f.dir, "child.log")); len(log) > 0 {
					t.Errorf("the child received %d bytes of an oversized frame", len(log))
				}
			}
		})
	}
}

func TestWrapErrors(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name     string
		args     []string
		wantExit int
		wantErr  string
	}{
		{"no child", []string{"wrap", "--audit", f.audit, "--signing-key", f.key}, 2, "no child command"},
		{"no child after --", []string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--"}, 2, "no child command"},
		{"no key at the default path", []string{"wrap", "--audit", f.audit, "--", "cat"}, 2, "make it once with 'aegis keygen'"},
		{"misspelt flag", []string{"wrap", "--audti", f.audit, "--signing-key", f.key, "--", "cat"}, 2, "flag provided but not defined"},
		{"missing key", []string{"wrap", "--audit", f.audit, "--signing-key", f.key + ".nope", "--", "cat"}, 2, "no such file"},
		{"not a key", []string{"wrap", "--audit", f.audit, "--signing-key", f.key + ".pub", "--", "cat"}, 2, "bad key"},
		{"audit folder cannot be made", []string{"wrap", "--audit", "/proc/aegis/audit.jsonl", "--signing-key", f.key, "--", "cat"}, 2, "folder for the audit log"},
		{"audit cannot be opened", []string{"wrap", "--audit", "/proc/version/audit.jsonl", "--signing-key", f.key, "--", "cat"}, 2, "audit"},
		{"bad durability", []string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--durability", "fast", "--", "cat"}, 2, "durability"},
		{"child --help is the child's", []string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--", "true", "--help"}, 0, ""},
		{"cannot start", []string{"wrap", "--audit", f.audit, "--signing-key", f.key, "--", "/nonexistent/server"}, 127, "cannot start"},
	}
	for _, tt := range tests {
		cmd := exec.Command(aegisBin, tt.args...)
		cmd.Env = freshHome(t)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Stdin = strings.NewReader("")
		runBounded(t, cmd, 20*time.Second)
		if code := cmd.ProcessState.ExitCode(); code != tt.wantExit || !strings.Contains(stderr.String(), tt.wantErr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tt.name, code, stderr.String(), tt.wantExit, tt.wantErr)
		}
		if tt.wantErr != "" && tt.wantExit != 127 && !strings.HasPrefix(stderr.String(), "aegis") {
			t.Errorf("%s: stderr %q lacks the aegis prefix", tt.name, stderr.String())
		}
	}
	// The child that could not start is recorded too.
	if end := f.sessionEnd(t); end.Reason != record.EndChildStartFailed || end.ExitCode != 127 {
		t.Errorf("session_end %+v; want child_start_failed, 127", end)
	}
	f.mustVerify(t, 0)
}

func TestLogCommand(t *testing.T) {
	f := newFixture(t)
	cmd := f.wrapCmd(nil, child("echo")...)
	cmd.Stdin = strings.NewReader(call("1", "read_file") + "\n" + call(`"a"`, "write_file") + "\n" +
		`[` + call("2", "read_file") + `,` + call("3", "delete") + "]\n")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(aegisBin, "log", f.audit).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TOOL", "read_file", "write_file", `"a"`, "delete [batch 2/2]", "ok", "pass-through"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("aegis log lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(aegisBin, "log", "--json", "--tool", "read_*", f.audit).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("log --json --tool read_* = %d lines; want 2:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var row struct {
			Tool   string `json:"tool"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil || row.Tool != "read_file" || row.Status != "ok" {
			t.Errorf("log --json line %q: %v", l, err)
		}
	}
	out, _ = exec.Command(aegisBin, "log", "--json", "--since", "2000-01-01T00:00:00Z", f.audit).Output()
	if n := strings.Count(string(out), "\n"); n != 4 {
		t.Errorf("log --since 2000 = %d calls; want 4", n)
	}
	out, _ = exec.Command(aegisBin, "log", "--json", "--since", "1ns", f.audit).Output()
	if len(out) != 0 {
		t.Errorf("log --since 1ns = %q; want nothing", out)
	}
}

// TestServerRequestSameID: a server→client request that carries the id of
// a call in flight (server-everything sends roots/list with id 0) is not
// its response; the response that follows is.
func TestServerRequestSameID(t *testing.T) {
	f := newFixture(t)
	s := f.start(t, nil, nil, child("roots")...)
	s.send(call("0", "x"))
	req := s.recv()
	if !strings.Contains(req, `"method":"roots/list"`) {
		t.Fatalf("first line %q; want the server's roots/list request", req)
	}
	if n := f.kinds(t)[record.KindOutcome]; n != 0 {
		t.Fatalf("%d outcomes after a server→client request with the call's id; want 0", n)
	}
	s.send(`{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`)
	resp := s.recv()
	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	for _, r := range f.records(t) {
		if o, ok := r.Body.(*record.Outcome); ok {
			if o.Status != record.StatusOK || o.ResponseDigest != sha256.Sum256([]byte(resp)) {
				t.Errorf("outcome %s with digest %s; want ok and the digest of %q", o.Status, o.ResponseDigest, resp)
			}
		}
	}
}

// TestDuplicateIDsInFlight: calls with the same id in flight are answered
// in order; ids match by value (1 and 1.0), not by spelling.
func TestDuplicateIDsInFlight(t *testing.T) {
	f := newFixture(t)
	s := f.start(t, nil, nil, child("echo")...)
	s.send(call("5", "a") + "\n" + call("5", "b") + "\n" + call("5.0", "c"))
	for range 3 {
		s.recv()
	}
	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	var intents []uint64
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.Intent:
			intents = append(intents, r.Seq)
		case *record.Outcome:
			if len(intents) == 0 || b.Intent != intents[0] || b.Status != record.StatusOK {
				t.Fatalf("outcome for intent %d (%s); want the oldest in flight, %v", b.Intent, b.Status, intents)
			}
			intents = intents[1:]
		}
	}
}

// TestPendingCap: more calls in flight than --max-pending: the oldest are
// recorded unanswered (evicted), never dropped, and memory stays bounded.
func TestPendingCap(t *testing.T) {
	f := newFixture(t)
	s := f.start(t, append([]string{"--max-pending", "2"}, shortGrace...), nil, child("hang")...)
	for i := range 5 {
		s.send(call(strconv.Itoa(i), "x"))
	}
	waitForRecords(t, f, record.KindOutcome, 3)
	s.stdin.Close()
	if code := s.wait(20 * time.Second); code != 128+15 {
		t.Fatalf("exit %d; want 143 (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	evicted := 0
	for _, r := range f.records(t) {
		if o, ok := r.Body.(*record.Outcome); ok && strings.HasPrefix(o.Reason, "evicted") {
			evicted++
		}
	}
	if end := f.sessionEnd(t); evicted != 3 || end.Counts.Outcomes != 5 || end.Counts.Unanswered != 5 {
		t.Errorf("%d evicted, counts %+v; want 3 evicted of 5 unanswered", evicted, end.Counts)
	}
}

// TestAuditIOFailure: when the audit file cannot grow (a file size limit:
// EFBIG) wrap fails closed: it forwards nothing more and exits 74, and
// what it wrote still verifies (incomplete, never invalid).
func TestAuditIOFailure(t *testing.T) {
	f := newFixture(t)
	args := append([]string{"-c", `ulimit -f 6; exec "$@"`, "sh", aegisBin, "wrap", "--audit", f.audit, "--signing-key", f.key, "--grace", "300ms", "--"}, child("echo")...)
	cmd := exec.Command("bash", args...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stdout)
	answered := 0
	for i := range 200 {
		if _, err := io.WriteString(stdin, call(strconv.Itoa(i), "x")+"\n"); err != nil {
			break
		}
		if _, err := br.ReadString('\n'); err != nil {
			break
		}
		answered++
	}
	stdin.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("wrap did not exit after the audit failure")
	}
	if code := cmd.ProcessState.ExitCode(); code != 74 || !strings.Contains(stderr.String(), "file too large") {
		t.Fatalf("exit %d, stderr %q; want 74 naming the error", code, stderr.String())
	}
	if answered == 0 || answered == 200 {
		t.Fatalf("%d calls answered; want the failure mid-session", answered)
	}
	if code, out := f.verify(t); code != 3 {
		t.Errorf("verify after an audit failure = %d; want 3 (incomplete)\n%s", code, out)
	}
	// The size limit tore the last write: count the outcomes of whole lines.
	data := readAudit(f.audit)
	outcomes := bytes.Count(data[:bytes.LastIndexByte(data, '\n')+1], []byte(`"kind":"outcome"`))
	if outcomes != answered {
		t.Errorf("%d outcomes in the log; the client got %d answers: each answer must have its outcome", outcomes, answered)
	}
}

// TestLogFollow: aegis log -f prints calls of a live log as they complete.
func TestLogFollow(t *testing.T) {
	f := newFixture(t)
	s := f.start(t, nil, nil, child("echo")...)
	s.send(call("1", "first"))
	s.recv()
	lines, stop := followLog(t, f.audit)
	defer stop()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("log -f ended")
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("log -f printed nothing in 10s")
		}
		return ""
	}
	if l := next(); !strings.Contains(l, `"tool":"first"`) {
		t.Fatalf("log -f first line %q; want the call already in the log", l)
	}
	s.send(call("2", "second"))
	s.recv()
	if l := next(); !strings.Contains(l, `"tool":"second"`) || !strings.Contains(l, `"status":"ok"`) {
		t.Fatalf("log -f line %q; want the live call", l)
	}
	s.stdin.Close()
	s.wait(10 * time.Second)
}
