package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestApprovalsElicitation: aegis wrap --listen --approval-elicitation in
// front of the TypeScript SDK v2 server, echo held by an approve rule.
// The SDK v2 client pinned to 2026-07-28 is answered input_required with
// one URL-mode elicitation keyed aegis-approval-<id> pointing to the
// approvals page's row (#id=<id>); its handler approves over the page's
// endpoint, and the SDK's retry gets echo's real answer; the next call,
// denied, gets APPROVAL_DENIED with the reason. The record: the parked
// intent, aegis's input_required outcome of it, the approval, the retry
// as round 2 linked by match under the same approval id, its outcome;
// aegis verify says VALID. The SDK v1 client (2025-11-25) is never sent
// the elicitation: its call parks as without the option. Without the
// option, the 2026-07-28 call parks unanswered as before. A 2026-07-28
// client whose capabilities declare form-mode elicitation only, or none,
// is never sent it either: its call waits for the approver. With a short
// --approval-timeout (expired), both approvals expire: one before the
// retry comes, one while the retry waits; the client gets
// APPROVAL_TIMEOUT each time.
func TestApprovalsElicitation(t *testing.T) {
	for _, c := range []struct {
		name, revision, mode string
		option               bool
	}{
		{"2026-07-28", "2026-07-28", "", true},
		{"2025-11-25", "2025-11-25", "", true},
		{"2026-07-28-without-option", "2026-07-28", "list", false},
		{"2026-07-28-form-only", "2026-07-28", "form", true},
		{"2026-07-28-no-elicitation", "2026-07-28", "none", true},
	} {
		t.Run(c.name, func(t *testing.T) { testApprovalsElicitation(t, c.revision, c.mode, c.option) })
	}
	t.Run("expired", testApprovalsElicitationExpired)
}

func testApprovalsElicitation(t *testing.T, revision, mode string, option bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*sessionTimeout)
	defer cancel()
	var extra []string
	if option {
		extra = []string{"--approval-elicitation"}
	}
	f, aegis, audit, pub, page, approverToken, clientToken := startApprovalsFront(t, ctx, extra...)
	node := everythingArgv(t)[0]
	cmd := exec.CommandContext(ctx, node, "approvals_elicit.mjs", f.url, clientToken, approverToken, revision, mode)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	steps := scriptSteps(t, "approvals_elicit.mjs", cmd, stdout, &stderr, f)
	type elicitation struct{ Mode, Message, URL string }
	var res struct {
		Result *struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
		Error *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
		Elicitations []elicitation
	}
	json.Unmarshal(steps["approved"], &res)
	if res.Error != nil || res.Result == nil || len(res.Result.Content) != 1 || !strings.Contains(res.Result.Content[0].Text, "run me") {
		t.Errorf("approved: the client got %s; want echo's answer", steps["approved"])
	}
	wantElicit := option && revision == "2026-07-28" && mode == ""
	var ids []string
	if !wantElicit && len(res.Elicitations) != 0 {
		t.Errorf("the client was sent elicitations %+v; want none", res.Elicitations)
	}
	if wantElicit {
		re := regexp.MustCompile("^" + regexp.QuoteMeta(page) + `#id=([0-9a-f]+)$`)
		for _, e := range res.Elicitations {
			m := re.FindStringSubmatch(e.URL)
			if e.Mode != "url" || m == nil || !strings.Contains(e.Message, "echo") {
				t.Errorf("elicitation %+v; want mode url, the approvals page's row %s#id=ID, a message naming echo", e, page)
				continue
			}
			ids = append(ids, m[1])
		}
		if len(ids) != 1 {
			t.Errorf("approved: %d elicitations; want 1", len(ids))
		}
	}
	res.Error, res.Result, res.Elicitations = nil, nil, nil
	json.Unmarshal(steps["denied"], &res)
	if res.Error == nil || res.Error.Code != -32042 {
		t.Errorf("denied: the client got %s; want -32042 APPROVAL_DENIED", steps["denied"])
	} else {
		checkRefusalData(t, "denied", res.Error.Data, "APPROVAL_DENIED")
		if !strings.Contains(string(res.Error.Data), `"reason":"not today"`) {
			t.Errorf("denied: data %s; want the approver's reason", res.Error.Data)
		}
	}
	if wantElicit && len(res.Elicitations) != 2 {
		t.Errorf("denied: %d elicitations in all; want 2", len(res.Elicitations))
	}

	f.stop(t)
	if out, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(out), "VALID") {
		t.Fatalf("aegis verify: %v\n%s", err, out)
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	if !wantElicit {
		for _, no := range []string{record.ElicitKeyPrefix, `"elicitation":true`, `"input_required"`} {
			if strings.Contains(log, no) {
				t.Errorf("the log holds %s; want nothing asked inside the protocol", no)
			}
		}
		return
	}
	// The first approval's records, in order.
	id := ids[0]
	want := []string{
		`"approval":{"id":"` + id + `",`,
		`"status":"input_required"`,
		`"input_requests":[{"key":"` + record.ElicitKeyPrefix + id + `","method":"elicitation/create"}]`,
		`"approval":"` + id + `"`,
		`"decision":"approved"`,
		`"round":{`,
		`"by":"match"`,
		`"approval":{"id":"` + id + `",`,
		`"status":"ok"`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(log[at:], w)
		if i < 0 {
			t.Fatalf("the log lacks %s after offset %d:\n%s", w, at, log)
		}
		at += i + len(w)
	}
	if n := strings.Count(log, `"elicitation":true`); n != 4 {
		t.Errorf("%d intents parked with elicitation terms; want 4 (two calls, each with its retry)", n)
	}
}

// scriptSteps reads the steps a Node script (name) prints, one JSON
// object a line, each by its "step", until it exits.
func scriptSteps(t *testing.T, name string, cmd *exec.Cmd, stdout io.Reader, stderr *syncBuffer, f *listenFront) map[string]json.RawMessage {
	t.Helper()
	steps := map[string]json.RawMessage{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Step string `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s printed %q", name, sc.Text())
		}
		steps[s.Step] = append(json.RawMessage(nil), sc.Bytes()...)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s\nwrap:\n%s", name, err, stderr.String(), f.stderr.String())
	}
	for k, v := range steps {
		t.Logf("%s: %s", k, v)
	}
	return steps
}

// testApprovalsElicitationExpired: wrap --approval-elicitation
// --approval-timeout 10s (a loaded machine still gets the retry in
// before it); the SDK v2 client (2026-07-28, URL elicitation
// declared) is asked twice and no one decides. The first handler answers
// once the log holds the expired approval, so the retry comes after the
// expiry; the second at once, so the retry waits parked until it. Both
// calls get -32042 APPROVAL_TIMEOUT; the log holds, for each approval,
// the expired approval record and the retry (round 2 by match, under the
// same id) refused host_denied as expired, in the order the case says;
// echo never runs; aegis verify says VALID.
func testApprovalsElicitationExpired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*sessionTimeout)
	defer cancel()
	f, aegis, audit, pub, _, approverToken, clientToken := startApprovalsFront(t, ctx, "--approval-elicitation", "--approval-timeout", "10s")
	cmd := exec.CommandContext(ctx, everythingArgv(t)[0], "approvals_elicit.mjs", f.url, clientToken, approverToken, "2026-07-28", "expire", audit)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	steps := scriptSteps(t, "approvals_elicit.mjs", cmd, stdout, &stderr, f)
	var ids []string
	for i, step := range []string{"expired-before", "expired-after"} {
		var res struct {
			Error *struct {
				Code int             `json:"code"`
				Data json.RawMessage `json:"data"`
			} `json:"error"`
			Elicitations []struct{ URL string }
		}
		json.Unmarshal(steps[step], &res)
		if res.Error == nil || res.Error.Code != -32042 {
			t.Errorf("%s: the client got %s; want -32042 APPROVAL_TIMEOUT", step, steps[step])
		} else {
			checkRefusalData(t, step, res.Error.Data, "APPROVAL_TIMEOUT")
		}
		if len(res.Elicitations) != i+1 {
			t.Fatalf("%s: %d elicitations in all; want %d", step, len(res.Elicitations), i+1)
		}
		_, id, _ := strings.Cut(res.Elicitations[i].URL, "#id=")
		ids = append(ids, id)
	}

	f.stop(t)
	if out, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(out), "VALID") {
		t.Fatalf("aegis verify: %v\n%s", err, out)
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Seq       uint64          `json:"seq"`
		Kind      string          `json:"kind"`
		Approval  json.RawMessage `json:"approval"`
		Decision  string          `json:"decision"`
		Intent    uint64          `json:"intent"`
		Round     *struct{ By string }
		Execution *struct {
			Status string
			Reason *string
		}
	}
	var recs []rec
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r rec
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		recs = append(recs, r)
		if r.Execution != nil && r.Execution.Status == "ok" {
			t.Errorf("a call ran: %s", l)
		}
	}
	for i, id := range ids {
		var decided, retry, refused uint64
		for _, r := range recs {
			var terms struct{ ID string }
			switch {
			case r.Kind == "approval" && string(r.Approval) == `"`+id+`"`:
				if r.Decision != "expired" {
					t.Errorf("approval %s decided %s; want expired", id, r.Decision)
				}
				decided = r.Seq
			case r.Kind == "intent" && r.Round != nil && r.Round.By == "match" && json.Unmarshal(r.Approval, &terms) == nil && terms.ID == id:
				retry = r.Seq
			case r.Kind == "outcome" && retry != 0 && r.Intent == retry:
				refused = r.Seq
				if r.Execution == nil || r.Execution.Status != "host_denied" || r.Execution.Reason == nil || *r.Execution.Reason != "not executed: approval expired" {
					t.Errorf("the retry of %s: outcome %+v; want host_denied, approval expired", id, r.Execution)
				}
			}
		}
		if decided == 0 || retry == 0 || refused == 0 {
			t.Fatalf("approval %s: expired record at %d, retry at %d, its outcome at %d; want all:\n%s", id, decided, retry, refused, data)
		}
		if before := decided < retry; before != (i == 0) {
			t.Errorf("approval %s: expired at seq %d, its retry at seq %d; want the %s", id, decided, retry, []string{"expiry first", "retry first"}[i])
		}
	}
}
