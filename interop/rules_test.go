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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rulesPolicy allows echo only for text under "ok:", and delete_all only
// when the call confirms it; a condition that cannot be evaluated (no
// confirm) refuses the call by its rule.
const rulesPolicy = `version: 1
default: deny
rules:
  - tool: echo
    action: allow
    when: 'mcp.tool.arguments.text.startsWith("ok:") && caller.transport == "stdio"'
  - tool: echo
    action: deny
  - tool: delete_all
    action: allow
    when: mcp.tool.arguments.confirm == true
`

const (
	rulesEcho   = `rules[0] echo when mcp.tool.arguments.text.startsWith("ok:") && caller.transport == "stdio"`
	rulesDelete = `rules[2] delete_all when mcp.tool.arguments.confirm == true`
)

// auditIntent is what the rules tests read of an intent.
type auditIntent struct {
	Kind     string
	Tool     *string
	Revision *string
	Policy   struct {
		Verdict, Rule, Set, Reason string
		Line                       int
	}
	Status string // a policy_reload's
	Set    string // a policy_reload's
}

func readAudit(t *testing.T, path string) []auditIntent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A live log's file runs on in zeros (its preallocated tail), and its
	// last line may be half written.
	if i := bytes.IndexByte(data, 0); i >= 0 {
		data = data[:i]
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	var out []auditIntent
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r auditIntent
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %q: %v", clip(string(line)), err)
		}
		if r.Kind == "intent" || r.Kind == "policy_reload" {
			out = append(out, r)
		}
	}
	return out
}

// TestRulesTypeScriptSDKv2: the official TypeScript SDK v2 client, on both
// revisions, through aegis wrap --policy with conditions on arguments: the
// call whose arguments satisfy a rule runs; one that does not is refused
// by the next rule, named in the refusal and the record; one whose
// condition errors (a missing key) is refused by its own rule, and the
// record says why. The log verifies.
func TestRulesTypeScriptSDKv2(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub := keygen(t, aegis, key)
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(rulesPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	node := lookPath(t, "node")
	v2 := filepath.Join("testdata", "v2")
	calls, _ := json.Marshal([]map[string]any{
		{"tool": "echo", "args": map[string]any{"text": "ok: hi"}},
		{"tool": "echo", "args": map[string]any{"text": "rm -rf /"}},
		{"tool": "delete_all", "args": map[string]any{}},
		{"tool": "delete_all", "args": map[string]any{"confirm": true}},
	})
	for _, revision := range []string{"2026-07-28", "legacy"} {
		t.Run(revision, func(t *testing.T) {
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			cmd := exec.Command(node, filepath.Join(v2, "rules_client.mjs"), revision,
				aegis, "wrap", "--audit", audit, "--signing-key", key, "--policy", pol, "--",
				node, filepath.Join(v2, "server.mjs"))
			cmd.Env = append(os.Environ(), "AEGIS_INTEROP_CALLS="+string(calls))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("client: %v\n%s", err, stderr.String())
			}
			type line struct {
				Tool   string
				Result *struct{ Content []struct{ Text string } }
				Error  *struct {
					Code int
					Data json.RawMessage
				}
			}
			var got []line
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				var l line
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("client printed %q: %v", sc.Text(), err)
				}
				got = append(got, l)
			}
			if len(got) != 4 {
				t.Fatalf("client printed %d lines; want 4\n%s\n%s", len(got), out, stderr.String())
			}
			if r := got[0].Result; r == nil || len(r.Content) != 1 || r.Content[0].Text != "ok: hi" {
				t.Errorf("echo ok: hi = %s; want the server's answer", out)
			}
			if r := got[3].Result; r == nil || len(r.Content) != 1 || r.Content[0].Text != "deleted" {
				t.Errorf("delete_all confirmed = %s; want the server's answer", out)
			}
			for i, rule := range map[int]string{1: "rules[1] echo", 2: rulesDelete} {
				e := got[i].Error
				if e == nil || e.Code != -32042 {
					t.Errorf("call %d = %s; want refused with -32042", i, out)
					continue
				}
				checkRefusalData(t, got[i].Tool, e.Data, "POLICY_DENIED")
				var d struct{ Aegis aegisData }
				json.Unmarshal(e.Data, &d)
				if d.Aegis.Rule != rule {
					t.Errorf("call %d refused by %q; want %q", i, d.Aegis.Rule, rule)
				}
			}

			var rows []string
			for _, in := range readAudit(t, audit) {
				if in.Kind != "intent" {
					continue
				}
				rev := ""
				if in.Revision != nil {
					rev = *in.Revision
				}
				rows = append(rows, strings.Join([]string{*in.Tool, in.Policy.Verdict, in.Policy.Rule, itoa(in.Policy.Line), in.Policy.Reason, rev}, " | "))
			}
			rev := revision
			if revision == "legacy" {
				rev = ""
			}
			want := []string{
				"echo | allowed | " + rulesEcho + " | 4 | " + " | " + rev,
				"echo | denied | rules[1] echo | 7 | " + " | " + rev,
				"delete_all | denied | " + rulesDelete + " | 9 | condition: no such key: confirm | " + rev,
				"delete_all | allowed | " + rulesDelete + " | 9 | " + " | " + rev,
			}
			if strings.Join(rows, "\n") != strings.Join(want, "\n") {
				t.Errorf("intents\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
			}
			if v, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(v), "VALID") {
				t.Errorf("aegis verify --key: %v\n%s", err, v)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRulesHotReloadGoSDK: the official Go SDK client, in one session of
// server-everything behind aegis wrap --policy: a reload of the file
// changes which calls a condition allows, a reload that does not
// type-check is rejected and the policy in force stays, and every intent
// names the policy set it was decided under.
func TestRulesHotReloadGoSDK(t *testing.T) {
	argv := everythingArgv(t)
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	keygen(t, aegis, key)
	pol := filepath.Join(dir, "policy.yaml")
	const policyA = "version: 1\ndefault: deny\nrules:\n  - tool: echo\n    action: allow\n    when: 'mcp.tool.arguments.message.startsWith(\"a\")'\n"
	policyB := strings.Replace(policyA, `"a"`, `"b"`, 1)
	const bad = "version: 1\ndefault: allow\nrules:\n  - tool: echo\n    action: deny\n    when: 'mcp.tool.arguments.message.startsWith(1)'\n"
	if err := os.WriteFile(pol, []byte(policyA), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-interop-rules", Version: "1.0.0"}, nil)
	var stderr syncBuffer
	// --durability none: each record reaches the file as it is written, so
	// the test sees a reload recorded before any call follows it.
	cmd := exec.Command(aegis, append([]string{"wrap", "--grace", "1s", "--durability", "none", "--policy", pol, "--audit", audit, "--signing-key", key, "--"}, argv...)...)
	cmd.Stderr = &stderr
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	echo := func(msg string) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		return err
	}
	refused := func(err error) bool {
		var rpcErr *jsonrpc.Error
		return errors.As(err, &rpcErr) && rpcErr.Code == -32042
	}
	// reload writes the file by renaming over it, as editors do, and
	// waits for wrap to record the reload.
	reloads := 0
	reload := func(src string) {
		t.Helper()
		tmp := pol + ".new"
		if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, pol); err != nil {
			t.Fatal(err)
		}
		reloads++
		deadline := time.Now().Add(30 * time.Second)
		for {
			n := 0
			for _, r := range readAudit(t, audit) {
				if r.Kind == "policy_reload" {
					n++
				}
			}
			if n >= reloads {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no policy_reload record after 30s\n%s", stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := echo("a1"); err != nil {
		t.Fatalf("under A: echo a1 = %v; want allowed", err)
	}
	if err := echo("b1"); !refused(err) {
		t.Fatalf("under A: echo b1 = %v; want refused", err)
	}
	reload(policyB)
	if err := echo("a2"); !refused(err) {
		t.Errorf("under B: echo a2 = %v; want refused", err)
	}
	if err := echo("b2"); err != nil {
		t.Errorf("under B: echo b2 = %v; want allowed", err)
	}
	reload(bad)
	if err := echo("b3"); err != nil {
		t.Errorf("after a rejected reload: echo b3 = %v; want allowed (B stays)", err)
	}
	var exitErr *exec.ExitError
	if err := cs.Close(); err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == 143) {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}

	sum := func(s string) string { return "sha256:" + hash(s) }
	setA, setB := sum(policyA), sum(policyB)
	var rows []string
	for _, r := range readAudit(t, audit) {
		switch r.Kind {
		case "policy_reload":
			status, _, _ := strings.Cut(r.Status, ":")
			rows = append(rows, "reload "+r.Set+" "+status)
		case "intent":
			rows = append(rows, r.Policy.Verdict+" "+r.Policy.Set)
		}
	}
	want := []string{
		"allowed " + setA, "denied " + setA,
		"reload " + setB + " applied",
		"denied " + setB, "allowed " + setB,
		"reload " + sum(bad) + " rejected",
		"allowed " + setB,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if out, err := exec.Command(aegis, "verify", audit).CombinedOutput(); err != nil {
		t.Errorf("aegis verify: %v\n%s", err, out)
	}
}
