package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newUser is a user with nothing but a fresh HOME (no XDG_* folders of
// the machine's) and aegis installed as README says.
type newUser struct {
	aegis, home, project string
	env                  []string
}

func startNewUser(t *testing.T) *newUser {
	t.Helper()
	dir := t.TempDir()
	u := &newUser{aegis: installAegis(t, filepath.Join(dir, "bin")), home: filepath.Join(dir, "home"), project: filepath.Join(dir, "project")}
	for _, d := range []string{u.home, u.project} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "HOME" && !strings.HasPrefix(k, "XDG_") {
			u.env = append(u.env, kv)
		}
	}
	u.env = append(u.env, "HOME="+u.home)
	return u
}

// command is aegis with args, run as the user in the project folder.
func (u *newUser) command(args ...string) *exec.Cmd {
	cmd := exec.Command(u.aegis, args...)
	cmd.Dir, cmd.Env = u.project, u.env
	return cmd
}

// run runs aegis with args and returns its exit status, stdout and stderr.
func (u *newUser) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := u.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("aegis %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// client runs the TypeScript SDK client (policy_client.mjs) as the user
// against the server argv starts, making calls; it returns the client's
// result lines.
func (u *newUser) client(t *testing.T, calls string, argv ...string) []string {
	t.Helper()
	script, err := filepath.Abs("policy_client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, argv...)...)
	cmd.Dir, cmd.Env = u.project, append(slices.Clip(u.env), "AEGIS_INTEROP_CALLS="+calls)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node policy_client.mjs %v: %v\nstdout:\n%s\nstderr:\n%s", argv, err, stdout.String(), stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

// serverEntry is an entry of a client's mcpServers, as config wrap
// leaves it.
type serverEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
}

// readServers reads the mcpServers of the client configuration at path.
func readServers(t *testing.T, path string) map[string]serverEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]serverEntry `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("the configuration %s is not JSON: %v\n%s", path, err, data)
	}
	return cfg.MCPServers
}

// seqRow matches a call's row of aegis log's table: its session, its
// seqs (intent→outcome) and its call id, then the tool.
var seqRow = regexp.MustCompile(`(?m)^\S+ \S+\s+([0-9a-f]{8})\s+(\d+)→(\d+)\s+\S+\s+echo\s`)

// TestNewUser is issue 26's first hour as a new user meets it, from a
// fresh HOME with aegis installed as README says: wrap with no flags but
// the command, recording where log and verify find it without a FILE, to
// a log named after the server past env and its assignments (points 1,
// 2); config wrap marks the client, and the session line shows it (3);
// the SEQ column's outcome seq proven with prove inclusion on the
// server's NAME (4); the Inspector 2.x CLI reaching wrap --listen with
// the default token through --header (12), its session, which it never
// DELETEs, ended for idleness as the start line said and recorded idle
// (13); --listen of a command that does not exist exits 127 with stdio's
// sentence (14).
func TestNewUser(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	u := startNewUser(t)
	argv := everythingArgv(t) // node …/server-everything/dist/index.js stdio
	state := filepath.Join(u.home, ".local", "state", "aegis")
	code, pub, errOut := u.run(t, "keygen")
	if code != 0 {
		t.Fatalf("aegis keygen = exit %d\n%s", code, errOut)
	}
	pub = strings.TrimSpace(pub)

	// Points 1 and 2: no flags; the log is named after the server.
	echo := func(msg string) string { return `[{"tool":"echo","args":{"message":"` + msg + `"}}]` }
	serverArgv := append([]string{"env", "AEGIS_INTEROP_MARK=1"}, argv...)
	if got := u.client(t, echo("no flags"), append([]string{u.aegis, "wrap"}, serverArgv...)...); len(got) != 1 || !strings.Contains(got[0], "Echo: no flags") {
		t.Fatalf("the TS SDK client through aegis wrap %v got %q; want the echo", serverArgv, got)
	}
	logPath := filepath.Join(state, "server-everything.jsonl")
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("aegis wrap env X=1 node …/server-everything/dist/index.js recorded no %s: %v", logPath, err)
	}
	code, out, errOut := u.run(t, "log")
	if code != 0 || !strings.Contains(out, state) || !regexp.MustCompile(`(?m)^server-everything\s+1\s`).MatchString(out) {
		t.Errorf("aegis log with no FILE = exit %d; want the state folder's servers, server-everything with 1 log\n%s%s", code, out, errOut)
	}
	code, out, errOut = u.run(t, "verify")
	if code != 0 || !strings.Contains(out, "VALID (pinned to "+pub+", the default key ") {
		t.Errorf("aegis verify with no FILE = exit %d; want VALID, pinned to the default key %s\n%s%s", code, pub, out, errOut)
	}

	// Point 4: a session with checkpoints; the SEQ column's outcome seq
	// of its call, proven against the checkpoint.
	checkpoint := filepath.Join(u.home, "audit.checkpoint")
	u.client(t, echo("to prove"), append([]string{u.aegis, "wrap", "--checkpoint-file", checkpoint}, serverArgv...)...)
	code, out, errOut = u.run(t, "log", "server-everything")
	rows := seqRow.FindAllStringSubmatch(out, -1)
	if code != 0 || len(rows) != 2 {
		t.Fatalf("aegis log server-everything = exit %d, %d echo rows with a SEQ; want 0, 2\n%s%s", code, len(rows), out, errOut)
	}
	outcome := rows[1][3]
	code, proof, errOut := u.run(t, "prove", "inclusion", "--checkpoint", checkpoint, "--seq", outcome, "server-everything")
	if code != 0 || !strings.Contains(proof, `"line": "{\"v\":2,\"seq\":`+outcome+`,`) || !strings.Contains(proof, `\"kind\":\"outcome\"`) {
		t.Fatalf("aegis prove inclusion --seq %s server-everything = exit %d; want the outcome's line\n%.600s%s", outcome, code, proof, errOut)
	}
	proofFile := filepath.Join(u.home, "call.proof")
	if err := os.WriteFile(proofFile, []byte(proof), 0o600); err != nil {
		t.Fatal(err)
	}
	keyPub := filepath.Join(u.home, ".config", "aegis", "signing.key.pub")
	if code, out, errOut := u.run(t, "prove", "check", "--key", "@"+keyPub, "--checkpoint", checkpoint, "--proof", proofFile); code != 0 || !strings.HasPrefix(out, "ok: the record with seq "+outcome+" ") {
		t.Errorf("aegis prove check = exit %d; want ok for seq %s\n%s%s", code, outcome, out, errOut)
	}

	// Point 3: config wrap marks the client; the session line shows it.
	cfgPath := filepath.Join(u.home, ".config", "Claude", "claude_desktop_config.json")
	cfg := `{"mcpServers": {"everything": {"command": ` + quoteJSON(argv[0]) + `, "args": [` + quoteJSON(argv[1]) + `, "stdio"]}}}` + "\n"
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := u.run(t, "config", "wrap"); code != 0 {
		t.Fatalf("aegis config wrap = exit %d\n%s%s", code, out, errOut)
	}
	entry := readServers(t, cfgPath)["everything"]
	if !slices.Contains(entry.Args, "--client=claude-desktop") {
		t.Fatalf("config wrap's entry %s %q; want --client=claude-desktop in it", entry.Command, entry.Args)
	}
	u.client(t, echo("from Claude Desktop's entry"), append([]string{entry.Command}, entry.Args...)...)
	code, out, errOut = u.run(t, "log", "everything")
	if code != 0 || !strings.Contains(out, ": server everything (client claude-desktop); child ") {
		t.Errorf("aegis log everything = exit %d; want the session line naming the server and its client\n%s%s", code, out, errOut)
	}

	// Points 12 and 13: wrap --listen in its default token mode, the
	// Inspector 2.x CLI with --header, and its session, never DELETEd,
	// ended by --idle-timeout as the start line says.
	listen := u.command(append([]string{"wrap", "--listen", "127.0.0.1:0", "--idle-timeout", "2s", "--grace", "1s"}, argv[:2]...)...)
	stderr, err := listen.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := listen.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { listen.Wait(); close(exited) }()
	t.Cleanup(func() { listen.Process.Kill(); <-exited })
	serving := make(chan string, 1)
	var listenErr bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			listenErr.WriteString(sc.Text() + "\n")
			if rest, ok := strings.CutPrefix(sc.Text(), "aegis: serving MCP at "); ok {
				serving <- rest
			}
		}
		close(serving)
	}()
	var line string
	select {
	case line = <-serving:
	case <-time.After(30 * time.Second):
	}
	tokenPath := filepath.Join(state, "server-everything.token")
	if want := "(bearer token in " + tokenPath + "; a session no request uses for 2s ends, --idle-timeout)"; !strings.HasSuffix(line, want) {
		t.Fatalf("wrap --listen's serving line %q; want it to end %q", line, want)
	}
	token, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	url := strings.Fields(line)[0]
	got, err := runInspector2(t, url, "--transport", "http", "--header", "Authorization: Bearer "+strings.TrimSpace(string(token)),
		"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=from the inspector")
	if err != nil || !strings.Contains(got, "Echo: from the inspector") {
		t.Fatalf("the Inspector 2.x CLI with --header against wrap --listen: %v\n%s", err, got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, out, _ = u.run(t, "log", "server-everything")
		if slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
			return strings.HasPrefix(l, "session ") && strings.Contains(l, " ended ") && strings.Contains(l, ": idle, ")
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session ended idle 30s after the Inspector's call, with --idle-timeout 2s:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	listen.Process.Signal(syscall.SIGTERM)
	<-exited
	if code := listen.ProcessState.ExitCode(); code != 0 {
		t.Errorf("wrap --listen after SIGTERM = exit %d; want 0", code)
	}
	if code, out, errOut := u.run(t, "verify", "server-everything"); code != 0 {
		t.Errorf("aegis verify server-everything = exit %d\n%s%s", code, out, errOut)
	}

	// Point 14: --listen of a command that does not exist.
	code, _, errOut = u.run(t, "wrap", "--listen", "127.0.0.1:0", "aegis-interop-no-such-server")
	if code != 127 || !strings.Contains(errOut, "check the command's spelling and PATH") || strings.Contains(errOut, "serving MCP") {
		t.Errorf("wrap --listen of a missing command = exit %d; want 127 with stdio's sentence, never serving\n%s", code, errOut)
	}
}

// TestNewUserNpxKilled: a server run through npx (a local package, run
// offline) that SIGKILL kills reaches aegis as npx's exit status 137;
// wrap reads it as 128+9, honest that it saw a status, with the OOM hint,
// and aegis log's end line says so too (issue 26 point 9).
func TestNewUserNpxKilled(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	u := startNewUser(t)
	pkg := filepath.Join(u.project, "node_modules", "killed-server")
	bin := filepath.Join(u.project, "node_modules", ".bin")
	for _, d := range []string{pkg, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, content := range map[string]string{
		filepath.Join(u.project, "package.json"): `{"name":"project","version":"1.0.0","dependencies":{"killed-server":"1.0.0"}}`,
		filepath.Join(pkg, "package.json"):       `{"name":"killed-server","version":"1.0.0","bin":{"killed-server":"server.js"}}`,
		// Reads its first line, then dies of SIGKILL as an OOM kill would.
		filepath.Join(pkg, "server.js"): "#!/usr/bin/env node\nprocess.stdin.once('data', () => process.kill(process.pid, 'SIGKILL'));\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../killed-server/server.js", filepath.Join(bin, "killed-server")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := u.run(t, "keygen"); code != 0 {
		t.Fatalf("aegis keygen = exit %d\n%s", code, errOut)
	}
	// npx takes seconds to exit after its child has died and its stdin
	// closed: --grace waits for it.
	cmd := u.command("wrap", "--grace", "60s", "npx", "--offline", "killed-server")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	timer := time.AfterFunc(sessionTimeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 137 {
		t.Fatalf("wrap npx … of a server SIGKILL kills = exit %d; want 137 (npx's)\n%s", code, stderr.String())
	}
	for _, w := range []string{`"npx" exited with status 137`, "137 is 128+9", "died of SIGKILL", "aegis saw an exit status, not the signal", "dmesg"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("wrap's stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	code, out, errOut := u.run(t, "log", "killed-server")
	if code != 0 || !strings.Contains(out, "exit 137 (128+9, as a shell reports a process SIGKILL killed); 1 call, 1 unanswered") {
		t.Errorf("aegis log killed-server = exit %d; want the end line reading 137 as 128+9\n%s%s", code, out, errOut)
	}
}
