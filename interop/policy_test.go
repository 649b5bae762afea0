package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// interopPolicy denies one of server-everything's tools, holds one for
// approval and rate-limits a third to one call an hour.
const interopPolicy = `version: 1
default: allow
rules:
  - tool: get-env
    action: deny
  - tool: get-tiny-image
    action: approve
  - tool: get-sum
    action: allow
    rate: 1/h
`

// policyCall is a call of the refusal scripts and what must come of it:
// code "" is a result from the server, else a refusal with that
// data.aegis.code.
type policyCall struct {
	tool string
	args map[string]any
	code string
}

var policyCalls = []policyCall{
	{"echo", map[string]any{"message": "before"}, ""},
	{"get-env", map[string]any{}, "POLICY_DENIED"},
	{"get-tiny-image", map[string]any{}, "PENDING_APPROVAL"},
	{"get-sum", map[string]any{"a": 1, "b": 2}, ""},
	{"get-sum", map[string]any{"a": 3, "b": 4}, "RATE_LIMITED"},
	{"echo", map[string]any{"message": "after"}, ""},
}

// wrapWithPolicy builds aegis and returns the argv that runs
// server-everything behind aegis wrap --policy, and the audit path.
func wrapWithPolicy(t *testing.T) ([]string, string, string) {
	t.Helper()
	argv := everythingArgv(t)
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	keygen(t, aegis, key)
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(interopPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.jsonl")
	// --grace 1s: after so short a session server-everything does not exit
	// at stdin EOF (README: it handles only SIGINT), so aegis ends it with
	// SIGTERM after the grace period, and exits 143 as the child did.
	// --approval-timeout 0: the approve rule refuses at once
	// (approvals_test.go parks).
	return append([]string{aegis, "wrap", "--grace", "1s", "--policy", pol, "--approval-timeout", "0", "--audit", audit, "--signing-key", key, "--"}, argv...), aegis, audit
}

// aegisData is data.aegis of a refusal.
type aegisData struct {
	Layer        string `json:"layer"`
	Code         string `json:"code"`
	Rule         string `json:"rule"`
	RetryAfterMS *int64 `json:"retry_after_ms"`
}

// checkRefusalData holds a refusal's error data to README's "Policy" section: data.aegis with
// layer wrap and the code, rule where a rule decided, retry_after_ms for
// RATE_LIMITED, and never data.elicitations.
func checkRefusalData(t *testing.T, what string, data json.RawMessage, code string) {
	t.Helper()
	var d struct {
		Aegis        *aegisData      `json:"aegis"`
		Elicitations json.RawMessage `json:"elicitations"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Aegis == nil {
		t.Errorf("%s: error data %s; want data.aegis", what, data)
		return
	}
	a := d.Aegis
	if a.Layer != "wrap" || a.Code != code || a.Rule == "" {
		t.Errorf("%s: data.aegis %+v; want layer wrap, code %s and a rule", what, a, code)
	}
	if (a.RetryAfterMS != nil) != (code == "RATE_LIMITED") {
		t.Errorf("%s: retry_after_ms %v; want it for RATE_LIMITED only", what, a.RetryAfterMS)
	}
	if d.Elicitations != nil {
		t.Errorf("%s: error data carries elicitations %s; a refusal must not look like URL elicitation", what, d.Elicitations)
	}
}

// TestPolicyRefusalGoSDK: the official Go SDK client, given refusals by aegis
// wrap --policy, surfaces each as an ordinary *jsonrpc.Error with code
// -32042 and data.aegis.code, not as a URL elicitation (its elicitation
// handler is never called), and the session goes on.
func TestPolicyRefusalGoSDK(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv, aegis, audit := wrapWithPolicy(t)
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-interop", Version: "1.0.0"}, nil)
	var stderr syncBuffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	for _, c := range policyCalls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		what := "tools/call " + c.tool
		if c.code == "" {
			if err != nil || res.IsError {
				t.Errorf("%s = %v, %+v; want a result from the server", what, err, res)
			}
			continue
		}
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			t.Errorf("%s = %v (%T); want a *jsonrpc.Error", what, err, err)
			continue
		}
		if rpcErr.Code != -32042 || rpcErr.Message != "aegis wrap refused this tools/call" {
			t.Errorf("%s: error %d %q; want -32042 (which the SDK also names CodeURLElicitationRequired) and aegis's message", what, rpcErr.Code, rpcErr.Message)
		}
		checkRefusalData(t, what, rpcErr.Data, c.code)
		t.Logf("Go SDK: %s → %T %v, data %s", c.tool, err, err, rpcErr.Data)
	}
	var exitErr *exec.ExitError
	if err := cs.Close(); err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == 143) {
		t.Errorf("close: %v; want a clean exit or 143 (server-everything ended by SIGTERM)\n%s", err, stderr.String())
	}
	checkPolicyAudit(t, aegis, audit)
}

// TestPolicyRefusalTypeScriptSDK: the official TypeScript SDK client (1.32)
// surfaces each refusal as an ordinary McpError carrying data.aegis.code —
// not as UrlElicitationRequiredError, which it makes of -32042 only when
// the data has elicitations — and the session goes on.
func TestPolicyRefusalTypeScriptSDK(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv, aegis, audit := wrapWithPolicy(t)
	node := argv[len(argv)-3] // …-- node server-everything stdio
	script, err := filepath.Abs("policy_client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		t.Fatalf("the TypeScript SDK is not installed (%v).\nRun `npm ci` in interop/ first.", err)
	}
	var calls []map[string]any
	for _, c := range policyCalls {
		calls = append(calls, map[string]any{"tool": c.tool, "args": c.args})
	}
	callsJSON, _ := json.Marshal(calls)
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, argv...)...)
	cmd.Env = append(os.Environ(), "AEGIS_INTEROP_CALLS="+string(callsJSON))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node policy_client.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	type tsError struct {
		Class            string          `json:"class"`
		IsMcpError       bool            `json:"isMcpError"`
		IsURLElicitation bool            `json:"isUrlElicitation"`
		Code             int             `json:"code"`
		Message          string          `json:"message"`
		Data             json.RawMessage `json:"data"`
	}
	var lines []struct {
		Tool   string          `json:"tool"`
		Result json.RawMessage `json:"result"`
		Error  *tsError        `json:"error"`
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var l struct {
			Tool   string          `json:"tool"`
			Result json.RawMessage `json:"result"`
			Error  *tsError        `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("policy_client.mjs printed %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) != len(policyCalls) {
		t.Fatalf("policy_client.mjs printed %d lines; want %d\n%s\nstderr:\n%s", len(lines), len(policyCalls), stdout.String(), stderr.String())
	}
	for i, c := range policyCalls {
		l := lines[i]
		what := "tools/call " + c.tool
		if c.code == "" {
			if l.Error != nil || l.Result == nil || strings.Contains(string(l.Result), `"isError":true`) {
				t.Errorf("%s = %s %+v; want a result from the server", what, l.Result, l.Error)
			}
			continue
		}
		e := l.Error
		if e == nil {
			t.Errorf("%s = result %s; want a refusal", what, l.Result)
			continue
		}
		if e.Class != "McpError" || !e.IsMcpError || e.IsURLElicitation || e.Code != -32042 || !strings.Contains(e.Message, "aegis wrap refused this tools/call") {
			t.Errorf("%s: the TS SDK surfaced %+v; want an ordinary McpError -32042, not UrlElicitationRequiredError", what, e)
		}
		checkRefusalData(t, what, e.Data, c.code)
		t.Logf("TS SDK: %s → %s %d %q, data %s", c.tool, e.Class, e.Code, e.Message, e.Data)
	}
	checkPolicyAudit(t, aegis, audit)
}

// checkPolicyAudit: the log verifies, and it records one refused intent per
// refused call, each with its verdict.
func checkPolicyAudit(t *testing.T, aegis, audit string) {
	t.Helper()
	if out, err := exec.Command(aegis, "verify", audit).CombinedOutput(); err != nil {
		t.Errorf("aegis verify %s: %v\n%s", audit, err, out)
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r struct {
			Kind   string
			Tool   *string
			Policy struct{ Verdict string }
		}
		json.Unmarshal(line, &r)
		if r.Kind == "intent" && r.Tool != nil {
			verdicts = append(verdicts, *r.Tool+" "+r.Policy.Verdict)
		}
	}
	want := []string{"echo allowed", "get-env denied", "get-tiny-image pending_approval", "get-sum allowed", "get-sum rate_limited", "echo allowed"}
	if strings.Join(verdicts, ", ") != strings.Join(want, ", ") {
		t.Errorf("intents %v; want %v", verdicts, want)
	}
}
