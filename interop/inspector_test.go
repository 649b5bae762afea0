package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inspectorCLI is the MCP Inspector's command line (0.15, the last that
// runs on Node 20), as `npx @modelcontextprotocol/inspector --cli` runs it.
const inspectorCLI = "node_modules/@modelcontextprotocol/inspector-cli/build/cli.js"

// runInspector runs the Inspector CLI with args and returns what it
// printed; it fails the test if the Inspector fails.
func runInspector(t *testing.T, args ...string) string {
	t.Helper()
	return runInspectorEnv(t, nil, args...)
}

// runInspectorEnv is runInspector in the environment env (nil: this
// process's).
func runInspectorEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cli, err := filepath.Abs(inspectorCLI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("the MCP Inspector CLI is not installed (%v): run `npm ci` in interop/", err)
	}
	// The bound kills the Inspector through the command's context, which
	// os/exec orders after Start: a goroutine of our own reading
	// cmd.Process when its timer fires races with Start's write of it.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{cli, "--cli"}, args...)...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inspector --cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestInspectorCLI drives server-everything with the Inspector CLI through
// aegis wrap in each way a user writes it: the command and its flags
// followed by the Inspector's own (--method …), with and without wrap's
// --, and the Inspector's config-file mode, whose entry's args the
// Inspector extends with its own flags. Each call is answered as it is
// without aegis, and recorded.
func TestInspectorCLI(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	argv := everythingArgv(t)
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub := keygen(t, aegis, key)
	audit := filepath.Join(dir, "audit.jsonl")
	echo := []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=through aegis"}
	const want = `"text": "Echo: through aegis"`

	direct := runInspector(t, append(append([]string{}, argv...), echo...)...)
	if !strings.Contains(direct, want) {
		t.Fatalf("the Inspector's call without aegis printed %q; want %s", direct, want)
	}
	wrap := []string{aegis, "wrap", "--audit", audit, "--signing-key", key}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no --", append(append(append([]string{}, wrap...), argv...), echo...)},
		{"with --", append(append(append(append([]string{}, wrap...), "--"), argv...), echo...)},
	} {
		if got := runInspector(t, tc.args...); got != direct {
			t.Errorf("%s: through aegis the Inspector printed\n%s\nwithout it\n%s", tc.name, got, direct)
		}
	}

	// Config-file mode: the entry is what `aegis config wrap` writes.
	config := filepath.Join(dir, "mcp.json")
	orig := map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": argv[0], "args": argv[1:]}}}
	b, _ := json.Marshal(orig)
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A file in no client's place: its client is named (the Inspector's
	// config-file mode), as config wrap's refusal without it says.
	cw := exec.Command(aegis, "config", "wrap", "--aegis", aegis, "--client", "inspector", config)
	if out, err := cw.CombinedOutput(); err != nil {
		t.Fatalf("aegis config wrap: %v\n%s", err, out)
	}
	// The entry logs to the default place; point it at this test's log
	// and key by adding wrap's flags, as a user with other paths would.
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	b, _ = os.ReadFile(config)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	e := cfg.MCPServers["everything"]
	if e.Command != aegis || len(e.Args) == 0 || e.Args[0] != "wrap" {
		t.Fatalf("aegis config wrap wrote %s; want the entry run through %s wrap", b, aegis)
	}
	e.Args = append([]string{"wrap", "--audit", audit, "--signing-key", key}, e.Args[1:]...)
	b, _ = json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": e}})
	os.WriteFile(config, b, 0o600)
	if got := runInspector(t, append([]string{"--config", config, "--server", "everything"}, echo...)...); got != direct {
		t.Errorf("config-file mode: through aegis the Inspector printed\n%s\nwithout it\n%s\nconfig: %s", got, direct, b)
	}

	out, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput()
	if err != nil {
		t.Errorf("aegis verify: %v\n%s", err, out)
	}
	logOut, err := exec.Command(aegis, "log", "--json", audit).Output()
	if err != nil {
		t.Errorf("aegis log --json: %v", err)
	}
	if n := strings.Count(string(logOut), `"tool":"echo"`); n != 3 {
		t.Errorf("aegis log shows %d echo calls; want 3 (one per Inspector run)\n%s", n, logOut)
	}
}
