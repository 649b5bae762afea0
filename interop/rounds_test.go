package interop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptSDKRoundsThroughWrap drives a TypeScript SDK v2 server
// whose confirm tool asks the client for input (the SDK's multi round-trip
// API) with three official clients, once directly and once through aegis
// wrap: the v2 client negotiating on its own (auto) and pinned to
// 2026-07-28, where the first call is answered input_required and the
// client retries with the answer, and the v1 client (2025-11-25), where
// the SDK asks the same question as an elicitation/create request while
// the call runs. Each client prints the same answers through aegis as
// directly, and the log records what happened: on 2026-07-28 the first
// round's outcome input_required (its input request's key and method, the
// requestState's digest) and the retry linked to it as round 2 by that
// state, with the client's answer's key and action; on 2025-11-25 the
// server's request against the call in flight and the client's answer,
// and the revision initialize settled. The log verifies.
func TestTypeScriptSDKRoundsThroughWrap(t *testing.T) {
	t.Parallel() // the clients and servers wait on each other more than they run
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub := keygen(t, aegis, key)
	node, _ := conformance2026Argv(t)
	server := []string{node, filepath.Join("testdata", "v2", "rounds_server.mjs")}
	client := filepath.Join("testdata", "v2", "rounds_client.mjs")
	state := "sha256:" + sha256Hex("asked:deploy")
	tests := []struct {
		mode   string // the client: v2 versionNegotiation (auto, or a pinned revision), or v1
		rounds bool   // the revision spoken is 2026-07-28: rounds, not server requests
	}{
		{"auto", true},
		{"2026-07-28", true},
		{"v1", false},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			run := func(argv ...string) []byte {
				t.Helper()
				cmd := exec.Command(node, append([]string{client, tt.mode}, argv...)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("client %s: %v\n%s", tt.mode, err, stderr.String())
				}
				return out
			}
			direct := run(server...)
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			through := run(append([]string{aegis, "wrap", "--audit", audit, "--signing-key", key, "--"}, server...)...)
			if !bytes.Equal(through, direct) {
				t.Errorf("client %s through aegis printed\n%s\nwant, as directly,\n%s", tt.mode, through, direct)
			}
			if !strings.Contains(string(direct), `"deploy: confirmed (because)"`) || !strings.Contains(string(direct), `"elicitations":["Really deploy?"]`) {
				t.Fatalf("client %s directly printed %s; want confirm answered after one elicitation", tt.mode, direct)
			}
			if v, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(v), "VALID") {
				t.Errorf("aegis verify --key: %v\n%s", err, v)
			}
			recs := readRoundRecords(t, audit)
			if tt.rounds {
				checkRounds(t, recs, state)
			} else {
				checkServerRequest(t, recs)
			}
			// aegis log shows the confirm call as one row, its status the
			// last round's, with its rounds.
			wantRounds := "input_required,ok"
			if !tt.rounds {
				wantRounds = ""
			}
			row := logRow(t, aegis, audit, "confirm")
			if row.Status != "ok" || row.roundStatuses() != wantRounds {
				t.Errorf("aegis log --json row for confirm = %s; want status ok, rounds [%s]", row.raw, wantRounds)
			}
		})
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// roundRecord is the part of a record that rounds and server requests add.
type roundRecord struct {
	Seq      int64           `json:"seq"`
	Kind     string          `json:"kind"`
	Tool     *string         `json:"tool"`
	Intent   *int64          `json:"intent"`
	Revision json.RawMessage `json:"revision"`
	Exec     struct {
		Status string `json:"status"`
	} `json:"execution"`
	ResultType    json.RawMessage `json:"result_type"`
	InputRequests []struct {
		Key    string  `json:"key"`
		Method *string `json:"method"`
	} `json:"input_requests"`
	RequestState   string `json:"request_state"`
	InputResponses []struct {
		Key    string  `json:"key"`
		Action *string `json:"action"`
	} `json:"input_responses"`
	Round *struct {
		Of *int64 `json:"of"`
		By string `json:"by"`
		N  int    `json:"n"`
	} `json:"round"`
	Method  json.RawMessage `json:"method"`
	Calls   []int64         `json:"calls"`
	Request *int64          `json:"request"`
	Action  *string         `json:"action"`
	line    string
}

func (r *roundRecord) show() string {
	if r == nil {
		return "none"
	}
	return r.line
}

func readRoundRecords(t *testing.T, path string) []roundRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []roundRecord
	for line := range bytes.Lines(data) {
		var r roundRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %.200q: %v", line, err)
		}
		r.line = strings.TrimSpace(string(line))
		recs = append(recs, r)
	}
	return recs
}

// checkRounds requires the confirm call's two rounds on record: the first
// intent's outcome input_required with the key ok asked by
// elicitation/create and the state's digest, the retry linked to that
// outcome by the state as round 2 with the answer's key and action, its
// outcome ok; every intent naming the revision 2026-07-28.
func checkRounds(t *testing.T, recs []roundRecord, state string) {
	t.Helper()
	outcomes := map[int64]*roundRecord{}
	var intents []*roundRecord
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case "intent":
			if r.Tool != nil && *r.Tool == "confirm" {
				intents = append(intents, r)
			}
			if string(r.Revision) != `"2026-07-28"` {
				t.Errorf("intent %d: revision %s; want \"2026-07-28\", as its request declares\n%s", r.Seq, r.Revision, r.line)
			}
		case "outcome":
			if r.Intent != nil {
				outcomes[*r.Intent] = r
			}
		}
	}
	if len(intents) != 2 {
		t.Fatalf("intents for confirm = %d; want 2 (the first request and its retry)", len(intents))
	}
	first, retry := intents[0], intents[1]
	o1 := outcomes[first.Seq]
	switch {
	case o1 == nil:
		t.Errorf("the first confirm intent %d has no outcome", first.Seq)
	case o1.Exec.Status != "input_required" || string(o1.ResultType) != `"input_required"` || o1.RequestState != state ||
		len(o1.InputRequests) != 1 || o1.InputRequests[0].Key != "ok" || o1.InputRequests[0].Method == nil || *o1.InputRequests[0].Method != "elicitation/create":
		t.Errorf("the first confirm outcome = %s; want status input_required, result_type input_required, input_requests [{ok, elicitation/create}], request_state %s", o1.line, state)
	}
	if first.Round != nil {
		t.Errorf("the first confirm intent has round %+v; want none (round 1)", *first.Round)
	}
	if o1 != nil && (retry.Round == nil || retry.Round.Of == nil || *retry.Round.Of != o1.Seq || retry.Round.By != "state" || retry.Round.N != 2) {
		t.Errorf("the retry's intent = %s; want round {of: %d, by: state, n: 2}", retry.line, o1.Seq)
	}
	if retry.RequestState != state || len(retry.InputResponses) != 1 || retry.InputResponses[0].Key != "ok" || retry.InputResponses[0].Action == nil || *retry.InputResponses[0].Action != "accept" {
		t.Errorf("the retry's intent = %s; want request_state %s and input_responses [{ok, accept}]", retry.line, state)
	}
	if o2 := outcomes[retry.Seq]; o2 == nil || o2.Exec.Status != "ok" {
		t.Errorf("the retry's outcome = %s; want status ok", o2.show())
	}
}

// checkServerRequest requires the 2025-11-25 session on record: the
// revision initialize settled, one confirm call answered ok, the server's
// elicitation/create against it and the client's answer accept.
func checkServerRequest(t *testing.T, recs []roundRecord) {
	t.Helper()
	var confirm *roundRecord
	var req, answer *roundRecord
	protocol := false
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case "intent":
			if r.Tool != nil && *r.Tool == "confirm" {
				if confirm != nil {
					t.Errorf("a second confirm intent %d; want one call", r.Seq)
				}
				confirm = r
			}
		case "protocol":
			protocol = string(r.Revision) == `"2025-11-25"`
		case "server_request":
			req = r
		case "client_answer":
			answer = r
		}
	}
	if !protocol {
		t.Errorf("no protocol record with revision 2025-11-25; want the revision initialize settled")
	}
	if confirm == nil {
		t.Fatalf("no intent for confirm")
	}
	if req == nil || string(req.Method) != `"elicitation/create"` || len(req.Calls) != 1 || req.Calls[0] != confirm.Seq {
		t.Errorf("server_request = %s; want elicitation/create against the confirm call %d", req.show(), confirm.Seq)
	}
	if req != nil && (answer == nil || answer.Request == nil || *answer.Request != req.Seq || answer.Exec.Status != "ok" || answer.Action == nil || *answer.Action != "accept") {
		t.Errorf("client_answer = %s; want request %d, status ok, action accept", answer.show(), req.Seq)
	}
}

// logCall is the part of an `aegis log --json` call row these tests read.
type logCall struct {
	Type, Tool, Status string
	Rounds             []struct {
		N      int
		Status string
	}
	Task *struct{ Status string }
	raw  string
}

func (c logCall) roundStatuses() string {
	var s []string
	for _, r := range c.Rounds {
		s = append(s, r.Status)
	}
	return strings.Join(s, ",")
}

// logRow is aegis log --json's one call row for tool; the test fails
// unless there is exactly one.
func logRow(t *testing.T, aegis, audit, tool string) logCall {
	t.Helper()
	out, err := exec.Command(aegis, "log", "--json", audit).Output()
	if err != nil {
		t.Fatalf("aegis log --json %s: %v", audit, err)
	}
	var found []logCall
	for line := range bytes.Lines(out) {
		var c logCall
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("aegis log --json printed %q: %v", line, err)
		}
		c.raw = strings.TrimSpace(string(line))
		if c.Type == "call" && c.Tool == tool {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("aegis log --json has %d rows for %s; want 1\n%s", len(found), tool, out)
	}
	return found[0]
}
