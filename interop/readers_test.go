package interop

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A line may read as different messages to different
// peers. JSON allows a bare "\r" as white space, so {"x":<CR>{call}<CR>} is
// one JSON value to a reader that ends lines at "\n", and three lines, the
// middle one a call, to one that also ends them at "\r" (Python's text I/O
// in universal-newline mode, which the Python SDK's stdio server reads
// with; Node's readline; Java's BufferedReader.readLine; .NET ReadLine).
// Other readings: the first value of a line with the rest ignored
// (Jackson's default), a stream of values across lines (Go's json.Decoder,
// the Go SDK), a batch handler that recurses into nested arrays.
//
// TestReaders drives the real aegis binary with real pipes in front of one
// real child per reading, each recording every tools/call it executes, and
// holds the audit log to what the child did:
//
//   - pass-through (no --policy): every call a child executed has an intent
//     with its id and tool before the line reached the child, and a line
//     that some reading finds a call in that the line's reading as one JSON
//     value does not is recorded as an anomaly with its digest;
//   - policy: a child executed only calls whose intent is allowed, and
//     nothing at all from such a line, which is recorded as an anomaly with
//     forwarded false.
//
// In pass-through mode aegis relays every byte, so what each child executes
// there is its reader's behaviour alone; the table states it (exec), which
// keeps the children honest.

// readerPolicy denies the tool every hidden call names and allows the one
// the visible calls name.
const readerPolicy = `version: 1
default: allow
rules:
  - tool: echo
    action: allow
  - tool: "delete_*"
    action: deny
`

// A reader is one child server and how a session with it is driven.
type reader struct {
	name string
	// argv runs the child; exec is the file it records executions in.
	argv func(t *testing.T, exec string) []string
	// perLine: a bad line ends the reader (a stream decoder stops at the
	// first syntax error, the Go SDK's at an undecodable message), so
	// each line gets a session of its own.
	perLine bool
	// syncPing: the reader runs calls concurrently and drops those not yet
	// started at stdin's EOF (the Go SDK), so after each line a ping is
	// sent and its answer (or the end of the session) awaited: a call read
	// before the ping has started by then, and runs to its end before the
	// child exits. The answer of a call still running at EOF may be
	// dropped (the Go SDK cancels it), so its outcome may be unanswered.
	// The answer to initialize is awaited too.
	syncPing bool
}

func readersDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "readers"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH (%v): the reader tests need it", name, err)
	}
	return p
}

// python3 is the Python interpreter the readers and clients run on: the
// one `python3` on PATH starts, asked once for its own path
// (sys.executable). Where python3 on PATH is a version manager's shim
// (pyenv's is a bash script that runs bash, readlink and pyenv's version
// lookups before it starts Python), each start through the shim costs
// several times the Python it starts, and chooses the same interpreter
// every time.
var python3 struct {
	once sync.Once
	path string
	err  error
}

// python3Path returns the interpreter python3 on PATH runs, failing the
// test (never skipping it) when there is none.
func python3Path(t *testing.T) string {
	t.Helper()
	python3.once.Do(func() {
		shim, err := exec.LookPath("python3")
		if err != nil {
			python3.err = err
			return
		}
		out, err := exec.Command(shim, "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			python3.err = fmt.Errorf("%s -c 'import sys; print(sys.executable)': %w", shim, err)
			return
		}
		python3.path = strings.TrimSpace(string(out))
		if !filepath.IsAbs(python3.path) {
			python3.err = fmt.Errorf("%s says its interpreter is %q, not an absolute path", shim, python3.path)
		}
	})
	if python3.err != nil {
		t.Fatalf("python3 is not on PATH or does not run (%v): the reader tests need it", python3.err)
	}
	return python3.path
}

// goReader is the Go readers' program (testdata/readers/goreader), built
// once per test binary without the race detector: it runs as a child
// over a hundred times, and the race detector would guard none of
// aegis's code in it, only add to each start.
var goReader sharedBuild

func goReaderPath(t *testing.T) string {
	t.Helper()
	return goReader.get(t, "goreader", func(goBin, dir string) *exec.Cmd {
		return exec.Command(goBin, "build", "-o", filepath.Join(dir, "goreader"), "./testdata/readers/goreader")
	})
}

// goReaderChild runs the Go reader name ($AEGIS_READER_CHILD).
func goReaderChild(name string) func(*testing.T, string) []string {
	return func(t *testing.T, execPath string) []string {
		return []string{"env", "READER_EXEC=" + execPath, "AEGIS_READER_CHILD=" + name, goReaderPath(t)}
	}
}

// execRecord is a line of $READER_EXEC: a tools/call a reader executed
// (testdata/readers/goreader says how each reader writes them).
type execRecord struct {
	Reader string          `json:"reader"`
	ID     json.RawMessage `json:"id"`
	Tool   string          `json:"tool"`
}

func (x execRecord) String() string { return string(x.ID) + " " + x.Tool }

var readers = []reader{
	{name: "python", argv: func(t *testing.T, execPath string) []string {
		return []string{"env", "READER_EXEC=" + execPath, python3Path(t), filepath.Join(readersDir(t), "reader.py")}
	}},
	{name: "node-readline", argv: func(t *testing.T, execPath string) []string {
		return []string{"env", "READER_EXEC=" + execPath, lookPath(t, "node"), filepath.Join(readersDir(t), "readline.mjs")}
	}},
	{name: "java", argv: func(t *testing.T, execPath string) []string {
		return []string{"env", "READER_EXEC=" + execPath, lookPath(t, "java"), filepath.Join(readersDir(t), "Reader.java")}
	}},
	{name: "ts-sdk", argv: func(t *testing.T, execPath string) []string {
		if _, err := os.Stat("node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
			t.Fatalf("the TypeScript SDK is not installed (%v).\nRun `npm ci` in interop/ first.", err)
		}
		return []string{"env", "READER_EXEC=" + execPath, lookPath(t, "node"), filepath.Join(readersDir(t), "tssdk_server.mjs")}
	}},
	{name: "go-scanner", argv: goReaderChild("go-scanner")},
	{name: "go-recursive", argv: goReaderChild("go-recursive")},
	{name: "go-decoder", argv: goReaderChild("go-decoder"), perLine: true},
	{name: "go-sdk", argv: goReaderChild("go-sdk"), perLine: true, syncPing: true},
}

// rcall is a tools/call with id and tool; its arguments carry the id too
// (the Go SDK tells a tool its arguments, not its id).
func rcall(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"id":%d}}}`, id, tool, id)
}

// A readerLine is one client line (its '\n' not included).
type readerLine struct {
	name string
	line string
	// ids are the calls some reading finds in the line.
	ids []int
	// hidden: some reading finds a call that the line's reading as one
	// JSON value (a message or a batch of messages) does not.
	hidden bool
	// control: every reader executes the line's one call, with or without
	// the policy (it calls echo).
	control bool
	// exec is what each reader executes in pass-through mode, by reader
	// name; a reader not named executes nothing.
	exec map[string][]int
	// maybe: calls a reader may or may not execute, by a race inside it
	// (the Go SDK drops a call it has read but not yet started when its
	// stream decoder fails on what follows).
	maybe map[string][]int
}

// Reader groups for the exec tables.
var (
	crReaders   = []string{"python", "node-readline", "java"}
	allReaders  = []string{"python", "node-readline", "java", "ts-sdk", "go-scanner", "go-recursive", "go-decoder", "go-sdk"}
	lfBatchable = []string{"go-scanner", "go-recursive", "go-decoder"} // read a batch from a line that is one JSON value
)

func execBy(ids []int, groups ...[]string) map[string][]int {
	m := map[string][]int{}
	for _, g := range groups {
		for _, r := range g {
			m[r] = append(m[r], ids...)
		}
	}
	return m
}

func merge(ms ...map[string][]int) map[string][]int {
	out := map[string][]int{}
	for _, m := range ms {
		for r, ids := range m {
			out[r] = append(out[r], ids...)
		}
	}
	return out
}

func readerLines() []readerLine {
	const cr = "\r"
	return []readerLine{
		{name: "clean", line: rcall(101, "echo"), ids: []int{101}, control: true,
			exec: execBy([]int{101}, allReaders)},
		{name: "crlf", line: rcall(102, "echo") + cr, ids: []int{102}, control: true,
			exec: execBy([]int{102}, allReaders)},
		// A call as a member value between two CRs.
		{name: "cr-member", line: `{"x":` + cr + rcall(103, "delete_all") + cr + `}`, ids: []int{103}, hidden: true,
			exec: execBy([]int{103}, crReaders)},
		{name: "cr-member-deep", line: `{"a":{"b":` + cr + rcall(104, "delete_all") + cr + `}}`, ids: []int{104}, hidden: true,
			exec: execBy([]int{104}, crReaders)},
		// A notification every reader of the whole line ignores.
		{name: "cr-in-notification-params", line: `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + cr + rcall(105, "delete_all") + cr + `}}`, ids: []int{105}, hidden: true,
			exec: execBy([]int{105}, crReaders)},
		// An allowed call whose arguments hide a denied one.
		{name: "cr-in-call-arguments", line: `{"jsonrpc":"2.0","id":106,"method":"tools/call","params":{"name":"echo","arguments":{"id":106,"a":` + cr + rcall(107, "delete_all") + cr + `}}}`, ids: []int{106, 107}, hidden: true,
			exec: merge(execBy([]int{107}, crReaders), execBy([]int{106}, lfBatchable, []string{"ts-sdk", "go-sdk"}))},
		{name: "cr-before-value", line: cr + rcall(108, "echo"), ids: []int{108},
			exec: execBy([]int{108}, allReaders)},
		{name: "crcrlf-after-value", line: rcall(109, "echo") + cr + cr, ids: []int{109},
			exec: execBy([]int{109}, allReaders)},
		// A second call after a CR: two values to a stream decoder, two
		// lines to a CR reader, not JSON to the others. The second is denied.
		{name: "second-call-after-cr", line: rcall(110, "echo") + cr + rcall(111, "delete_all"), ids: []int{110, 111}, hidden: true,
			exec: execBy([]int{110, 111}, crReaders, []string{"go-decoder", "go-sdk"})},
		{name: "cr-in-batch-element", line: `[{"x":` + cr + rcall(112, "delete_all") + cr + `}]`, ids: []int{112}, hidden: true,
			exec: execBy([]int{112}, crReaders)},
		// The same call either way: a batch of it, or it alone.
		{name: "cr-around-batch-element", line: `[` + cr + rcall(113, "delete_all") + cr + `]`, ids: []int{113},
			exec: execBy([]int{113}, crReaders, lfBatchable)},
		{name: "cr-batch-in-member", line: `{"x":` + cr + `[` + rcall(114, "delete_all") + `]` + cr + `}`, ids: []int{114}, hidden: true,
			exec: execBy([]int{114}, crReaders)},
		{name: "cr-duplicate-name", line: `{"x":` + cr + `{"jsonrpc":"2.0","id":115,"method":"tools/call","params":{"name":"echo","arguments":{"id":115},"name":"delete_all"}}` + cr + `}`, ids: []int{115}, hidden: true,
			exec: execBy([]int{115}, crReaders)},
		{name: "cr-case-variant-name", line: `{"x":` + cr + `{"jsonrpc":"2.0","id":116,"method":"tools/call","params":{"Name":"delete_all","name":"echo","arguments":{"id":116}}}` + cr + `}`, ids: []int{116}, hidden: true,
			exec: execBy([]int{116}, crReaders)},
		// "Method": a call to a reader that splits at CR and matches keys
		// case-insensitively (none of these children: the Go ones do not
		// split at CR).
		{name: "cr-case-variant-method", line: `{"x":` + cr + `{"jsonrpc":"2.0","id":117,"Method":"tools/call","params":{"name":"delete_all","arguments":{"id":117}}}` + cr + `}`, ids: []int{117}, hidden: true},
		{name: "nested-array", line: `[[` + rcall(118, "delete_all") + `]]`, ids: []int{118}, hidden: true,
			exec: execBy([]int{118}, []string{"go-recursive"})},
		{name: "nested-array-3", line: `[[[` + rcall(119, "delete_all") + `]]]`, ids: []int{119}, hidden: true,
			exec: execBy([]int{119}, []string{"go-recursive"})},
		{name: "nested-array-after-number", line: `[1,[` + rcall(120, "delete_all") + `]]`, ids: []int{120}, hidden: true,
			exec: execBy([]int{120}, []string{"go-recursive"})},
		{name: "nested-array-beside-call", line: `[` + rcall(121, "echo") + `,[` + rcall(122, "delete_all") + `]]`, ids: []int{121, 122}, hidden: true,
			exec: merge(execBy([]int{121}, crReaders, lfBatchable), execBy([]int{122}, []string{"go-recursive"}))},
		// Two values on one line: the first is all Jackson reads.
		{name: "two-values", line: rcall(123, "delete_all") + rcall(124, "echo"), ids: []int{123, 124}, hidden: true,
			exec: merge(execBy([]int{123}, []string{"java"}), execBy([]int{123, 124}, []string{"go-decoder"}))},
		{name: "trailing-garbage", line: rcall(125, "delete_all") + ` trailing-garbage`, ids: []int{125}, hidden: true,
			exec: execBy([]int{125}, []string{"java", "go-decoder"})},
		{name: "call-then-cr-garbage", line: rcall(126, "delete_all") + cr + `garbage`, ids: []int{126}, hidden: true,
			exec: execBy([]int{126}, crReaders, []string{"go-decoder"}), maybe: execBy([]int{126}, []string{"go-sdk"})},
		{name: "crcr-member", line: `{"x":` + cr + cr + rcall(127, "delete_all") + cr + cr + `}`, ids: []int{127}, hidden: true,
			exec: execBy([]int{127}, crReaders)},
		{name: "two-cr-members", line: `{"x":` + cr + rcall(128, "echo") + cr + `,"y":` + cr + rcall(129, "delete_all") + cr + `}`, ids: []int{128, 129}, hidden: true,
			exec: execBy([]int{128, 129}, crReaders)},
		// A raw CR inside a string: not JSON to any of these readers, a
		// call to a decoder that allows control characters in strings.
		{name: "cr-in-string", line: `{"jsonrpc":"2.0","id":130,"method":"tools/call","params":{"name":"delete_all","arguments":{"id":130,"t":"a` + cr + `b"}}}`, ids: []int{130}, hidden: true},
		// No reader here ends a line at U+2028 or NEL.
		{name: "u2028-member", line: `{"x":` + "\u2028" + rcall(131, "delete_all") + "\u2028" + `}`, ids: []int{131}},
		{name: "nel-member", line: `{"x":` + "\u0085" + rcall(132, "delete_all") + "\u0085" + `}`, ids: []int{132}},
	}
}

// auditRec is the part of an audit record these tests read.
type auditRec struct {
	Seq            int64           `json:"seq"`
	Kind           string          `json:"kind"`
	Call           json.RawMessage `json:"call"`
	Tool           *string         `json:"tool"`
	RequestDigest  string          `json:"request_digest"`
	ResponseDigest *string         `json:"response_digest"`
	Malformed      string          `json:"malformed"`
	Intent         *int64          `json:"intent"`
	Forwarded      *bool           `json:"forwarded"`
	Reason         json.RawMessage `json:"reason"`
	Policy         struct {
		Verdict string `json:"verdict"`
	} `json:"policy"`
	Capability struct {
		Status string `json:"status"`
	} `json:"capability"`
	Execution struct {
		Status string `json:"status"`
	} `json:"execution"`
}

func (r *auditRec) String() string {
	tool := "null"
	if r.Tool != nil {
		tool = strconv.Quote(*r.Tool)
	}
	switch r.Kind {
	case "intent":
		return fmt.Sprintf("intent %d call %s tool %s verdict %s refused %v malformed %q", r.Seq, r.Call, tool, r.Policy.Verdict, r.Capability.Status == "denied", r.Malformed)
	case "anomaly":
		fwd := "?"
		if r.Forwarded != nil {
			fwd = strconv.FormatBool(*r.Forwarded)
		}
		return fmt.Sprintf("anomaly %d %s forwarded %s", r.Seq, r.RequestDigest, fwd)
	case "outcome":
		return fmt.Sprintf("outcome %d call %s status %s", r.Seq, r.Call, r.Execution.Status)
	}
	return fmt.Sprintf("%s %d", r.Kind, r.Seq)
}

func readAuditRecs(t *testing.T, path string) []*auditRec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	data = bytes.TrimRight(data, "\x00") // the pre-zeroed space of a live file
	var out []*auditRec
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		r := new(auditRec)
		if err := json.Unmarshal(line, r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// digestOf is the digest aegis records for a line: SHA-256 of its bytes
// without the '\n'.
func digestOf(line string) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(line, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sameID reports whether two JSON ids are the same value, as aegis matches
// them: numbers by exact decimal value, strings by decoded value.
func sameID(a, b json.RawMessage) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	switch x := x.(type) {
	case json.Number:
		y, ok := y.(json.Number)
		if !ok {
			return false
		}
		rx, ok1 := new(big.Rat).SetString(string(x))
		ry, ok2 := new(big.Rat).SetString(string(y))
		return ok1 && ok2 && rx.Cmp(ry) == 0
	case string:
		y, ok := y.(string)
		return ok && x == y
	}
	return false
}

func intID(id int) json.RawMessage { return json.RawMessage(strconv.Itoa(id)) }

// sessionRun is what one aegis wrap session left behind.
type sessionRun struct {
	raw    []byte // what the child read, where it keeps a copy (go-scanner)
	execs  []execRecord
	recs   []*auditRec
	verify int // exit code of aegis verify --key
	stderr string
}

// readersEnv is the aegis binary, a key and the policy file, made once per
// test.
type readersEnv struct {
	aegis, key, policy string
}

func newReadersEnv(t *testing.T) *readersEnv {
	t.Helper()
	dir := t.TempDir()
	e := &readersEnv{aegis: buildAegis(t, dir), key: filepath.Join(dir, "key"), policy: filepath.Join(dir, "policy.yaml")}
	keygen(t, e.aegis, e.key)
	if err := os.WriteFile(e.policy, []byte(readerPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// The lines every session starts with.
const (
	readerInit        = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"aegis-readers","version":"1.0.0"}}}`
	readerInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// runReaderSession writes lines through aegis wrap to r's child, then
// closes stdin and waits for aegis to exit: the child has read everything
// by then, and has exited.
func (e *readersEnv) runReaderSession(t *testing.T, r reader, policy bool, lines []string) *sessionRun {
	t.Helper()
	dir := t.TempDir()
	audit, execPath := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "exec.jsonl")
	// Every reader exits at its stdin's EOF, so the grace period only
	// bounds one that has not started reading yet: java compiles
	// Reader.java at start, which takes over 10 s on a loaded machine.
	args := []string{"wrap", "--audit", audit, "--signing-key", e.key, "--durability", "none", "--grace", "60s"}
	if policy {
		args = append(args, "--policy", e.policy)
	}
	cmd := exec.Command(e.aegis, append(append(args, "--"), r.argv(t, execPath)...)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever comes back, line by line; closed at EOF.
	answers := make(chan string, 64)
	go func() {
		defer close(answers)
		br := bufio.NewReader(stdout)
		for {
			l, err := br.ReadString('\n')
			if l != "" {
				answers <- l
			}
			if err != nil {
				return
			}
		}
	}()
	guard := time.NewTimer(sessionTimeout)
	defer guard.Stop()
	eof := false
	// awaitSync waits for the answer to the ping with id sync, or for the
	// end of the session. The guard only turns a hang into a failure.
	awaitSync := func(sync string) {
		for !eof {
			select {
			case l, ok := <-answers:
				if !ok {
					eof = true
					return
				}
				if strings.Contains(l, sync) {
					return
				}
			case <-guard.C:
				cmd.Process.Kill()
				t.Fatalf("%s: no answer to %s (stderr: %s)", r.name, sync, stderr.String())
			}
		}
	}
	write := func(l string) {
		// A write fails once the child has given up and aegis has exited;
		// what the child did before that is what the test looks at.
		io.WriteString(stdin, l+"\n")
	}
	write(readerInit)
	if r.syncPing {
		// The Go SDK reads ahead of its handlers: until initialize is
		// answered it has not learnt the protocol version that makes it
		// refuse batches.
		awaitSync(`"init"`)
	}
	write(readerInitialized)
	for i, l := range lines {
		write(l)
		if r.syncPing {
			sync := fmt.Sprintf(`"sync-%d"`, i)
			write(`{"jsonrpc":"2.0","id":` + sync + `,"method":"ping"}`)
			awaitSync(sync)
		}
	}
	stdin.Close()
	for !eof {
		select {
		case _, ok := <-answers:
			eof = !ok
		case <-guard.C:
			cmd.Process.Kill()
			t.Fatalf("%s: aegis wrap did not finish (stderr: %s)", r.name, stderr.String())
		}
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-guard.C:
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: aegis wrap did not exit (stderr: %s)", r.name, stderr.String())
	}
	run := &sessionRun{recs: readAuditRecs(t, audit), stderr: stderr.String()}
	vcmd := exec.Command(e.aegis, "verify", "--key", "@"+e.key+".pub", audit)
	vout, _ := vcmd.CombinedOutput()
	run.verify = vcmd.ProcessState.ExitCode()
	if run.verify != 0 {
		t.Errorf("%s: aegis verify --key … = exit %d; want 0 (a finished session)\n%s", r.name, run.verify, vout)
	}
	raw, err := os.ReadFile(execPath + ".raw")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	run.raw = raw
	data, err := os.ReadFile(execPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var x execRecord
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("%s: exec record %q: %v", r.name, l, err)
		}
		run.execs = append(run.execs, x)
	}
	return run
}

// TestReaders: every line of readerLines, through aegis wrap, to every
// reader, without a policy (pass-through) and with readerPolicy (policy).
// Subtests are mode/reader/line; e.g. -run 'TestReaders/pass-through/python/cr-member$'.
func TestReaders(t *testing.T) {
	lines := readerLines()
	seen := map[int]string{}
	for _, l := range lines {
		for _, id := range l.ids {
			if prev, dup := seen[id]; dup {
				t.Fatalf("id %d is in lines %s and %s; ids must be unique", id, prev, l.name)
			}
			seen[id] = l.name
		}
	}
	env := newReadersEnv(t)
	for _, mode := range []string{"pass-through", "policy"} {
		t.Run(mode, func(t *testing.T) {
			for _, r := range readers {
				t.Run(r.name, func(t *testing.T) {
					t.Parallel() // the sessions wait on processes more than they run
					runs := make([]*sessionRun, len(lines))
					if r.perLine {
						for i, l := range lines {
							runs[i] = env.runReaderSession(t, r, mode == "policy", []string{l.line})
						}
					} else {
						var all []string
						for _, l := range lines {
							all = append(all, l.line)
						}
						run := env.runReaderSession(t, r, mode == "policy", all)
						for i := range runs {
							runs[i] = run
						}
						if run.raw != nil {
							checkRelayed(t, mode == "policy", lines, run.raw)
						}
					}
					for i, l := range lines {
						t.Run(l.name, func(t *testing.T) {
							checkReaderLine(t, r, mode == "policy", l, runs[i])
						})
					}
				})
			}
		})
	}
}

// checkReaderLine holds one line's session to what the line asks.
func checkReaderLine(t *testing.T, rd reader, policy bool, l readerLine, run *sessionRun) {
	readerName := rd.name
	var executed []execRecord
	for _, x := range run.execs {
		for _, id := range l.ids {
			if sameID(x.ID, intID(id)) {
				executed = append(executed, x)
			}
		}
	}
	var intents, anomalies []*auditRec
	digest := digestOf(l.line)
	for _, r := range run.recs {
		switch r.Kind {
		case "intent":
			for _, id := range l.ids {
				if sameID(r.Call, intID(id)) {
					intents = append(intents, r)
				}
			}
		case "anomaly":
			if r.RequestDigest == digest {
				anomalies = append(anomalies, r)
			}
		}
	}
	ctx := func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "\n  line %q\n  executed by %s: %v\n  records:", l.line, readerName, executed)
		for _, r := range slices.Concat(intents, anomalies) {
			b.WriteString("\n    " + r.String())
		}
		return b.String()
	}

	// What the reader executes without a policy is its reading alone, in
	// any order: a server may run the requests of one line concurrently
	// (the Go SDK's does), finishing the second first.
	if !policy {
		var got []int
		for _, x := range executed {
			n, _ := strconv.Atoi(string(x.ID))
			got = append(got, n)
		}
		sameCalls := func(a, b []int) bool {
			return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
		}
		if maybe := l.maybe[readerName]; sameCalls(got, maybe) {
			got = nil
		}
		if want := l.exec[readerName]; !sameCalls(got, want) {
			t.Errorf("%s executed %v; want %v (the reader's own reading of the line)%s", readerName, got, want, ctx())
		}
	}

	// Every call executed has an intent with its id and tool (a malformed
	// one may leave the tool null), recorded before the line reached the
	// child, with the line's digest; under the policy, allowed.
	for _, x := range executed {
		var match *auditRec
		for _, in := range intents {
			toolOK := (in.Tool != nil && *in.Tool == x.Tool) || (in.Tool == nil && in.Malformed != "")
			if sameID(in.Call, x.ID) && toolOK {
				match = in
				break
			}
		}
		switch {
		case match == nil:
			t.Errorf("%s executed call %s (%s): intent = none; want an intent with that id and tool%s", readerName, x.ID, x.Tool, ctx())
		case match.RequestDigest != digest:
			t.Errorf("intent of call %s: request_digest = %s; want the line's, %s%s", x.ID, match.RequestDigest, digest, ctx())
		case policy && (match.Policy.Verdict != "allowed" || match.Capability.Status == "denied"):
			t.Errorf("%s executed call %s (%s) under the policy: intent verdict = %s (refused %v); want allowed%s", readerName, x.ID, x.Tool, match.Policy.Verdict, match.Capability.Status == "denied", ctx())
		}
	}

	if l.control {
		if len(executed) != 1 {
			t.Errorf("%s executed the control call %d times; want once%s", readerName, len(executed), ctx())
		}
		if len(intents) != 1 {
			t.Errorf("control call: %d intents; want 1%s", len(intents), ctx())
		}
		want := "pass-through"
		if policy {
			want = "allowed"
		}
		for _, in := range intents {
			if in.Policy.Verdict != want {
				t.Errorf("control call: verdict = %s; want %s%s", in.Policy.Verdict, want, ctx())
			}
			if o := outcomeFor(run.recs, in.Seq); !rd.syncPing && (o == nil || o.Execution.Status != "ok") {
				t.Errorf("control call: outcome = %v; want ok%s", o, ctx())
			}
		}
		return
	}

	if l.hidden {
		if len(anomalies) == 0 {
			t.Errorf("line with a call only some readings find: anomaly with its digest = none; want one%s", ctx())
		}
		if policy {
			if len(executed) > 0 {
				t.Errorf("under the policy %s executed %d call(s) of a line the readings disagree on; want none%s", readerName, len(executed), ctx())
			}
			for _, a := range anomalies {
				if a.Forwarded == nil || *a.Forwarded {
					t.Errorf("anomaly %d under the policy: forwarded = %v; want false%s", a.Seq, a.Forwarded, ctx())
				}
			}
		}
	} else if len(executed) > 0 && len(intents)+len(anomalies) == 0 {
		t.Errorf("the line is not recorded; want an intent or an anomaly%s", ctx())
	}
}

// checkRelayed holds what a child read to what the client wrote: without
// a policy, every byte, unchanged (byte identity holds for any input);
// with it, none of the lines the readings disagree on.
func checkRelayed(t *testing.T, policy bool, lines []readerLine, raw []byte) {
	t.Helper()
	if !policy {
		want := readerInit + "\n" + readerInitialized + "\n"
		for _, l := range lines {
			want += l.line + "\n"
		}
		if string(raw) != want {
			i := 0
			for i < len(raw) && i < len(want) && raw[i] == want[i] {
				i++
			}
			t.Errorf("the child read %d bytes; want the client's %d, unchanged (first difference at byte %d)", len(raw), len(want), i)
		}
		return
	}
	for _, l := range lines {
		if l.hidden && bytes.Contains(raw, []byte(l.line+"\n")) {
			t.Errorf("under the policy the child read line %s, %q; want it dropped (the readings disagree on it)", l.name, l.line)
		}
	}
}

func outcomeFor(recs []*auditRec, seq int64) *auditRec {
	for _, r := range recs {
		if r.Kind == "outcome" && r.Intent != nil && *r.Intent == seq {
			return r
		}
	}
	return nil
}
