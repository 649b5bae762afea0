package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// conformanceEntry is the official MCP conformance suite's command line
// program, pinned in package.json (0.1.13: the last release that runs on
// Node 20).
const conformanceEntry = "node_modules/@modelcontextprotocol/conformance/dist/index.js"

// everythingServerPkg is the Go SDK's conformance server, the server the
// SDK's own conformance CI runs the suite against. It is built from the
// module cache at the go.mod's version of the SDK, so the test needs the
// Go module proxy at most, never a clone.
const everythingServerPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// TestConformanceThroughListen runs the official conformance suite's
// server mode (every scenario, the pending ones too) twice at once: against
// the Go SDK's everything-server over its own Streamable HTTP, and against
// `aegis wrap --listen` in front of the same server spawned over stdio, one
// child per MCP session. Every check that passes directly must pass
// through aegis; dns-rebinding-protection must pass through aegis; and the
// pending server-sse-polling scenario, whose warnings are about the
// transport (a priming event first on each POST stream, the retry field),
// must end without a warning through aegis. The log aegis wrote must
// verify and record the suite's tools/call.
//
// The suite's server mode sends no Authorization header (it has no option
// for one), and dns-rebinding-protection requires a plain initialize from
// localhost to be answered 2xx, so aegis runs with --auth none, which it
// allows on loopback only.
func TestConformanceThroughListen(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	suite := conformanceArgv(t)
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	server := filepath.Join(dir, "everything-server")
	goBuild(t, server, everythingServerPkg)
	key := filepath.Join(dir, "key")
	keygen(t, aegis, key)
	audit := filepath.Join(dir, "audit.jsonl")

	// A bound, not a budget: on a quiet machine both runs end in a few
	// seconds; on one loaded by other work, Node alone starts slowly.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	directURL := startEverythingHTTP(ctx, t, server)
	front := startListen(ctx, t, aegis, "--auth", "none", "--audit", audit, "--signing-key", key, "--", server)

	var direct, through suiteRun
	var wg sync.WaitGroup
	wg.Go(func() {
		direct = runSuite(ctx, suite, directURL, filepath.Join(dir, "results-direct"), "--suite", "all")
	})
	wg.Go(func() {
		through = runSuite(ctx, suite, front.url, filepath.Join(dir, "results-aegis"), "--suite", "all")
	})
	wg.Wait()

	if direct.err != nil {
		t.Fatalf("the suite against the everything-server directly: %v\n%s", direct.err, direct.output)
	}
	if through.err != nil {
		t.Fatalf("the suite through aegis wrap --listen: %v\n%s\naegis stderr:\n%s", through.err, through.output, front.stderr.String())
	}
	if n := direct.count("SUCCESS"); n < 40 {
		t.Fatalf("directly, %d checks pass; want at least 40 (the baseline the comparison stands on)\n%s", n, direct.output)
	}
	for _, name := range slices.Sorted(maps.Keys(direct.scenarios)) {
		want := direct.scenarios[name]
		got, ok := through.scenarios[name]
		if !ok {
			t.Errorf("scenario %s through aegis = no results; want results, as directly", name)
			continue
		}
		for _, c := range want {
			if c.Status != "SUCCESS" {
				continue
			}
			if g := got.find(c.ID); g == nil || g.Status != "SUCCESS" {
				t.Errorf("scenario %s, check %s through aegis = %s; want SUCCESS, as directly", name, c.ID, g.describe())
			}
		}
		for _, g := range got {
			if g.Status == "FAILURE" {
				t.Errorf("scenario %s, check %s through aegis = %s; want no FAILURE", name, g.ID, g.describe())
			}
		}
	}
	for _, name := range []string{"dns-rebinding-protection", "server-sse-polling"} {
		if _, ok := through.scenarios[name]; !ok {
			t.Errorf("scenario %s did not run through aegis", name)
		}
	}
	for _, id := range []string{"localhost-host-rebinding-rejected", "localhost-host-valid-accepted"} {
		if c := through.scenarios["dns-rebinding-protection"].find(id); c == nil || c.Status != "SUCCESS" {
			t.Errorf("dns-rebinding-protection, check %s through aegis = %s; want SUCCESS", id, c.describe())
		}
	}
	for _, c := range through.scenarios["server-sse-polling"] {
		if c.Status == "WARNING" || c.Status == "FAILURE" {
			t.Errorf("server-sse-polling, check %s through aegis = %s; want no warning", c.ID, c.describe())
		}
	}
	for _, id := range []string{"server-sse-priming-event", "server-sse-retry-field"} {
		if c := through.scenarios["server-sse-polling"].find(id); c == nil || c.Status != "SUCCESS" {
			t.Errorf("server-sse-polling, check %s through aegis = %s; want SUCCESS", id, c.describe())
		}
	}
	if t.Failed() {
		t.Logf("the suite through aegis:\n%s\naegis stderr:\n%s", through.output, front.stderr.String())
	}

	front.stop(t)
	if out, err := exec.Command(aegis, "verify", "--key", "@"+key+".pub", audit).CombinedOutput(); err != nil {
		t.Fatalf("aegis verify --key @%s.pub %s = %v; want exit 0\n%s", key, audit, err, out)
	}
	checkConformanceLog(t, audit, direct.calls)
}

// conformanceArgv is the suite's command, or the test fails telling how
// to install it.
func conformanceArgv(t *testing.T) []string {
	t.Helper()
	entry, err := filepath.Abs(conformanceEntry)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the conformance suite is not installed (%v).\nRun `npm ci` in interop/ first.", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): the conformance suite needs Node.js 20 or later", err)
	}
	return []string{node, entry}
}

// goBuild builds pkg into out with the module's go.mod and go.sum.
func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// startEverythingHTTP starts the everything-server on its own Streamable
// HTTP (stateful, as the SDK's conformance CI runs it for 2025-11-25) on
// a free loopback port, and returns its endpoint once it accepts
// connections.
func startEverythingHTTP(ctx context.Context, t *testing.T, server string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var stderr syncBuffer
	cmd := exec.CommandContext(ctx, server, "-http="+addr, "-stateless=false")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the everything-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// The server says it listens before it does; a connection says so
	// for certain.
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if ctx.Err() != nil {
			t.Fatalf("the everything-server does not accept connections on %s: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(delay)
	}
}

// listenFront is a running `aegis wrap --listen`.
type listenFront struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan error
}

// startListen starts `aegis wrap --listen 127.0.0.1:0 ARGS…` and returns
// once it has said where it serves.
func startListen(ctx context.Context, t *testing.T, aegis string, args ...string) *listenFront {
	t.Helper()
	f := &listenFront{stderr: new(syncBuffer), done: make(chan error, 1)}
	f.cmd = exec.CommandContext(ctx, aegis, append([]string{"wrap", "--listen", "127.0.0.1:0"}, args...)...)
	pr, pw := io.Pipe()
	f.cmd.Stderr = pw
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("start aegis wrap --listen: %v", err)
	}
	go func() {
		f.done <- f.cmd.Wait()
		pw.Close()
	}()
	t.Cleanup(func() {
		if f.cmd.ProcessState == nil {
			f.cmd.Process.Kill()
			<-f.done
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f.stderr, line)
			if rest, ok := strings.CutPrefix(line, "aegis: serving MCP at "); ok {
				url, _, _ := strings.Cut(rest, " ")
				select {
				case urls <- url:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case f.url = <-urls:
		return f
	case err := <-f.done:
		f.done <- err
		t.Fatalf("aegis wrap --listen exited (%v) before serving:\n%s", err, f.stderr.String())
	case <-ctx.Done():
		t.Fatalf("aegis wrap --listen did not say where it serves:\n%s", f.stderr.String())
	}
	return nil
}

// stop ends the front as a user does, with SIGTERM, and requires exit 0:
// every session ended and the log closed.
func (f *listenFront) stop(t *testing.T) {
	t.Helper()
	f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("aegis wrap --listen after SIGTERM: %v; want exit 0\n%s", err, f.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("aegis wrap --listen still runs 20 s after SIGTERM:\n%s", f.stderr.String())
	}
}

// A check is one entry of a scenario's checks.json.
type check struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

func (c *check) describe() string {
	if c == nil {
		return "missing"
	}
	s := c.Status
	if c.ErrorMessage != "" {
		s += ": " + c.ErrorMessage
	}
	if len(c.Details) > 0 {
		s += " " + clip(string(c.Details))
	}
	return s
}

type checks []check

func (cs checks) find(id string) *check {
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i]
		}
	}
	return nil
}

// suiteRun is one run of the suite: each scenario's checks.
type suiteRun struct {
	scenarios map[string]checks
	calls     []string // the tools the suite called, from its requests
	output    string
	err       error // the suite could not run or wrote no results
}

func (r *suiteRun) count(status string) int {
	n := 0
	for _, cs := range r.scenarios {
		for _, c := range cs {
			if c.Status == status {
				n++
			}
		}
	}
	return n
}

// resultDir is the folder the suite writes a scenario's checks.json to:
// server-<scenario>-<timestamp>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// runSuite runs the scenarios that args select (e.g. --suite all) against
// url, writing results to out, and reads every result out holds. Its exit
// status is not read: the checks are compared one by one.
func runSuite(ctx context.Context, suite []string, url, out string, args ...string) suiteRun {
	var r suiteRun
	argv := append(slices.Clone(suite[1:]), "server")
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, suite[0], append(argv, "--url", url, "--output-dir", out)...)
	cmd.Dir = filepath.Dir(out)
	b, _ := cmd.CombinedOutput()
	r.output = string(b)
	entries, err := os.ReadDir(out)
	if err != nil {
		r.err = err
		return r
	}
	r.scenarios = map[string]checks{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if errors.Is(err, fs.ErrNotExist) {
			// The suite stopped the scenario with an error before it
			// wrote a check (its output says which): the scenario failed.
			r.scenarios[m[1]] = checks{{ID: "checks.json", Status: "FAILURE", ErrorMessage: "the suite wrote no checks: the scenario stopped with an error (see the suite's output)"}}
			continue
		}
		if err != nil {
			r.err = err
			return r
		}
		var cs checks
		if err := json.Unmarshal(data, &cs); err != nil {
			r.err = fmt.Errorf("%s/checks.json: %w", e.Name(), err)
			return r
		}
		r.scenarios[m[1]] = cs
		if strings.HasPrefix(m[1], "tools-call-") {
			r.calls = append(r.calls, m[1])
		}
	}
	if len(r.scenarios) == 0 {
		r.err = fmt.Errorf("no scenario results in %s", out)
	}
	return r
}

// checkConformanceLog holds the log to what the suite did: a session per
// MCP session, each ended and saying who called; an intent and an outcome
// for every tools/call, tools among them that the tools-call scenarios
// call.
func checkConformanceLog(t *testing.T, path string, scenarios []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	tools := map[string]bool{}
	for line := range bytes.Lines(data) {
		var r struct {
			auditRecord
			Transport string `json:"transport"`
			Peer      string `json:"peer"`
			Principal string `json:"principal"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %.200q: %v", line, err)
		}
		kinds[r.Kind]++
		switch r.Kind {
		case "intent":
			if r.Tool != nil {
				tools[*r.Tool] = true
			}
		case "session_start":
			// Who called: every session over HTTP, from loopback, with
			// no principal (--auth none).
			if r.Transport != "http" || !strings.HasPrefix(r.Peer, "127.0.0.1:") || r.Principal != "none" {
				t.Errorf("session_start %d: transport %q, peer %q, principal %q; want http, 127.0.0.1:PORT, none", r.Seq, r.Transport, r.Peer, r.Principal)
			}
		}
	}
	if kinds["session_start"] < len(scenarios) || kinds["session_start"] != kinds["session_end"] {
		t.Errorf("audit log: %d session_start, %d session_end; want as many ends as starts, and a session for each of the %d tools-call scenarios at least", kinds["session_start"], kinds["session_end"], len(scenarios))
	}
	if kinds["intent"] < len(scenarios) || kinds["intent"] != kinds["outcome"] {
		t.Errorf("audit log: %d intents, %d outcomes; want one outcome per intent, at least one per tools-call scenario (%d)", kinds["intent"], kinds["outcome"], len(scenarios))
	}
	for _, tool := range []string{"test_simple_text", "test_sampling", "test_elicitation", "test_tool_with_progress", "test_reconnection"} {
		if !tools[tool] {
			t.Errorf("audit log: no intent for %s, which the suite called (intents for %v)", tool, slices.Sorted(maps.Keys(tools)))
		}
	}
}
