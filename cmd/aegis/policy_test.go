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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/journal/record"
)

// writePolicy writes a policy file into the fixture's folder and returns
// its path and set.
func (f *fixture) writePolicy(t testing.TB, name, src string) (string, string) {
	t.Helper()
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, policy.SetOf([]byte(src))
}

// replacePolicy replaces the policy file as editors do: a new file renamed
// over the old one, so that a reload never reads half of it.
func replacePolicy(t testing.TB, path, src string) string {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return policy.SetOf([]byte(src))
}

// refusal is the exact refusal frame README's "Policy" section shows.
func refusal(id, code, rule string, extra ...string) string {
	s := `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"` + code + `"`
	if rule != "" {
		s += `,"rule":` + strconv.Quote(rule)
	}
	return s + strings.Join(extra, "") + `}}}}`
}

func ran(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"ran ` + tool + `"}]}}`
}

// lineDigest is the request_digest of a line: SHA-256 of its bytes
// without the '\n'.
func lineDigest(line string) record.Digest {
	return sha256.Sum256([]byte(strings.TrimSuffix(line, "\n")))
}

func intentsOf(recs []*record.Record) []*record.Intent {
	var out []*record.Intent
	for _, r := range recs {
		if in, ok := r.Body.(*record.Intent); ok {
			out = append(out, in)
		}
	}
	return out
}

// outcomeOf returns the outcome of the intent at seq, or nil.
func outcomeOf(recs []*record.Record, seq uint64) *record.Outcome {
	for _, r := range recs {
		if o, ok := r.Body.(*record.Outcome); ok && o.Intent == seq {
			return o
		}
	}
	return nil
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

const denyDelete = `version: 1
default: allow
rules:
  - tool: read_file
    action: allow
  - tool: "delete_*"
    action: deny
  - tool: write_file
    action: approve
  - tool: search
    action: allow
    rate: 3/m
`

// TestPolicyAllowedByteIdentity: under a policy, every line that is one
// JSON value and carries no refused call reaches the child byte for byte
// (lines of white space do not: they are not one JSON value),
// however the stream is split, and the child's bytes reach the client
// unchanged; the intents carry the verdict, the rule and the set.
func TestPolicyAllowedByteIdentity(t *testing.T) {
	f := newFixture(t)
	path, set := f.writePolicy(t, "policy.yaml", denyDelete)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		``,
		`   `,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/hostname","é":"\u00e9\ud83d\ude00"}}}`,
		`{"jsonrpc":"2.0","id":"x-3","method":"tools\/call","params":{"name":"echo"}}` + "\r",
		`  {"id":4,"jsonrpc":"2.0","params":{"arguments":{},"name":"search"},"method":"tools/call"}  `,
		`[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file"}},{"jsonrpc":"2.0","method":"notifications/progress"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}`,
		`{"jsonrpc":"2.0","id":8,"method":"unknown/method","params":[1,2,3]}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"blob":"` + strings.Repeat("y", 200<<10) + `"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"not_in_any_rule"}}`, // the default: allow; no newline at EOF
	}, "\n")
	out := "not json from the child\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\x00\xff\n{\"id\":\"x-3\",\"result\":{\"isError\":true}}"
	for seed := range uint64(3) {
		os.Remove(f.audit)
		inPath, outPath := filepath.Join(f.dir, "in"), filepath.Join(f.dir, "out")
		os.WriteFile(outPath, []byte(out), 0o600)
		cmd := f.wrapCmd([]string{"--policy", path, "--durability", "none"}, child("copy")...)
		cmd.Env = append(os.Environ(), "AEGIS_TEST_IN="+inPath, "AEGIS_TEST_OUT="+outPath)
		stdin, _ := cmd.StdinPipe()
		var got, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &got, &stderr
		r := rand.New(rand.NewPCG(seed, 7))
		go func() {
			splitWrite(stdin, []byte(in), r)
			stdin.Close()
		}()
		runBounded(t, cmd, 60*time.Second)
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("wrap --policy exit %d\n%s", code, stderr.String())
		}
		// Every line but the empty ones, byte for byte: only lines that are
		// one JSON value reach the child.
		var want strings.Builder
		for _, l := range strings.SplitAfter(in, "\n") {
			if strings.TrimSpace(l) != "" {
				want.WriteString(l)
			}
		}
		if childIn, _ := os.ReadFile(inPath); string(childIn) != want.String() {
			t.Errorf("seed %d: child read %d bytes; want the client's %d but for the empty lines (first difference at %d)", seed, len(childIn), want.Len(), firstDiff(childIn, []byte(want.String())))
		}
		if got.String() != out {
			t.Errorf("seed %d: client read %q; child wrote %q", seed, got.String(), out)
		}
		recs := f.records(t)
		if s := recs[0].Body.(*record.SessionStart); s.PolicySet != set {
			t.Errorf("session_start policy_set = %q; want %q", s.PolicySet, set)
		}
		wantRules := []string{"rules[0] read_file", "default", "rules[3] search", "rules[0] read_file", "default", "default"}
		intents := intentsOf(recs)
		if len(intents) != len(wantRules) {
			t.Fatalf("%d intents; want %d", len(intents), len(wantRules))
		}
		for i, in := range intents {
			if in.Verdict != record.VerdictAllowed || in.Rule != wantRules[i] || in.Set != set || in.Refused {
				t.Errorf("intent %d policy = %s %q %s refused=%v; want allowed %q %s", i, in.Verdict, in.Rule, in.Set, in.Refused, wantRules[i], set)
			}
		}
		f.mustVerify(t, 0)
	}
}

// TestPolicyRefusals: denied, pending and malformed calls never reach the
// child; the client gets the exact refusal frame with its own id; the
// refusal's records are in the audit file when the frame arrives; allowed
// calls around them are answered by the child as usual.
func TestPolicyRefusals(t *testing.T) {
	f := newFixture(t)
	path, set := f.writePolicy(t, "policy.yaml", denyDelete)
	childLog, execLog := filepath.Join(f.dir, "child.log"), filepath.Join(f.dir, "exec.log")
	// --approval-timeout 0: the approve rule refuses at once (approvals_test.go parks).
	s := f.start(t, []string{"--policy", path, "--approval-timeout", "0"}, []string{"AEGIS_TEST_LOG=" + childLog, "AEGIS_POLICY_EXEC=" + execLog}, policyChildArgv()...)
	tests := []struct {
		name, req, want string
		verdict, rule   string
	}{
		{"allowed", call("1", "read_file"), ran("1", "read_file"), record.VerdictAllowed, "rules[0] read_file"},
		{"denied by glob", call("2", "delete_all"), refusal("2", "POLICY_DENIED", "rules[1] delete_*"), record.VerdictDenied, "rules[1] delete_*"},
		{"denied, string id kept as sent", call(`"a\u0062"`, "delete_x"), refusal(`"a\u0062"`, "POLICY_DENIED", "rules[1] delete_*"), record.VerdictDenied, "rules[1] delete_*"},
		{"denied, number id kept as sent", call("3.0", "delete_all"), refusal("3.0", "POLICY_DENIED", "rules[1] delete_*"), record.VerdictDenied, "rules[1] delete_*"},
		{"approve", call("4", "write_file"), refusal("4", "PENDING_APPROVAL", "rules[2] write_file"), record.VerdictPendingApproval, "rules[2] write_file"},
		{"malformed: duplicate name", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","name":"delete_all"}}`, refusal("5", "POLICY_DENIED", ""), record.VerdictDenied, ""},
		{"no tool name", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}`, refusal("6", "POLICY_DENIED", ""), record.VerdictDenied, ""},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"delete_all"}}`, refusal("null", "POLICY_DENIED", "rules[1] delete_*"), record.VerdictDenied, "rules[1] delete_*"},
		{"allowed after refusals", call("7", "echo"), ran("7", "echo"), record.VerdictAllowed, "default"},
	}
	for _, tt := range tests {
		s.send(tt.req)
		if got := s.recv(); got != tt.want {
			t.Errorf("%s: client read\n%s\nwant\n%s", tt.name, got, tt.want)
		}
		// The refusal's records were written before its frame.
		if tt.verdict != record.VerdictAllowed {
			recs := f.records(t)
			in := intentsOf(recs)
			last := in[len(in)-1]
			if last.RequestDigest != lineDigest(tt.req) || !last.Refused {
				t.Errorf("%s: the refusal arrived before its intent was in the audit file", tt.name)
			}
		}
	}
	s.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"}}`) // a notification: dropped, no answer
	s.send(call("8", "echo"))
	if got := s.recv(); got != ran("8", "echo") {
		t.Errorf("after a refused notification: client read %s; want the answer to 8", got)
	}
	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)

	// The child saw only the allowed calls.
	log := readLines(t, childLog)
	if want := []string{call("1", "read_file"), call("7", "echo"), call("8", "echo")}; !slices.Equal(log, want) {
		t.Errorf("child read\n%s\nwant only the allowed calls\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if got := readLines(t, execLog); !slices.Equal(got, []string{`"ran:read_file"`, `"ran:echo"`, `"ran:echo"`}) {
		t.Errorf("child ran %v; want read_file, echo, echo", got)
	}

	recs := f.records(t)
	seqOf := map[*record.Intent]uint64{}
	for _, r := range recs {
		if in, ok := r.Body.(*record.Intent); ok {
			seqOf[in] = r.Seq
		}
	}
	intents := intentsOf(recs)
	if len(intents) != len(tests)+2 {
		t.Fatalf("%d intents; want %d", len(intents), len(tests)+2)
	}
	for i, tt := range tests {
		in := intents[i]
		refused := tt.verdict != record.VerdictAllowed
		if in.Verdict != tt.verdict || in.Rule != tt.rule || in.Set != set || in.Refused != refused || in.RequestDigest != lineDigest(tt.req) {
			t.Errorf("%s: intent policy %s %q %s refused=%v; want %s %q %s refused=%v", tt.name, in.Verdict, in.Rule, in.Set, in.Refused, tt.verdict, tt.rule, set, refused)
		}
		o := outcomeOf(recs, seqOf[in])
		switch {
		case tt.name == "id null":
			if o != nil {
				t.Errorf("%s: outcome %+v; want none (an id null call is its intent alone)", tt.name, o)
			}
		case refused:
			if o == nil || o.Status != record.StatusHostDenied || o.Reason != "not executed" || o.HasResponse {
				t.Errorf("%s: outcome %+v; want host_denied, not executed, no response", tt.name, o)
			}
		case o == nil || o.Status != record.StatusOK:
			t.Errorf("%s: outcome %+v; want ok", tt.name, o)
		}
	}
	if n := intents[len(tests)]; !n.Refused || n.Verdict != record.VerdictDenied || n.Call.Type != record.IDNull {
		t.Errorf("refused notification: intent %+v; want recorded, denied, call null", n)
	}
	end := f.sessionEnd(t)
	if end.Counts.Refused != 8 || end.Counts.Intents != 11 {
		t.Errorf("session_end counts %+v; want 8 refused of 11 intents", end.Counts)
	}
}

// TestPolicyBatch: a batch with one refused call is refused whole and
// answered as one array; each call is recorded with its own verdict, the
// siblings host_denied for the sibling's sake; an allowed batch is relayed
// whole.
func TestPolicyBatch(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", denyDelete)
	childLog := filepath.Join(f.dir, "child.log")
	s := f.start(t, []string{"--policy", path, "--durability", "reply"}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)
	refused := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file"}},` +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}},` +
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"delete_all"}},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"},` +
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}},` +
		`{"jsonrpc":"2.0","id":4,"result":{}},` +
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file"}}]`
	s.send(refused)
	want := "[" + refusal("1", "HOST_DENIED", "") + "," + refusal(`"two"`, "POLICY_DENIED", "rules[1] delete_*") + "," +
		refusal("3", "HOST_DENIED", "") + "," + refusal("5", "PENDING_APPROVAL", "rules[2] write_file") + "]"
	if got := s.recv(); got != want {
		t.Errorf("refused batch answered\n%s\nwant\n%s", got, want)
	}
	allowed := `[{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file"}},{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}]`
	s.send(allowed)
	if got, want := s.recv(), "["+ran("6", "read_file")+","+ran("7", "echo")+"]"; got != want {
		t.Errorf("allowed batch answered %s; want %s", got, want)
	}
	onlyNotes := `[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"}},{"jsonrpc":"2.0","method":"notifications/x"}]`
	s.send(onlyNotes)
	s.send(call("8", "echo"))
	if got := s.recv(); got != ran("8", "echo") {
		t.Errorf("a refused batch of notifications got an answer, or 8 none: %s", got)
	}
	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	if log := readLines(t, childLog); !slices.Equal(log, []string{allowed, call("8", "echo")}) {
		t.Errorf("child read\n%s\nwant the allowed batch and call 8 only", strings.Join(log, "\n"))
	}
	recs := f.records(t)
	type row struct {
		tool, verdict string
		index, size   int
		refused       bool
		outcome       string // "" none
	}
	var got []row
	for _, r := range recs {
		in, ok := r.Body.(*record.Intent)
		if !ok {
			continue
		}
		rw := row{tool: string(in.Tool), verdict: in.Verdict, index: in.BatchIndex, size: in.BatchSize, refused: in.Refused}
		if o := outcomeOf(recs, r.Seq); o != nil {
			rw.outcome = o.Status + ": " + o.Reason
		}
		got = append(got, rw)
	}
	sib, own := "host_denied: not executed: sibling call in this batch was refused", "host_denied: not executed"
	want2 := []row{
		{"read_file", "allowed", 0, 7, true, sib},
		{"delete_all", "denied", 2, 7, true, own},
		{"echo", "allowed", 4, 7, true, ""}, // a notification: no outcome
		{"write_file", "pending_approval", 6, 7, true, own},
		{"read_file", "allowed", 0, 2, false, "ok: "},
		{"echo", "allowed", 1, 2, false, "ok: "},
		{"delete_all", "denied", 0, 2, true, ""},
		{"echo", "allowed", 0, 0, false, "ok: "},
	}
	if !slices.Equal(got, want2) {
		t.Errorf("batch records\n%v\nwant\n%v", got, want2)
	}
	for _, in := range intentsOf(recs)[:4] {
		if in.RequestDigest != lineDigest(refused) {
			t.Errorf("refused batch intent digest %s; want the whole array's", in.RequestDigest)
		}
	}
}

// TestPolicyRateLimit: a rule of 3/s lets 3 calls through at once, refuses
// the 4th with retry_after_ms, and lets one through again after that time.
func TestPolicyRateLimit(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", "version: 1\ndefault: deny\nrules:\n  - tool: search\n    action: allow\n    rate: 3/s\n")
	childLog := filepath.Join(f.dir, "child.log")
	s := f.start(t, []string{"--policy", path, "--durability", "none"}, []string{"AEGIS_TEST_LOG=" + childLog}, policyChildArgv()...)
	// One write: the four calls are decided within microseconds.
	io.WriteString(s.stdin, call("1", "search")+"\n"+call("2", "search")+"\n"+call("3", "search")+"\n"+call("4", "search")+"\n")
	answers := map[string]string{}
	for range 4 {
		line := s.recv()
		var m struct{ ID json.RawMessage }
		json.Unmarshal([]byte(line), &m)
		answers[string(m.ID)] = line
	}
	for _, id := range []string{"1", "2", "3"} {
		if answers[id] != ran(id, "search") {
			t.Errorf("call %s: %s; want it run", id, answers[id])
		}
	}
	var refused struct {
		Error struct {
			Data struct {
				Aegis struct {
					Code         string
					Rule         string
					RetryAfterMS int64 `json:"retry_after_ms"`
				}
			}
		}
	}
	json.Unmarshal([]byte(answers["4"]), &refused)
	a := refused.Error.Data.Aegis
	if a.Code != "RATE_LIMITED" || a.Rule != "rules[0] search" || a.RetryAfterMS < 1 || a.RetryAfterMS > 334 {
		t.Fatalf("call 4: %s; want RATE_LIMITED by rules[0] search, retry_after_ms in 1..334", answers["4"])
	}
	if want := refusal("4", "RATE_LIMITED", "rules[0] search", fmt.Sprintf(`,"retry_after_ms":%d`, a.RetryAfterMS)); answers["4"] != want {
		t.Errorf("call 4: %s; want the refusal envelope", answers["4"])
	}
	// The window passes: waiting for time itself, not for another process.
	time.Sleep(time.Duration(a.RetryAfterMS)*time.Millisecond + 20*time.Millisecond)
	s.send(call("5", "search"))
	if got := s.recv(); got != ran("5", "search") {
		t.Errorf("after retry_after_ms: %s; want call 5 run", got)
	}
	s.stdin.Close()
	s.wait(10 * time.Second)
	if n := len(readLines(t, childLog)); n != 4 {
		t.Errorf("the child read %d calls; want 4 (the 4th never reached it)", n)
	}
	var verdicts []string
	for _, in := range intentsOf(f.records(t)) {
		verdicts = append(verdicts, in.Verdict)
	}
	if want := []string{"allowed", "allowed", "allowed", "rate_limited", "allowed"}; !slices.Equal(verdicts, want) {
		t.Errorf("verdicts %v; want %v", verdicts, want)
	}
	f.mustVerify(t, 0)
}

// waitRecords waits (bounded) until the audit file holds n records of kind.
func waitRecords(t *testing.T, f *fixture, kind record.Kind, n int) []*record.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []*record.Record
		data := readAudit(f.audit)
		var d record.Decoder
		for _, line := range bytes.Split(data, []byte("\n")) {
			if r, err := d.Decode(line); err == nil && r.Kind == kind {
				got = append(got, r)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit file has %d %v records after 10s; want %d", len(got), kind, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// setChanges counts the policy_reload records in recs whose set is not
// the one in force before them: set at first, then each reload's.
func setChanges(set string, recs []*record.Record) int {
	n := 0
	for _, r := range recs {
		if b, ok := r.Body.(*record.PolicyReload); ok {
			if b.Set != set {
				n++
			}
			set = b.Set
		}
	}
	return n
}

// TestPolicyReload: a change of the file and SIGHUP both swap the policy;
// an invalid file is rejected and the old policy stays; each is recorded.
func TestPolicyReload(t *testing.T) {
	f := newFixture(t)
	path, setA := f.writePolicy(t, "policy.yaml", denyDelete)
	s := f.start(t, []string{"--policy", path, "--durability", "none"}, nil, policyChildArgv()...)
	s.send(call("1", "delete_all"))
	if got := s.recv(); got != refusal("1", "POLICY_DENIED", "rules[1] delete_*") {
		t.Fatalf("under A: %s; want delete_all refused", got)
	}
	policyB := "version: 1\ndefault: allow\nrules:\n  - tool: search\n    action: deny\n"
	setB := replacePolicy(t, path, policyB)
	waitRecords(t, f, record.KindPolicyReload, 1)
	s.send(call("2", "delete_all"))
	if got := s.recv(); got != ran("2", "delete_all") {
		t.Errorf("under B: %s; want delete_all run", got)
	}
	s.send(call("3", "search"))
	if got := s.recv(); got != refusal("3", "POLICY_DENIED", "rules[0] search") {
		t.Errorf("under B: %s; want search refused", got)
	}
	bad := "version: 1\ndefault: allow\nrules:\n  - tool: search\n    action: deny\n    when: always\n"
	setBad := replacePolicy(t, path, bad)
	waitRecords(t, f, record.KindPolicyReload, 2)
	s.send(call("4", "delete_all"))
	if got := s.recv(); got != ran("4", "delete_all") {
		t.Errorf("after a rejected reload: %s; want B still in force", got)
	}
	// SIGHUP: the file is A again, and B's bytes would not be a change.
	os.WriteFile(path, []byte(denyDelete), 0o600)
	waitRecords(t, f, record.KindPolicyReload, 3)
	s.cmd.Process.Signal(syscall.SIGHUP)
	waitRecords(t, f, record.KindPolicyReload, 4)
	s.send(call("5", "delete_all"))
	if got := s.recv(); got != refusal("5", "POLICY_DENIED", "rules[1] delete_*") {
		t.Errorf("after SIGHUP: %s; want delete_all refused again", got)
	}
	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s); the child ignores SIGHUP", code, s.stderr)
	}
	f.mustVerify(t, 0)
	var got []string
	for _, r := range waitRecords(t, f, record.KindPolicyReload, 4) {
		p := r.Body.(*record.PolicyReload)
		got = append(got, p.Set+" "+p.Status)
	}
	want := []string{setB + " applied", setBad + " rejected: " + path + `:6:11: rules[0].when: undeclared reference to 'always' (condition line 1, column 1)`, setA + " applied", setA + " applied"}
	if !slices.Equal(got, want) {
		t.Errorf("policy_reload records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sets := []string{}
	for _, in := range intentsOf(f.records(t)) {
		sets = append(sets, in.Set)
	}
	if want := []string{setA, setB, setB, setB, setA}; !slices.Equal(sets, want) {
		t.Errorf("intent sets %v; want %v", sets, want)
	}
	for _, w := range []string{"reloaded", "rejected", `undeclared reference to 'always'`} {
		if !strings.Contains(s.stderr.String(), w) {
			t.Errorf("wrap stderr lacks %q:\n%s", w, s.stderr)
		}
	}
}

// TestPolicyReloadLongRejection: a rejected reload whose message quotes a
// 2 MB glob is still recorded, its status cut to a line's worth, and the
// whole message goes to stderr.
func TestPolicyReloadLongRejection(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", denyDelete)
	s := f.start(t, []string{"--policy", path, "--durability", "none"}, nil, policyChildArgv()...)
	// An answer means wrap is relaying, its watcher set up before it.
	s.send(call("1", "delete_all"))
	if got := s.recv(); got != refusal("1", "POLICY_DENIED", "rules[1] delete_*") {
		t.Fatalf("before the reload: %s; want delete_all refused", got)
	}
	bad := "version: 1\ndefault: allow\nrules:\n  - tool: \"" + strings.Repeat("a", 2_000_000) + "[\"\n    action: deny\n"
	setBad := replacePolicy(t, path, bad)
	recs := waitRecords(t, f, record.KindPolicyReload, 1)
	s.stdin.Close()
	if code := s.wait(10 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)
	p := recs[0].Body.(*record.PolicyReload)
	if p.Set != setBad || !strings.HasPrefix(p.Status, "rejected: "+path+":4:") || len(p.Status) > 4<<10 || !strings.HasSuffix(p.Status, "…") {
		t.Errorf("policy_reload = %s, %d bytes %.120q; want %s, rejected, cut to at most 4 KiB", p.Set, len(p.Status), p.Status, setBad)
	}
	if !strings.Contains(s.stderr.String(), strings.Repeat("a", 100_000)) {
		t.Errorf("wrap's stderr (%d bytes) lacks the whole message", len(s.stderr.String()))
	}
}

// TestPolicyReloadUnderLoad: calls and batches stream in while the policy
// flips between allowing and denying a tool, by file and by SIGHUP. No call
// is lost (each gets one answer, each intent one outcome), no frame mixes
// two policies, every decision agrees with the set its intent names, and
// the child ran exactly the calls that were allowed.
func TestPolicyReloadUnderLoad(t *testing.T) {
	f := newFixture(t)
	allow := "version: 1\ndefault: deny\nrules:\n  - tool: flip\n    action: allow\n  - tool: steady\n    action: allow\n"
	deny := "version: 1\ndefault: deny\nrules:\n  - tool: flip\n    action: deny\n  - tool: steady\n    action: allow\n"
	path, setAllow := f.writePolicy(t, "policy.yaml", allow)
	setDeny := policy.SetOf([]byte(deny))
	execLog := filepath.Join(f.dir, "exec.log")
	s := f.start(t, []string{"--policy", path, "--durability", "none"}, []string{"AEGIS_POLICY_EXEC=" + execLog}, policyChildArgv()...)

	// One round trip first: aegis and the child are up, their SIGHUP
	// handlers installed (before that, SIGHUP would end them).
	s.send(call(`"warm-up"`, "steady"))
	if got := s.recv(); got != ran(`"warm-up"`, "steady") {
		t.Fatalf("warm-up call: %s", got)
	}
	const frames = 400
	answers := make(chan string, 4*frames)
	go func() {
		for {
			line, err := s.stdout.ReadString('\n')
			if err != nil {
				close(answers)
				return
			}
			answers <- strings.TrimSuffix(line, "\n")
		}
	}()
	sent := map[string]bool{}
	writer := make(chan error, 1)
	var frameIDs [][]string
	var lines []string
	for i := range frames {
		a, b := fmt.Sprintf(`"f%d"`, i), fmt.Sprintf(`"s%d"`, i)
		switch i % 3 {
		case 0:
			lines = append(lines, call(a, "flip"))
			frameIDs = append(frameIDs, []string{a})
		case 1:
			lines = append(lines, call(b, "steady"))
			frameIDs = append(frameIDs, []string{b})
		default:
			lines = append(lines, "["+call(a, "steady")+","+call(b, "flip")+"]")
			frameIDs = append(frameIDs, []string{a, b})
		}
		for _, id := range frameIDs[i] {
			sent[id] = true
		}
	}
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(s.stdin, l+"\n"); err != nil {
				writer <- err
				return
			}
			time.Sleep(500 * time.Microsecond) // pace the stream so that reloads land inside it
		}
		writer <- nil
	}()
	// Change the policy 12 times while the frames stream in, each time
	// waiting until it is applied: mostly with a SIGHUP after the change,
	// every fourth time by the change of the file alone. Each new file is
	// renamed over the old one, never written in place: wrap also watches
	// the file, and a file truncated and then written may be read empty
	// between the two, a rejected reload of its own, which is not what
	// this test counts. The watcher and the SIGHUP race: whichever comes
	// second finds the bytes it has seen, which the watcher skips and a
	// SIGHUP reloads and records all the same (README: SIGHUP always
	// reloads). So each change is one reload to a new set, and a SIGHUP
	// may add one more to the same set.
	const changes, hups = 12, 9
	for k := range changes {
		src := []string{deny, allow}[k%2]
		replacePolicy(t, path, src)
		if k%4 != 3 {
			s.cmd.Process.Signal(syscall.SIGHUP)
		}
		for deadline := time.Now().Add(10 * time.Second); setChanges(setAllow, waitRecords(t, f, record.KindPolicyReload, 0)) < k+1; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("change %d not applied after 10s", k+1)
			}
		}
	}
	if err := <-writer; err != nil {
		t.Fatal(err)
	}
	s.stdin.Close()
	got := map[string]string{`"warm-up"`: "ran"}
	for line := range answers {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("client read a line that is not JSON: %q", line)
		}
		msgs, ok := v.([]any)
		if !ok {
			msgs = []any{v}
		}
		for _, m := range msgs {
			mm := m.(map[string]any)
			id, _ := json.Marshal(mm["id"])
			if _, dup := got[string(id)]; dup {
				t.Errorf("two answers to %s", id)
			}
			if _, isErr := mm["error"]; isErr {
				got[string(id)] = "refused"
			} else {
				got[string(id)] = "ran"
			}
		}
	}
	if code := s.wait(20 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	for id := range sent {
		if got[id] == "" {
			t.Errorf("call %s got no answer", id)
		}
	}
	f.mustVerify(t, 0)

	recs := f.records(t)
	start := recs[0].Body.(*record.SessionStart)
	if start.PolicySet != setAllow {
		t.Errorf("session_start policy_set %s; want the file as it was at start, %s", start.PolicySet, setAllow)
	}
	applied := map[string]bool{start.PolicySet: true}
	reloads, reloadsAmidCalls, intentsSoFar := 0, 0, 0
	byDigest := map[record.Digest][]*record.Intent{}
	ranCalls := 0
	for _, r := range recs {
		switch b := r.Body.(type) {
		case *record.PolicyReload:
			reloads++
			if intentsSoFar > 1 && intentsSoFar < len(sent) {
				reloadsAmidCalls++
			}
			if b.Status != "applied" {
				t.Errorf("reload %s: %s; every file written was valid", b.Set, b.Status)
			}
			applied[b.Set] = true
		case *record.Intent:
			if !applied[b.Set] {
				t.Errorf("intent %d under set %s before any policy_reload applied it", r.Seq, b.Set)
			}
			intentsSoFar++
			byDigest[b.RequestDigest] = append(byDigest[b.RequestDigest], b)
			wantVerdict := record.VerdictAllowed
			if string(b.Tool) == "flip" && b.Set == setDeny {
				wantVerdict = record.VerdictDenied
			}
			if b.Verdict != wantVerdict {
				t.Errorf("intent %d: %s under %s is %s; want %s", r.Seq, b.Tool, b.Set, b.Verdict, wantVerdict)
			}
			if !b.Refused {
				ranCalls++
			}
			id := string(b.Call.Text)
			if want := map[bool]string{true: "refused", false: "ran"}[b.Refused]; got[`"`+id+`"`] != want {
				t.Errorf("call %q: the client saw %s; its intent says refused=%v", id, got[`"`+id+`"`], b.Refused)
			}
		}
	}
	if n := setChanges(start.PolicySet, recs); n != changes || reloads > changes+hups || reloadsAmidCalls < 3 {
		t.Errorf("%d reloads recorded, %d of them to a new set, %d amid the calls; want %d to a new set, at most %d more (one a SIGHUP), at least 3 amid",
			reloads, n, reloadsAmidCalls, changes, hups)
	}
	for _, l := range lines {
		ins := byDigest[lineDigest(l)]
		for _, in := range ins {
			if in.Set != ins[0].Set || in.Refused != ins[0].Refused {
				t.Errorf("one frame decided under two policies or half refused: %s", l)
			}
		}
	}
	if n := len(readLines(t, execLog)); n != ranCalls {
		t.Errorf("the child ran %d calls; %d intents were allowed through", n, ranCalls)
	}
	t.Logf("%d reloads (%d amid the calls), %d of %d calls ran", reloads, reloadsAmidCalls, ranCalls, len(sent))
}

// TestPolicyBadFile: wrap refuses a bad policy before it opens the audit
// log or starts the child, printing every problem with file, line, column.
func TestPolicyBadFile(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "bad.yaml", "version: 1\ndefault: deny\nrules:\n  - tool: \"[a-z]*\"\n    action: allow\n  - tool: x\n    action: allow\n    rate: 10/fortnight\n    args: {}\n")
	marker := filepath.Join(f.dir, "child-ran")
	cmd := f.wrapCmd([]string{"--policy", path}, "sh", "-c", "touch "+marker)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("wrap --policy bad.yaml = exit %d; want 2", code)
	}
	for _, want := range []string{path + `:4:11: rules[0].tool "[a-z]*"`, path + `:8:11: rules[1].rate "10/fortnight"`, path + `:9:5: rules[1]: unknown key "args"`} {
		if !strings.Contains(stderr.String(), "aegis: "+want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the child ran despite a bad policy")
	}
	if _, err := os.Stat(f.audit); err == nil {
		t.Error("the audit log was opened despite a bad policy")
	}
	cmd = f.wrapCmd([]string{"--policy", filepath.Join(f.dir, "missing.yaml")}, "true")
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "missing.yaml") {
		t.Errorf("wrap --policy missing.yaml = exit %d %s; want 2 naming the file", cmd.ProcessState.ExitCode(), out)
	}
}

func TestPolicyCommand(t *testing.T) {
	f := newFixture(t)
	good, set := f.writePolicy(t, "good.yaml", denyDelete)
	bad, _ := f.writePolicy(t, "bad.yaml", "version: 1\ndefault: maybe\nrules:\n  - tool: a\n    action: allow\n  - tool: a\n    action: deny\n")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		noStdout bool
	}{
		{"check good", []string{"check", good}, 0, []string{good + ": valid: 4 rules, default allow, set " + set}, nil, false},
		{"check bad", []string{"check", bad}, 1, nil, []string{
			"aegis: " + bad + `:2:10: default: "maybe"; want allow or deny`,
			"aegis: " + bad + `:6:11: rules[1] "a" can never match: rules[0] "a" (line 4)`}, true},
		{"check both", []string{"check", good, bad}, 1, []string{good + ": valid"}, []string{bad + ":2:10:"}, false},
		{"check missing", []string{"check", filepath.Join(f.dir, "nope.yaml")}, 2, nil, []string{"nope.yaml"}, true},
		{"check no file", []string{"check"}, 2, nil, []string{"no FILE"}, true},
		{"explain", []string{"explain", good, "delete_all", "read_file", "search", "Delete_all", "write_file"}, 0, []string{
			`"delete_all": denied (POLICY_DENIED) by rules[1] delete_* (` + good + `:6): the glob "delete_*" matches`,
			`"read_file": allowed by rules[0] read_file (` + good + `:4): the exact name`,
			`"search": allowed by rules[3] search (` + good + `:10): the exact name`,
			`rate 3/m: 3 calls at once, then one every 20s; over it, RATE_LIMITED`,
			`"Delete_all": allowed by the default (` + good + `:2): no rule matches`,
			`"write_file": parked for approval by rules[2] write_file`,
			`  the call waits for aegis approve ID (sent to the server) or aegis deny ID (APPROVAL_DENIED), or, over --listen, the approvals page, at most --approval-timeout (APPROVAL_TIMEOUT); refused at once (PENDING_APPROVAL) with --approval-timeout 0, in a batch, or when the parked calls are at their bound`,
		}, nil, false},
		{"explain bad policy", []string{"explain", bad, "a"}, 1, nil, []string{bad + ":2:10:"}, true},
		{"explain no tool", []string{"explain", good}, 2, nil, []string{"want FILE and at least one TOOL"}, true},
		{"no subcommand", nil, 2, nil, []string{"aegis policy check FILE"}, true},
		{"unknown subcommand", []string{"lint", good}, 2, nil, []string{`unknown subcommand "lint"`}, true},
		{"help", []string{"--help"}, 0, []string{"explain  say which rule decides", "rate: 10/m"}, nil, false},
	}
	for _, tt := range tests {
		cmd := exec.Command(aegisBin, append([]string{"policy"}, tt.args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != tt.code {
			t.Errorf("%s: aegis policy %v = exit %d; want %d\n%s%s", tt.name, tt.args, code, tt.code, stdout.String(), stderr.String())
		}
		for _, w := range tt.stdout {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s: stdout lacks %q:\n%s", tt.name, w, stdout.String())
			}
		}
		for _, w := range tt.stderr {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tt.name, w, stderr.String())
			}
		}
		if tt.noStdout && stdout.Len() > 0 {
			t.Errorf("%s: stdout %q; want nothing", tt.name, stdout.String())
		}
	}
}

// rtWrap is one aegis wrap around the echo child, driven in lock step.
type rtWrap struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	req []byte
}

func startWrapRT(b *testing.B, f *fixture, extra []string) *rtWrap {
	b.Helper()
	w := &rtWrap{cmd: f.wrapCmd(extra, child("echo")...)}
	w.in, _ = w.cmd.StdinPipe()
	out, _ := w.cmd.StdoutPipe()
	w.out = bufio.NewReaderSize(out, 64<<10)
	w.cmd.Stderr = os.Stderr
	if err := w.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		w.in.Close()
		w.cmd.Wait()
	})
	for range 50 {
		w.call(b)
	}
	return w
}

// call makes one recorded tools/call of "echo" and returns how long the
// round trip took.
func (w *rtWrap) call(b *testing.B) time.Duration {
	w.id++
	w.req = strconv.AppendInt(append(w.req[:0], `{"jsonrpc":"2.0","id":`...), int64(w.id), 10)
	w.req = append(w.req, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`+"\n"...)
	t0 := time.Now()
	if _, err := w.in.Write(w.req); err != nil {
		b.Fatal(err)
	}
	line, err := w.out.ReadSlice('\n')
	d := time.Since(t0)
	if err != nil || !bytes.Contains(line, []byte(`"result"`)) {
		b.Fatalf("call %d: %q, %v; want a result", w.id, line, err)
	}
	return d
}

// policyBenchFixture is newFixture for a benchmark.
func policyBenchFixture(b *testing.B) *fixture {
	b.Helper()
	dir := b.TempDir()
	f := &fixture{dir: dir, key: filepath.Join(dir, "signing.key"), audit: filepath.Join(dir, "audit.jsonl")}
	if err := exec.Command(aegisBin, "keygen", "--out", f.key).Run(); err != nil {
		b.Fatalf("keygen: %v", err)
	}
	return f
}

// thousandRulePolicy has 1,000 rules: exact names, prefix globs, suffix
// globs and globs that must be scanned, none of which matches "echo" but
// the last. A scan of the rules would try all 1,000 for every call.
func thousandRulePolicy() string {
	var b strings.Builder
	b.WriteString("version: 1\ndefault: deny\nrules:\n")
	for i := range 999 {
		var pat string
		switch i % 4 {
		case 0:
			pat = fmt.Sprintf("tool_%03d", i)
		case 1:
			pat = fmt.Sprintf("ns%03d_*", i)
		case 2:
			pat = fmt.Sprintf("*_adm%03d", i)
		default:
			pat = fmt.Sprintf("*x%03d*", i)
		}
		fmt.Fprintf(&b, "  - tool: %q\n    action: %s\n", pat, []string{"deny", "allow"}[i%2])
	}
	b.WriteString("  - tool: echo\n    action: allow\n")
	return b.String()
}

// BenchmarkPolicyCost measures a recorded tools/call through aegis wrap
// under a 1,000-rule policy beside the same call through an aegis wrap with
// no policy, in the same loop (one call on each per op, order alternating,
// never both at once), at each durability level; the target is ≤ 1.05
// (BENCHMARKS.md).
//
//	go test -run XXX -bench PolicyCost -count 3 ./cmd/aegis/
//
// Metrics: policy-us and nopolicy-us are the median round trips, ratio
// their quotient; mean-ratio is the quotient of the means, which fsync
// outliers on a shared disk move far more than any policy cost; ns/op is
// the pair.
func BenchmarkPolicyCost(b *testing.B) {
	for _, level := range []string{"none", "reply", "strict"} {
		b.Run(level, func(b *testing.B) {
			f := policyBenchFixture(b)
			pol, _ := f.writePolicy(b, "policy.yaml", thousandRulePolicy())
			plain := &fixture{dir: f.dir, key: f.key, audit: filepath.Join(f.dir, "plain.jsonl")}
			withPolicy := startWrapRT(b, f, []string{"--durability", level, "--policy", pol})
			without := startWrapRT(b, plain, []string{"--durability", level})
			tp := make([]time.Duration, 0, 1<<16)
			tn := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var p, n time.Duration
				if i%2 == 0 {
					p = withPolicy.call(b)
					n = without.call(b)
				} else {
					n = without.call(b)
					p = withPolicy.call(b)
				}
				if len(tp) < cap(tp) {
					tp, tn = append(tp, p), append(tn, n)
				}
				i++
			}
			mp, mn := median(tp), median(tn)
			b.ReportMetric(float64(mp)/1e3, "policy-us")
			b.ReportMetric(float64(mn)/1e3, "nopolicy-us")
			b.ReportMetric(float64(mp)/float64(mn), "ratio")
			b.ReportMetric(float64(sum(tp))/float64(sum(tn)), "mean-ratio")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func sum(d []time.Duration) (t time.Duration) {
	for _, x := range d {
		t += x
	}
	return t
}

// policyAttack is one attempt to reach the denied tool delete_all.
type policyAttack struct {
	name string
	// lines are written as they are; each should end in "\n". pieces > 1
	// writes each line in that many pieces, pausing between them, so that
	// the relay reads it in pieces.
	lines  []string
	pieces int
	// want: "refused CODE ID" (a refusal frame with that code and id),
	// "dropped" (anomaly records, forwarded false, no answer), "silent"
	// (a refused notification: intent, no answer), or "harmless" (reaches
	// the child, which runs no denied tool and says unknown tool).
	want string
	// batch: the answer is an array of refusals with these codes.
	batch []string
}

func attackCall(id, name string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{"path":"/"}}}` + "\n"
}

func policyAttacks() []policyAttack {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	var huge strings.Builder
	huge.WriteString("[")
	for i := range 4097 {
		fmt.Fprintf(&huge, `{"jsonrpc":"2.0","id":%d,"method":"ping"},`, 100000+i)
	}
	huge.WriteString(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"delete_all"}}]` + "\n")
	return []policyAttack{
		{name: "plain call", lines: []string{attackCall("1", "delete_all")}, want: "refused POLICY_DENIED 1"},
		{name: "escaped letter in name", lines: []string{attackCall("2", `de\u006cete_all`)}, want: "refused POLICY_DENIED 2"},
		{name: "name all escapes", lines: []string{attackCall("3", `\u0064\u0065\u006c\u0065\u0074\u0065\u005f\u0061\u006c\u006c`)}, want: "refused POLICY_DENIED 3"},
		{name: "escaped slash in method", lines: []string{`{"jsonrpc":"2.0","id":4,"method":"tools\/call","params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 4"},
		{name: "escaped letter in method", lines: []string{`{"jsonrpc":"2.0","id":5,"method":"\u0074ools/call","params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 5"},
		{name: "duplicate name, denied last", lines: []string{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 6"},
		{name: "duplicate name, denied first", lines: []string{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_all","name":"read_file"}}` + "\n"}, want: "refused POLICY_DENIED 7"},
		{name: "escaped duplicate name key", lines: []string{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_file","n\u0061me":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 8"},
		{name: "case-variant name key (Go binds it)", lines: []string{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_file","NAME":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 9"},
		{name: "case-variant params key", lines: []string{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"read_file"},"Params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 10"},
		{name: "long-s params key (Go folds ſ to s)", lines: []string{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"read_file"},"paramſ":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 11"},
		{name: "duplicate method, call last", lines: []string{`{"jsonrpc":"2.0","id":12,"method":"ping","method":"tools/call","params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 12"},
		{name: "case-variant method key only", lines: []string{`{"jsonrpc":"2.0","id":13,"Method":"tools/call","params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 13"},
		{name: "method with NUL", lines: []string{`{"jsonrpc":"2.0","id":14,"method":"tools/call\u0000","params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 14"},
		{name: "name not a string", lines: []string{`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":["delete_all"]}}` + "\n"}, want: "refused POLICY_DENIED 15"},
		{name: "params an array", lines: []string{`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":["delete_all"]}` + "\n"}, want: "refused POLICY_DENIED 16"},
		{name: "name with NUL (C decoders cut it)", lines: []string{attackCall("17", `delete_all\u0000x`)}, want: "refused POLICY_DENIED 17"},
		{name: "name with invalid UTF-8", lines: []string{attackCall("18", "delete_all\xff")}, want: "refused POLICY_DENIED 18"},
		{name: "name with unpaired surrogate", lines: []string{attackCall("19", `delete_all\ud800`)}, want: "refused POLICY_DENIED 19"},
		{name: "id null", lines: []string{attackCall("null", "delete_all")}, want: "refused POLICY_DENIED null"},
		{name: "id an object", lines: []string{attackCall(`{"x":21}`, "delete_all")}, want: "refused POLICY_DENIED null"},
		{name: "duplicate id", lines: []string{`{"jsonrpc":"2.0","id":22,"id":23,"method":"tools/call","params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED null"},
		{name: "notification", lines: []string{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"}}` + "\n"}, want: "silent"},
		{name: "inside a batch with an allowed call", lines: []string{"[" + strings.TrimSuffix(attackCall("24", "read_file"), "\n") + "," + strings.TrimSuffix(attackCall("25", "delete_all"), "\n") + "]\n"}, batch: []string{"HOST_DENIED", "POLICY_DENIED"}},
		{name: "batch of notifications", lines: []string{`[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"}}]` + "\n"}, want: "silent"},
		{name: "split across reads", lines: []string{attackCall("26", "delete_all")}, pieces: 4, want: "refused POLICY_DENIED 26"},
		{name: "CRLF line end", lines: []string{strings.TrimSuffix(attackCall("27", "delete_all"), "\n") + "\r\n"}, want: "refused POLICY_DENIED 27"},
		{name: "white space around", lines: []string{" \t" + strings.TrimSuffix(attackCall("28", "delete_all"), "\n") + " \t\n"}, want: "refused POLICY_DENIED 28"},
		{name: "jsonrpc 1.0", lines: []string{`{"jsonrpc":"1.0","id":29,"method":"tools/call","params":{"name":"delete_all"}}` + "\n"}, want: "refused POLICY_DENIED 29"},
		{name: "trailing junk after the JSON", lines: []string{strings.TrimSuffix(attackCall("30", "delete_all"), "\n") + " junk\n"}, want: "dropped"},
		{name: "two values on one line", lines: []string{`{"jsonrpc":"2.0","id":31,"method":"ping"} ` + attackCall("32", "delete_all")}, want: "dropped"},
		{name: "object split over two lines", lines: []string{`{"jsonrpc":"2.0","id":33,"method":"tools/call",` + "\n", `"params":{"name":"delete_all"}}` + "\n"}, want: "dropped"},
		{name: "byte order mark", lines: []string{"\xef\xbb\xbf" + attackCall("34", "delete_all")}, want: "dropped"},
		{name: "nested deeper than 10000", lines: []string{`{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":"delete_all","arguments":` + deep + `}}` + "\n"}, want: "dropped"},
		{name: "batch over 4096 elements", lines: []string{huge.String()}, want: "dropped"},
		{name: "upper case look-alike", lines: []string{attackCall("36", "DELETE_ALL")}, want: "harmless"},
		{name: "Cyrillic look-alike", lines: []string{attackCall("37", "dеlete_all")}, want: "harmless"},
		{name: "leading space look-alike", lines: []string{attackCall("38", " delete_all")}, want: "harmless"},
		{name: "trailing space (the glob still matches)", lines: []string{attackCall("40", "delete_all ")}, want: "refused POLICY_DENIED 40"},
		{name: "pending approval tool", lines: []string{attackCall("39", "write_file")}, want: "refused PENDING_APPROVAL 39"},
	}
}

// TestPolicyAttacks tries every way we know to reach a denied tool through
// wrap --policy, against a child that decodes as leniently as real servers
// do. Each attempt is refused, dropped, or reaches the child as a call to
// another tool that it does not have; each is recorded; the child never
// runs a denied tool.
func TestPolicyAttacks(t *testing.T) {
	f := newFixture(t)
	path, set := f.writePolicy(t, "policy.yaml", "version: 1\ndefault: allow\nrules:\n  - tool: \"delete_*\"\n    action: deny\n  - tool: write_file\n    action: approve\n")
	childLog, execLog := filepath.Join(f.dir, "child.log"), filepath.Join(f.dir, "exec.log")
	s := f.start(t, []string{"--policy", path, "--durability", "none", "--approval-timeout", "0"}, []string{"AEGIS_TEST_LOG=" + childLog, "AEGIS_POLICY_EXEC=" + execLog}, policyChildArgv()...)
	attacks := policyAttacks()
	if len(attacks) < 20 {
		t.Fatalf("%d attacks; the issue asks for at least 20", len(attacks))
	}
	answers := make([][]string, len(attacks))
	for i, a := range attacks {
		for _, l := range a.lines {
			n := max(a.pieces, 1)
			for k := range n {
				if _, err := io.WriteString(s.stdin, l[k*len(l)/n:(k+1)*len(l)/n]); err != nil {
					t.Fatal(err)
				}
				if k < n-1 {
					time.Sleep(10 * time.Millisecond) // make a split read likely; the frame reader is tested for every split
				}
			}
		}
		// A sentinel: everything the attack caused is answered before it.
		sentinel := fmt.Sprintf(`"sentinel-%d"`, i)
		s.send(`{"jsonrpc":"2.0","id":` + sentinel + `,"method":"ping"}`)
		for {
			line := s.recv()
			if strings.Contains(line, sentinel) {
				break
			}
			answers[i] = append(answers[i], line)
		}
	}
	s.stdin.Close()
	if code := s.wait(20 * time.Second); code != 0 {
		t.Fatalf("wrap exit %d (%s)", code, s.stderr)
	}
	f.mustVerify(t, 0)

	recs := f.records(t)
	childRead := string(must(os.ReadFile(childLog)))
	ran := readLines(t, execLog)
	for _, r := range ran {
		var what string
		json.Unmarshal([]byte(r), &what)
		name, _ := strings.CutPrefix(strings.TrimPrefix(what, "ran:"), "unknown:")
		if strings.HasPrefix(what, "ran:") && (strings.HasPrefix(name, "delete_") || name == "write_file") {
			t.Errorf("the child ran the denied tool %q", name)
		}
	}
	var table strings.Builder
	for i, a := range attacks {
		var anomalies, intents []*record.Record
		for _, l := range a.lines {
			d := lineDigest(l)
			for _, r := range recs {
				switch b := r.Body.(type) {
				case *record.Anomaly:
					if b.Digest == d {
						anomalies = append(anomalies, r)
					}
				case *record.Intent:
					if b.RequestDigest == d {
						intents = append(intents, r)
					}
				}
			}
		}
		got := answers[i]
		fail := func(format string, args ...any) {
			t.Errorf("attack %q: %s (answers %q)", a.name, fmt.Sprintf(format, args...), got)
		}
		if len(anomalies)+len(intents) == 0 {
			fail("not recorded")
		}
		reached := false
		for _, l := range a.lines {
			if strings.Contains(childRead, strings.TrimRight(l, "\r\n")) {
				reached = true
			}
		}
		outcome := a.want
		switch {
		case a.batch != nil:
			outcome = "refused whole: " + strings.Join(a.batch, ", ")
			var arr []map[string]any
			if len(got) != 1 || json.Unmarshal([]byte(got[0]), &arr) != nil || len(arr) != len(a.batch) {
				fail("want one array of %d refusals", len(a.batch))
				break
			}
			for k, code := range a.batch {
				if c := arr[k]["error"].(map[string]any)["data"].(map[string]any)["aegis"].(map[string]any)["code"]; c != code {
					fail("element %d code %v; want %s", k, c, code)
				}
			}
			for _, in := range intents {
				if !in.Body.(*record.Intent).Refused {
					fail("intent %d not marked refused", in.Seq)
				}
			}
		case strings.HasPrefix(a.want, "refused "):
			f := strings.Fields(a.want)
			if len(got) != 1 || !strings.HasPrefix(got[0], refusal(f[2], f[1], "")[:len(`{"jsonrpc":"2.0","id":`)+len(f[2])]) || !strings.Contains(got[0], `"code":"`+f[1]+`"`) {
				fail("want a %s refusal with id %s", f[1], f[2])
			}
			if len(intents) != 1 || !intents[0].Body.(*record.Intent).Refused || intents[0].Body.(*record.Intent).Set != set {
				fail("want one refused intent under %s", set)
			}
		case a.want == "silent":
			if len(got) != 0 || len(intents) != 1 || !intents[0].Body.(*record.Intent).Refused {
				fail("want no answer and one refused intent")
			}
		case a.want == "dropped":
			if len(got) != 0 || len(anomalies) != len(a.lines) || len(intents) != 0 {
				fail("want no answer, %d anomalies and no intent; got %d anomalies, %d intents", len(a.lines), len(anomalies), len(intents))
			}
			for _, r := range anomalies {
				if r.Body.(*record.Anomaly).Forwarded {
					fail("anomaly %d forwarded", r.Seq)
				}
			}
		case a.want == "harmless":
			if len(got) != 1 || !strings.Contains(got[0], `"unknownTool"`) || len(intents) != 1 || intents[0].Body.(*record.Intent).Refused {
				fail("want it relayed and answered unknown tool by the child")
			}
			outcome = "relayed; the child has no such tool"
		}
		if reached != (a.want == "harmless") {
			fail("reached the child: %v", reached)
		}
		kinds := fmt.Sprintf("%d intent(s), %d anomaly(ies)", len(intents), len(anomalies))
		fmt.Fprintf(&table, "%2d  %-40s %-42s %s\n", i+1, a.name, outcome, kinds)
	}
	t.Logf("attack table (policy: default allow, deny delete_*, approve write_file):\n%s", table.String())
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
