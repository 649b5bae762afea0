package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConfigNewUser is the flow a new user follows, with nothing but a
// fresh HOME: README's install (go install from the clone), aegis keygen
// (the default key), a Claude Desktop configuration naming
// server-everything and server-filesystem, aegis config wrap (finding it
// where Claude Desktop keeps it), then the official TypeScript SDK client
// starts each server exactly as the rewritten configuration says (its
// command, args and env) and calls tools, and the MCP Inspector CLI does
// the same from the file in its config-file mode; aegis log and aegis
// verify then read the logs wrap chose by default, under HOME. aegis
// config unwrap gives back the file as it was.
func TestConfigNewUser(t *testing.T) {
	t.Parallel()              // it waits on Node and the children more than it runs
	argv := everythingArgv(t) // node …/server-everything/dist/index.js stdio
	node := argv[0]
	u := startNewUser(t)
	aegis, home, project, env := u.aegis, u.home, u.project, u.env
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return u.run(t, args...)
	}
	fsEntry, err := filepath.Abs(filesystemEntry)
	if err != nil {
		t.Fatal(err)
	}

	code, pub, errOut := run("keygen")
	if code != 0 {
		t.Fatalf("aegis keygen = exit %d; want 0\n%s", code, errOut)
	}
	pub = strings.TrimSpace(pub)
	keyPub := filepath.Join(home, ".config", "aegis", "signing.key.pub")
	if _, err := os.Stat(keyPub); err != nil {
		t.Fatalf("aegis keygen wrote no %s: %v", keyPub, err)
	}

	cfgPath := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	cfg := `{
  "mcpServers": {
    "everything": {
      "command": ` + quoteJSON(node) + `,
      "args": [` + quoteJSON(argv[1]) + `, "stdio"],
      "env": {
        "AEGIS_INTEROP_MARK": "kept through aegis"
      }
    },
    "filesystem": {
      "command": ` + quoteJSON(node) + `,
      "args": [` + quoteJSON(fsEntry) + `, ` + quoteJSON(project) + `]
    },
    "remote": {
      "url": "https://mcp.example.com/mcp"
    }
  }
}
`
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := run("config", "wrap")
	if code != 0 || !strings.Contains(out, "Claude Desktop") || !strings.Contains(out, cfgPath) {
		t.Fatalf("aegis config wrap = exit %d; want 0, finding %s\n%s%s", code, cfgPath, out, errOut)
	}
	if strings.Contains(out, "no signing key") {
		t.Errorf("aegis config wrap says there is no signing key, after keygen made the default one:\n%s", out)
	}
	servers := readServers(t, cfgPath)
	entry := servers["everything"]
	wantArgs := []string{"wrap", "--name=everything", "--client=claude-desktop", node, argv[1], "stdio"}
	if entry.Command != aegis || !slices.Equal(entry.Args, wantArgs) || entry.Env["AEGIS_INTEROP_MARK"] != "kept through aegis" {
		t.Fatalf("rewritten entry = %+v; want %s %v with its env", entry, aegis, wantArgs)
	}
	if r := servers["remote"]; r.URL != "https://mcp.example.com/mcp" || r.Command != "" {
		t.Errorf("remote entry rewritten: %+v", r)
	}

	// The client starts the entry as Claude Desktop does: its command and
	// args, with its env added to the client's (HOME among it).
	script, err := filepath.Abs("policy_client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	clientArgv := []string{script, "/usr/bin/env"}
	for k, v := range entry.Env {
		clientArgv = append(clientArgv, k+"="+v)
	}
	clientArgv = append(append(clientArgv, entry.Command), entry.Args...)
	calls := `[{"tool":"echo","args":{"message":"through the client's configuration"}},{"tool":"get-env","args":{}}]`
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	client := exec.CommandContext(ctx, node, clientArgv...)
	client.Dir, client.Env = project, append(slices.Clip(env), "AEGIS_INTEROP_CALLS="+calls)
	var stdout, stderr bytes.Buffer
	client.Stdout, client.Stderr = &stdout, &stderr
	if err := client.Run(); err != nil {
		t.Fatalf("node policy_client.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	results := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(results) != 2 || !strings.Contains(results[0], "through the client's configuration") || strings.Contains(results[0], `"error"`) {
		t.Fatalf("the TS SDK client got\n%s\nwant the echo and get-env results\nstderr:\n%s", stdout.String(), stderr.String())
	}
	t.Logf("get-env through aegis: %.300s…", results[1])
	if !strings.Contains(results[1], "kept through aegis") {
		t.Errorf("get-env through aegis = %s; want the entry's env (AEGIS_INTEROP_MARK) to reach the server", results[1])
	}

	// The second server, by the same client, and both by the Inspector
	// CLI reading the file itself.
	fsE := servers["filesystem"]
	fsArgv := append([]string{script, fsE.Command}, fsE.Args...)
	fsCalls := `[{"tool":"list_allowed_directories","args":{}}]`
	fsClient := exec.CommandContext(ctx, node, fsArgv...)
	fsClient.Dir, fsClient.Env = project, append(slices.Clip(env), "AEGIS_INTEROP_CALLS="+fsCalls)
	if out, err := fsClient.Output(); err != nil || !strings.Contains(string(out), project) {
		t.Fatalf("the TS SDK client through the wrapped filesystem entry: %v\n%s", err, out)
	}
	for _, c := range []struct{ server, tool, want string }{
		{"everything", "echo", "Echo: from the inspector"},
		{"filesystem", "list_allowed_directories", project},
	} {
		got := runInspectorEnv(t, env, "--config", cfgPath, "--server", c.server, "--method", "tools/call", "--tool-name", c.tool, "--tool-arg", "message=from the inspector")
		if !strings.Contains(got, c.want) {
			t.Errorf("the Inspector CLI through the wrapped %s entry printed\n%s\nwant %q", c.server, got, c.want)
		}
	}

	// The logs the defaults chose: one per server under HOME.
	var logs []string
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			logs = append(logs, p)
		}
		return nil
	})
	wantLog := filepath.Join(home, ".local", "state", "aegis", "everything.jsonl")
	fsLog := filepath.Join(home, ".local", "state", "aegis", "filesystem.jsonl")
	if !slices.Equal(logs, []string{wantLog, fsLog}) {
		t.Fatalf("audit logs under HOME: %v; want %s and %s", logs, wantLog, fsLog)
	}
	code, out, errOut = run("log", fsLog)
	if code != 0 || strings.Count(out, "list_allowed_directories") != 2 {
		t.Errorf("aegis log %s = exit %d; want the two list_allowed_directories calls\n%s%s", fsLog, code, out, errOut)
	}
	if code, out, errOut = run("verify", "--key", "@"+keyPub, fsLog); code != 0 {
		t.Errorf("aegis verify %s = exit %d\n%s%s", fsLog, code, out, errOut)
	}
	code, out, errOut = run("log", wantLog)
	if code != 0 || strings.Count(out, "echo") != 2 || !strings.Contains(out, "get-env") {
		t.Errorf("aegis log %s = exit %d; want the echo and get-env calls\n%s%s", wantLog, code, out, errOut)
	}
	code, out, errOut = run("verify", "--key", "@"+keyPub, wantLog)
	if code != 0 || !strings.Contains(out, "pinned") || strings.Contains(out, "unpinned") {
		t.Errorf("aegis verify --key @%s %s = exit %d; want 0, pinned\n%s%s", keyPub, wantLog, code, out, errOut)
	}
	t.Logf("aegis verify: %s", strings.TrimSpace(out))
	checkAuditKey(t, wantLog, pub)

	code, out, errOut = run("config", "unwrap", cfgPath)
	if code != 0 {
		t.Fatalf("aegis config unwrap = exit %d\n%s%s", code, out, errOut)
	}
	if data, _ := os.ReadFile(cfgPath); string(data) != cfg {
		t.Errorf("after unwrap the configuration is\n%s\nwant the original\n%s", data, cfg)
	}
}

// checkAuditKey: the log's session was signed with a session key that
// the key keygen made certifies.
func checkAuditKey(t *testing.T, path, pub string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var r auditRecord
	if err := json.Unmarshal(line, &r); err != nil || r.Kind != "session_start" || r.Cert == nil || r.Cert.Root != pub {
		t.Errorf("first record %s (%v); want a session_start whose session key %s certifies", line, err, pub)
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// installAegis installs aegis into gobin the way README says, from this
// clone: CGO_ENABLED=0 go install ./cmd/aegis. The install runs once per
// test binary (installOnce, which every test's aegis comes from); each
// new user's gobin holds what it installed.
func installAegis(t *testing.T, gobin string) string {
	t.Helper()
	if err := os.MkdirAll(gobin, 0o755); err != nil {
		t.Fatal(err)
	}
	return buildAegis(t, gobin)
}
