package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConformance2026ThroughListen runs the conformance suite at
// --spec-version 2026-07-28 (every scenario of the revision: stateless
// requests, server/discover, caching, the header checks, multi round-trip
// input_required results), and every extension scenario (the Tasks
// extension's tasks-*, with --force, which runs a scenario off the
// revision's timeline), twice at once: against the TypeScript SDK v2's
// conformance everything-server (with the Tasks extension's fixtures,
// tasks.ts) over its own Streamable HTTP, and against
// `aegis wrap --listen --auth none` in front of the same server over
// stdio. Every check that passes directly must pass through aegis, and no
// check may fail through aegis that did not fail directly. The log must
// verify, and record the suite's tool calls: the multi round-trip
// scenarios' first requests answered input_required, and their retries
// linked as rounds to the outcomes they answer.
func TestConformance2026ThroughListen(t *testing.T) {
	t.Parallel() // the suite waits on polls and timeouts more than it runs
	node, suite := conformance2026Argv(t)
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	keygen(t, aegis, key)
	audit := filepath.Join(dir, "audit.jsonl")

	// A bound, not a budget: on a quiet machine both runs end within a
	// minute; on one loaded by other work they have taken five.
	ctx, cancel := context.WithTimeout(context.Background(), 480*time.Second)
	defer cancel()

	extensions := extensionScenarios(ctx, t, suite)
	directURL := startConformanceV2HTTP(ctx, t, node)
	front := startListen(ctx, t, aegis, "--auth", "none", "--audit", audit, "--signing-key", key, "--",
		node, "--import", tsxLoader(t), filepath.Join(conformanceV2Dir, "stdio.ts"))

	var direct, through suiteRun
	var wg sync.WaitGroup
	wg.Go(func() { direct = runSuite2026(ctx, suite, directURL, filepath.Join(dir, "results-direct"), extensions) })
	wg.Go(func() { through = runSuite2026(ctx, suite, front.url, filepath.Join(dir, "results-aegis"), extensions) })
	wg.Wait()

	if direct.err != nil {
		t.Fatalf("the suite against the everything-server directly: %v\n%s", direct.err, direct.output)
	}
	if through.err != nil {
		t.Fatalf("the suite through aegis wrap --listen: %v\n%s\naegis stderr:\n%s", through.err, through.output, front.stderr.String())
	}
	if n := direct.count("SUCCESS"); n < 190 {
		t.Fatalf("directly, %d checks pass; want at least 190 (the baseline the comparison stands on)\n%s", n, direct.output)
	}
	for name, cs := range direct.scenarios {
		for _, c := range cs {
			if strings.HasPrefix(name, "tasks-") && c.Status == "FAILURE" {
				t.Errorf("directly, scenario %s, check %s = %s; want the Tasks fixtures (testdata/conformance-v2/tasks.ts) to pass", name, c.ID, c.describe())
			}
		}
	}
	mrtr := 0
	for name := range direct.scenarios {
		if strings.HasPrefix(name, "input-required-result-") {
			mrtr++
		}
	}
	if mrtr < 13 {
		t.Errorf("directly, %d input-required-result-* scenarios ran; want at least 13", mrtr)
	}
	required := []string{"http-header-validation", "http-custom-header-server-validation", "caching", "server-stateless", "dns-rebinding-protection"}
	for _, name := range append(required, extensions...) {
		if _, ok := direct.scenarios[name]; !ok {
			t.Errorf("scenario %s did not run directly", name)
		}
		if _, ok := through.scenarios[name]; !ok {
			t.Errorf("scenario %s did not run through aegis", name)
		}
	}
	compareRuns(t, direct, through)
	t.Logf("checks that pass:\n%s", summary(direct, through))
	if t.Failed() {
		t.Logf("the suite through aegis:\n%s\naegis stderr:\n%s", through.output, front.stderr.String())
	}

	front.stop(t)
	if out, err := exec.Command(aegis, "verify", "--key", "@"+key+".pub", audit).CombinedOutput(); err != nil {
		t.Fatalf("aegis verify --key @%s.pub %s = %v; want exit 0\n%s", key, audit, err, out)
	}
	checkConformance2026Log(t, audit)
}

// compareRuns requires of the run through aegis every check that passed
// directly, and no failure the direct run did not have. A scenario may
// hold several checks of one id (wire-schema-valid, one per message), so
// each id's statuses are counted: through aegis, as many successes as
// directly and no more failures.
func compareRuns(t *testing.T, direct, through suiteRun) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(direct.scenarios)) {
		want := direct.scenarios[name]
		got, ok := through.scenarios[name]
		if !ok {
			t.Errorf("scenario %s through aegis = no results; want results, as directly", name)
			continue
		}
		ids := map[string]bool{}
		for _, c := range slices.Concat(want, got) {
			ids[c.ID] = true
		}
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			w, g := want.tally(id), got.tally(id)
			if g["SUCCESS"] < w["SUCCESS"] || g["FAILURE"] > w["FAILURE"] {
				t.Errorf("scenario %s, check %s through aegis = %s; directly %v", name, id, got.describeAll(id), w)
			}
		}
	}
}

// tally counts the statuses of the checks with id.
func (cs checks) tally(id string) map[string]int {
	n := map[string]int{}
	for _, c := range cs {
		if c.ID == id {
			n[c.Status]++
		}
	}
	return n
}

// describeAll describes every check with id: the first that did not
// pass, else the first.
func (cs checks) describeAll(id string) string {
	var first *check
	for i := range cs {
		if cs[i].ID != id {
			continue
		}
		if first == nil || first.Status == "SUCCESS" {
			first = &cs[i]
		}
	}
	return fmt.Sprintf("%v, %s", cs.tally(id), first.describe())
}

// summary is one line per scenario: how many checks passed and failed
// directly and through aegis.
func summary(direct, through suiteRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-50s %-16s %s\n", "scenario", "direct pass/all", "through aegis pass/all")
	for _, name := range slices.Sorted(maps.Keys(direct.scenarios)) {
		d, g := direct.scenarios[name], through.scenarios[name]
		fmt.Fprintf(&b, "%-50s %-16s %s\n", name, d.passed(), g.passed())
	}
	fmt.Fprintf(&b, "%-50s %-16d %d\n", "total passed", direct.count("SUCCESS"), through.count("SUCCESS"))
	return b.String()
}

func (cs checks) passed() string {
	n := 0
	for _, c := range cs {
		if c.Status == "SUCCESS" {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(cs))
}

// extensionLine is a line of `conformance list --server` naming an
// extension scenario.
var extensionLine = regexp.MustCompile(`^\s*- (\S+) \[extension\]\s*$`)

// extensionScenarios lists the suite's extension scenarios (the Tasks
// extension's tasks-*, and any other), which --spec-version leaves out.
func extensionScenarios(ctx context.Context, t *testing.T, suite []string) []string {
	t.Helper()
	out, err := exec.CommandContext(ctx, suite[0], append(suite[1:], "list", "--server")...).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --server: %v\n%s", err, out)
	}
	var names []string
	tasks := 0
	for line := range strings.Lines(string(out)) {
		if m := extensionLine.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
			if strings.HasPrefix(m[1], "tasks-") {
				tasks++
			}
		}
	}
	if tasks == 0 {
		t.Fatalf("conformance list --server names no tasks-* extension scenario:\n%s", out)
	}
	return names
}

// startConformanceV2HTTP starts the TypeScript SDK v2's conformance
// everything-server on its own Streamable HTTP (both revisions on one
// endpoint, as upstream serves it) on a free loopback port, and returns
// its endpoint once it accepts connections.
func startConformanceV2HTTP(ctx context.Context, t *testing.T, node string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	var stderr syncBuffer
	cmd := exec.CommandContext(ctx, node, "--import", tsxLoader(t), filepath.Join(conformanceV2Dir, "http.ts"))
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the conformance server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", port)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if ctx.Err() != nil {
			t.Fatalf("the conformance server does not accept connections on %s: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(delay)
	}
}

// runSuite2026 runs every scenario of the 2026-07-28 revision, then the
// extension scenarios, a few at once (they mostly wait: on polls, and on
// timeouts where a server lacks a fixture), each into its own folder
// under out.
func runSuite2026(ctx context.Context, suite []string, url, out string, extensions []string) suiteRun {
	r := runSuite(ctx, suite, url, out, "--suite", "all", "--spec-version", "2026-07-28")
	if r.err != nil {
		return r
	}
	runs := make([]suiteRun, len(extensions))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, name := range extensions {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			runs[i] = runSuite(ctx, suite, url, filepath.Join(out, name), "--scenario", name, "--force")
		})
	}
	wg.Wait()
	for i, name := range extensions {
		e := runs[i]
		r.output += e.output
		if e.err != nil {
			r.err = fmt.Errorf("scenario %s: %w", name, e.err)
			return r
		}
		cs, ok := e.scenarios[name]
		if !ok {
			r.err = fmt.Errorf("scenario %s wrote no results", name)
			return r
		}
		r.scenarios[name] = cs
	}
	return r
}

// checkConformance2026Log holds the log to what the suite did over the
// 2026-07-28 revision: every session ended and says who called; an
// outcome for every intent; the multi round-trip tools called, their first
// requests answered input_required and at least one retry linked to the
// outcome it answers, each intent naming the revision its request
// declared; the tasks the Tasks scenarios made, their ends of every kind,
// their input rounds and cancels.
func checkConformance2026Log(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	tools := map[string]bool{}
	statuses := map[string]int{}
	taskOutcomes := map[int64]bool{} // intents whose outcome has status task
	taskEvents := map[string]int{}   // task records by event, ends by event and status
	var taskIntents []int64
	rounds, revisions := 0, 0
	for line := range bytes.Lines(data) {
		var r struct {
			auditRecord
			Transport string          `json:"transport"`
			Peer      string          `json:"peer"`
			Principal string          `json:"principal"`
			Revision  json.RawMessage `json:"revision"`
			Round     *struct {
				Of *int64 `json:"of"`
				By string `json:"by"`
				N  int    `json:"n"`
			} `json:"round"`
			Event string `json:"event"`
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
			if string(r.Revision) == `"2026-07-28"` {
				revisions++
			}
			if r.Round != nil && r.Round.Of != nil && r.Round.N >= 2 {
				rounds++
			}
		case "outcome":
			statuses[r.Exec.Status]++
			if r.Exec.Status == "task" && r.Intent != nil {
				taskOutcomes[*r.Intent] = true
			}
		case "task":
			taskEvents[r.Event]++
			if r.Event == "end" {
				taskEvents["end "+r.Exec.Status]++
			}
			if r.Intent != nil {
				taskIntents = append(taskIntents, *r.Intent)
			}
		case "session_start":
			if r.Transport != "http" || !strings.HasPrefix(r.Peer, "127.0.0.1:") || r.Principal != "none" {
				t.Errorf("session_start %d: transport %q, peer %q, principal %q; want http, 127.0.0.1:PORT, none", r.Seq, r.Transport, r.Peer, r.Principal)
			}
		}
	}
	if kinds["session_start"] == 0 || kinds["session_start"] != kinds["session_end"] {
		t.Errorf("audit log: %d session_start, %d session_end; want as many ends as starts, at least one", kinds["session_start"], kinds["session_end"])
	}
	if kinds["intent"] == 0 || kinds["intent"] != kinds["outcome"] {
		t.Errorf("audit log: %d intents, %d outcomes; want one outcome per intent", kinds["intent"], kinds["outcome"])
	}
	for _, tool := range []string{"test_simple_text", "test_tool_with_progress", "test_input_required_result_elicitation", "test_input_required_result_multi_round"} {
		if !tools[tool] {
			t.Errorf("audit log: no intent for %s, which the suite called (intents for %v)", tool, slices.Sorted(maps.Keys(tools)))
		}
	}
	if statuses["input_required"] == 0 {
		t.Errorf("audit log: outcome statuses %v; want input_required among them (the multi round-trip scenarios' first answers)", statuses)
	}
	if rounds == 0 {
		t.Errorf("audit log: no intent with a round linked to an outcome (round.of, n >= 2); want the multi round-trip retries linked")
	}
	// The Tasks scenarios: calls that became tasks; tasks that ended ok
	// (slow_compute), with a tool error (failing_job), failed
	// (protocol_error_job) and cancelled (tasks/cancel while running);
	// tasks that asked for input (confirm_delete, multi_input), the
	// client's answers to them and its cancels; every task record naming
	// an intent whose outcome was a task.
	if statuses["task"] == 0 {
		t.Errorf("audit log: outcome statuses %v; want task among them (the tasks-* scenarios' task-supporting tools)", statuses)
	}
	for _, ev := range []string{"end ok", "end tool_error", "end failed", "end cancelled", "input_required", "update", "cancel"} {
		if taskEvents[ev] == 0 {
			t.Errorf("audit log: task records %v; want %q among them", taskEvents, ev)
		}
	}
	for _, seq := range taskIntents {
		if !taskOutcomes[seq] {
			t.Errorf("audit log: a task record names intent %d, whose outcome is not a task", seq)
		}
	}
	if revisions == 0 {
		t.Errorf("audit log: no intent with revision 2026-07-28; want the revision each request declares")
	}
}
