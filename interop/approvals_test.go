package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApprovalsTypeScriptSDK: the official TypeScript SDK client calls a
// tool an approve rule parks, through aegis wrap over stdio; the call
// waits, aegis approve releases it and the client gets the server's
// result; the next call of that tool is denied with aegis deny and the
// client gets an ordinary McpError -32042 with data.aegis.code
// APPROVAL_DENIED and the approver's reason; an allowed call after it is
// answered; the log verifies.
func TestApprovalsTypeScriptSDK(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv, aegis, audit := wrapWithPolicy(t)
	for i, a := range argv {
		if a == "--approval-timeout" {
			argv[i+1] = "2m" // park (wrapWithPolicy's tests refuse at once)
		}
	}
	socket := strings.TrimSuffix(audit, ".jsonl") + ".approvals.sock"
	node := argv[len(argv)-3] // …-- node server-everything stdio
	script, err := filepath.Abs("policy_client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (%v).\nRun `npm ci` in interop/ first.", err)
	}
	calls, _ := json.Marshal([]map[string]any{
		{"tool": "get-tiny-image", "args": map[string]any{}},
		{"tool": "get-tiny-image", "args": map[string]any{}},
		{"tool": "echo", "args": map[string]any{"message": "after"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, argv...)...)
	cmd.Env = append(os.Environ(), "AEGIS_INTEROP_CALLS="+string(calls))
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
	lines := bufio.NewScanner(stdout)
	next := func() map[string]json.RawMessage {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("policy_client.mjs ended early\nstderr:\n%s", stderr.String())
		}
		var l map[string]json.RawMessage
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("policy_client.mjs printed %q: %v", lines.Text(), err)
		}
		return l
	}

	id := waitingID(t, ctx, aegis, socket)
	if out, err := exec.Command(aegis, "approve", id, "--socket", socket).CombinedOutput(); err != nil {
		t.Fatalf("aegis approve %s: %v\n%s", id, err, out)
	}
	if l := next(); l["error"] != nil || !strings.Contains(string(l["result"]), `"type":"image"`) {
		t.Fatalf("approved get-tiny-image: the client got %s %s; want the server's image", l["result"], l["error"])
	}
	if out, err := exec.Command(aegis, "approve", id, "--socket", socket).CombinedOutput(); err == nil {
		t.Fatalf("a second aegis approve %s succeeded: %s", id, out)
	}

	id = waitingID(t, ctx, aegis, socket)
	if out, err := exec.Command(aegis, "deny", id, "--socket", socket, "--reason", "no images today").CombinedOutput(); err != nil {
		t.Fatalf("aegis deny %s: %v\n%s", id, err, out)
	}
	l := next()
	var e struct {
		Class            string          `json:"class"`
		IsMcpError       bool            `json:"isMcpError"`
		IsURLElicitation bool            `json:"isUrlElicitation"`
		Code             int             `json:"code"`
		Data             json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(l["error"], &e); err != nil || e.Class != "McpError" || !e.IsMcpError || e.IsURLElicitation || e.Code != -32042 {
		t.Fatalf("denied get-tiny-image: the client got %s %s; want an ordinary McpError -32042", l["result"], l["error"])
	}
	checkRefusalData(t, "denied get-tiny-image", e.Data, "APPROVAL_DENIED")
	var d struct {
		Aegis struct {
			Reason string `json:"reason"`
		} `json:"aegis"`
	}
	if json.Unmarshal(e.Data, &d); d.Aegis.Reason != "no images today" {
		t.Errorf("data %s; want the approver's reason", e.Data)
	}
	if l := next(); l["error"] != nil || !strings.Contains(string(l["result"]), "after") {
		t.Fatalf("echo after the denial: %s %s", l["result"], l["error"])
	}
	cmd.Wait()
	if out, err := exec.Command(aegis, "verify", audit).CombinedOutput(); err != nil || !strings.Contains(string(out), "VALID") {
		t.Errorf("aegis verify %s: %v\n%s", audit, err, out)
	}
	data, _ := os.ReadFile(audit)
	for _, want := range []string{`"decision":"approved"`, `"grant":"approval:`, `"decision":"denied"`, `"reason":"no images today"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the log holds no %s", want)
		}
	}
}

// waitingID polls aegis approvals --json on socket until a call waits,
// and returns its id: the client's call is parked inside wrap, which says
// so nowhere else.
func waitingID(t *testing.T, ctx context.Context, aegis, socket string) string {
	t.Helper()
	for ctx.Err() == nil {
		out, _ := exec.Command(aegis, "approvals", "--json", "--socket", socket).Output()
		var p struct {
			ID   string `json:"id"`
			Tool string `json:"tool"`
		}
		if json.Unmarshal(out, &p) == nil && p.ID != "" {
			if p.Tool != `"get-tiny-image"` {
				t.Fatalf("waiting: %s; want get-tiny-image", out)
			}
			return p.ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no call was parked before the session's deadline")
	return ""
}
