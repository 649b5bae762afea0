package interop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pagePolicy holds echo for approval.
const pagePolicy = `version: 1
default: allow
rules:
  - tool: echo
    action: approve
`

// startApprovalsFront starts aegis wrap --listen with pagePolicy in front
// of the TypeScript SDK v2 server (testdata/v2/server.mjs, both
// revisions), and returns it with the approvals page's address
// (as its stderr says) and the approver token (from the file it names).
func startApprovalsFront(t *testing.T, ctx context.Context, extra ...string) (f *listenFront, aegis, audit, pub, page, approverToken, clientToken string) {
	t.Helper()
	dir := t.TempDir()
	aegis = buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub = keygen(t, aegis, key)
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(pagePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	audit = filepath.Join(dir, "audit.jsonl")
	args := append([]string{"--grace", "1s", "--policy", pol, "--approval-timeout", "2m", "--audit", audit, "--signing-key", key}, extra...)
	f = startListen(ctx, t, aegis, append(args, "--", everythingArgv(t)[0], filepath.Join("testdata", "v2", "server.mjs"))...)
	m := regexp.MustCompile(`; approvals page at (\S+) \(approver token in (\S+): open `).FindStringSubmatch(f.stderr.String())
	if m == nil {
		t.Fatalf("wrap --listen said nothing of the approvals page:\n%s", f.stderr.String())
	}
	if m[2] != filepath.Join(dir, "audit.approver-token") {
		t.Errorf("approver token in %s; want beside the log", m[2])
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	return f, aegis, audit, pub, m[1], read(m[2]), read(filepath.Join(dir, "audit.token"))
}

// TestApprovalsPageBrowser: through aegis wrap --listen, the official
// TypeScript SDK client calls echo, which an approve rule parks; a real
// headless Chromium opens the approvals page with the approver token in
// the address's fragment, sees the call with the client's markup shown
// as text (no element made, no script run, the token gone from the
// address), and clicks Approve: the client gets echo's own answer. The
// next call is denied from the page with a reason: the client gets
// -32042 APPROVAL_DENIED with that reason. Then two sessions each park
// a call: approving A's from the page answers A, while B's stays listed
// and is later denied (B never ran). aegis verify is VALID and aegis log
// names the approver by the approver token's id. Both revisions: the SDK
// v1 client's sessions (2025-11-25) and the SDK v2 client's stateless
// requests (2026-07-28, whose two clients share one principal's session:
// the approval is still bound to its one call).
func TestApprovalsPageBrowser(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(revision, func(t *testing.T) { testApprovalsPage(t, revision) })
	}
}

func testApprovalsPage(t *testing.T, revision string) {
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatalf("Chromium is not installed (%v): apt-get install chromium (.ci/run does)", err)
	}
	if _, err := os.Stat("node_modules/playwright-core/package.json"); err != nil {
		t.Fatalf("playwright-core is not installed (%v): run npm ci in interop/", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*sessionTimeout)
	defer cancel()
	f, aegis, audit, pub, page, approverToken, clientToken := startApprovalsFront(t, ctx)
	node := everythingArgv(t)[0]
	cmd := exec.CommandContext(ctx, node, "approvals_page.mjs", f.url, clientToken, page, approverToken, t.TempDir(), revision)
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
	steps := scriptSteps(t, "approvals_page.mjs", cmd, stdout, &stderr, f)
	var shown struct {
		Tool, Args, Address string
		Imgs                int
		Pwned               any
		Dialogs             []string
	}
	json.Unmarshal(steps["shown"], &shown)
	wantArgs := `"{\"text\":\"<img src=x onerror=\\\"window.__aegisPwned=1\\\">\"}"`
	if shown.Tool != `"echo"` || shown.Args != wantArgs || shown.Imgs != 0 || shown.Pwned != nil || len(shown.Dialogs) != 0 {
		t.Errorf("the page showed %s; want the tool and the arguments as quoted text, nothing of them run", steps["shown"])
	}
	if strings.Contains(shown.Address, approverToken) {
		t.Errorf("the page's address still holds the approver token: %s", shown.Address)
	}
	var res struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
		Error *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	json.Unmarshal(steps["approved"], &res)
	if res.Error != nil || len(res.Result.Content) != 1 || !strings.Contains(res.Result.Content[0].Text, "onerror") {
		t.Errorf("approved from the page: the client got %s; want echo's answer", steps["approved"])
	}
	denied := func(step, reason string) {
		t.Helper()
		res.Error = nil
		json.Unmarshal(steps[step], &res)
		if res.Error == nil || res.Error.Code != -32042 {
			t.Errorf("%s: the client got %s; want -32042 APPROVAL_DENIED", step, steps[step])
			return
		}
		checkRefusalData(t, step, res.Error.Data, "APPROVAL_DENIED")
		if !strings.Contains(string(res.Error.Data), `"reason":"`+reason+`"`) {
			t.Errorf("%s: data %s; want the page's reason %q", step, res.Error.Data, reason)
		}
	}
	denied("denied", "not on a Friday")
	var bound struct {
		A struct {
			Result *struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		} `json:"a"`
		BAnswered bool
		BListed   int
	}
	json.Unmarshal(steps["bound"], &bound)
	if bound.A.Result == nil || len(bound.A.Result.Content) != 1 || !strings.Contains(bound.A.Result.Content[0].Text, "for A") || bound.BAnswered || bound.BListed != 1 {
		t.Errorf("approving A's call: %s; want A answered, B still parked and listed", steps["bound"])
	}
	denied("boundB", "B stays")

	f.stop(t)
	if out, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(out), "VALID") {
		t.Fatalf("aegis verify: %v\n%s", err, out)
	}
	sum := sha256.Sum256([]byte(approverToken))
	by := "token:" + hex.EncodeToString(sum[:8])
	out, err := exec.Command(aegis, "log", audit).CombinedOutput()
	if err != nil {
		t.Fatalf("aegis log: %v\n%s", err, out)
	}
	for _, want := range []string{"approved by " + by, "denied by " + by + `: "not on a Friday"`, "denied by " + by + `: "B stays"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("aegis log does not say %q:\n%s", want, out)
		}
	}
	data, _ := os.ReadFile(audit)
	if n := strings.Count(string(data), `"by":{"principal":"`+by+`"}`); n != 4 {
		t.Errorf("the log names the approver token in %d approval records; want 4", n)
	}
	if strings.Contains(string(data), approverToken) || strings.Contains(string(data), clientToken) {
		t.Error("the log holds a token")
	}
}
