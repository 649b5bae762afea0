package interop

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptSDKTasksThroughWrap drives the TypeScript SDK's tasks
// (2025-11-25: params.task, tasks/get, tasks/result; the SDK v1's
// experimental runtime, as v2 has none) with its client and server,
// directly and through aegis wrap: two tools that run only as tasks, one
// ending with a result and one with a tool error. The client prints the
// same through aegis as directly, and the log verifies and holds the
// tasks: each call's outcome has status task and the task's id, and one
// task record ends it, naming the call's intent, with the end's status
// (ok, tool_error), the message that carried it and a latency.
func TestTypeScriptSDKTasksThroughWrap(t *testing.T) {
	t.Parallel() // the task waits on a timer more than it runs
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub := keygen(t, aegis, key)
	node, _ := conformance2026Argv(t)
	server := []string{node, filepath.Join("testdata", "tasks", "server.mjs")}
	run := func(argv ...string) []byte {
		t.Helper()
		cmd := exec.Command(node, append([]string{filepath.Join("testdata", "tasks", "client.mjs")}, argv...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client: %v\n%s", err, stderr.String())
		}
		return out
	}
	direct := run(server...)
	wantOut := `{"slow_sum":{"created":true,"status":"completed","result":{"content":[{"type":"text","text":"5"}],"isError":false}},` +
		`"failing":{"created":true,"status":"completed","result":{"content":[{"type":"text","text":"it broke"}],"isError":true}}}`
	if got := strings.TrimSpace(string(direct)); got != wantOut {
		t.Fatalf("client directly printed\n%s\nwant\n%s", got, wantOut)
	}
	audit := filepath.Join(dir, "audit.jsonl")
	through := run(append([]string{aegis, "wrap", "--audit", audit, "--signing-key", key, "--"}, server...)...)
	if !bytes.Equal(through, direct) {
		t.Errorf("client through aegis printed\n%s\nwant, as directly,\n%s", through, direct)
	}
	if v, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(v), "VALID") {
		t.Errorf("aegis verify --key: %v\n%s", err, v)
	}
	want := map[string]string{"slow_sum": "ok", "failing": "tool_error"}
	checkTaskRecords(t, readTaskRecords(t, audit), want)
	// aegis log shows each call as one row, its status the task's end's.
	for tool, status := range want {
		if row := logRow(t, aegis, audit, tool); row.Status != status || row.Task == nil || row.Task.Status != status {
			t.Errorf("aegis log --json row for %s = %s; want status %s, and its task's", tool, row.raw, status)
		}
	}
}

// taskRecord is the part of an intent, outcome or task record that
// tasks add.
type taskRecord struct {
	roundRecord
	TaskID  json.RawMessage `json:"task_id"`
	Event   string          `json:"event"`
	Via     string          `json:"via"`
	Digest  *string         `json:"digest"`
	Latency *int64          `json:"latency_ns"`
}

func readTaskRecords(t *testing.T, path string) []taskRecord {
	t.Helper()
	var recs []taskRecord
	for _, r := range readRoundRecords(t, path) {
		var tr taskRecord
		if err := json.Unmarshal([]byte(r.line), &tr); err != nil {
			t.Fatal(err)
		}
		tr.roundRecord = r
		recs = append(recs, tr)
	}
	return recs
}

// checkTaskRecords requires, for each tool in want, one intent whose
// outcome has status task and a task id, and one task end naming that
// intent with the status want gives, carried by tasks/get or tasks/result
// with that line's digest and a latency; and the revision initialize
// settled.
func checkTaskRecords(t *testing.T, recs []taskRecord, want map[string]string) {
	t.Helper()
	intents := map[string]int64{}
	outcomes := map[int64]*taskRecord{}
	ends := map[int64][]*taskRecord{}
	protocol := false
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case "intent":
			if r.Tool != nil {
				if _, dup := intents[*r.Tool]; dup {
					t.Errorf("a second intent for %s: %s", *r.Tool, r.line)
				}
				intents[*r.Tool] = r.Seq
			}
		case "outcome":
			if r.Intent != nil {
				outcomes[*r.Intent] = r
			}
		case "task":
			if r.Intent != nil && r.Event == "end" {
				ends[*r.Intent] = append(ends[*r.Intent], r)
			}
		case "protocol":
			protocol = string(r.Revision) == `"2025-11-25"`
		}
	}
	if !protocol {
		t.Errorf("no protocol record with revision 2025-11-25; want the revision initialize settled")
	}
	for tool, status := range want {
		seq, ok := intents[tool]
		if !ok {
			t.Errorf("no intent for %s", tool)
			continue
		}
		o := outcomes[seq]
		if o == nil || o.Exec.Status != "task" || len(o.TaskID) == 0 || string(o.TaskID) == "null" {
			t.Errorf("%s's outcome = %s; want status task with its task_id", tool, o.show())
			continue
		}
		e := ends[seq]
		if len(e) != 1 {
			t.Errorf("%s: %d task ends name its intent %d; want 1", tool, len(e), seq)
			continue
		}
		end := e[0]
		if end.Exec.Status != status || string(end.TaskID) != string(o.TaskID) || (end.Via != "tasks/get" && end.Via != "tasks/result") ||
			end.Digest == nil || !strings.HasPrefix(*end.Digest, "sha256:") || end.Latency == nil || *end.Latency <= 0 {
			t.Errorf("%s's task end = %s; want status %s, task_id %s, via tasks/get or tasks/result, the line's digest and a latency", tool, end.line, status, o.TaskID)
		}
	}
}
