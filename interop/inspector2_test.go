package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inspector2Launcher is the MCP Inspector 2.x (the line that needs Node
// 22): its launcher runs the CLI with --cli, which takes --header, so it
// can present wrap --listen's bearer token.
const inspector2Launcher = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

// runInspector2 runs the Inspector 2.x CLI under Node 22 with args and
// returns what it printed and its error.
func runInspector2(t *testing.T, args ...string) (string, error) {
	t.Helper()
	node, err := filepath.Abs(node22Bin)
	if err != nil {
		t.Fatal(err)
	}
	launcher, err := filepath.Abs(inspector2Launcher)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{node, launcher} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v.\nRun `npm ci` in interop/ first: it installs Node 22 and the MCP Inspector 2.x.", err)
		}
	}
	cmd := exec.Command(node, append([]string{launcher, "--cli"}, args...)...)
	// A fresh HOME: the Inspector keeps a catalog and stored credentials
	// under it.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.WaitDelay = 5 * time.Second
	timer := time.AfterFunc(90*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInspector2TokenThroughListen: the Inspector 2.x CLI, which can send
// a header, reaches wrap --listen in its default token mode with
// --header "Authorization: Bearer TOKEN" (README's "Serving over HTTP"
// says so), its call is answered as without aegis and recorded; without
// the header it is refused and nothing reaches the child.
func TestInspector2TokenThroughListen(t *testing.T) {
	t.Parallel()
	h := startHTTPFront(t, everythingArgv(t))
	out, err := runInspector2(t, h.url, "--transport", "http", "--header", "Authorization: Bearer "+h.token,
		"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=through aegis")
	if err != nil || !strings.Contains(out, `"text": "Echo: through aegis"`) {
		t.Fatalf("inspector 2 with the token: %v\n%s\naegis:\n%s", err, out, h.stderr.String())
	}
	if out, err := runInspector2(t, h.url, "--transport", "http", "--method", "tools/list"); err == nil {
		t.Fatalf("inspector 2 without the token succeeded:\n%s", out)
	}
	h.stop(t)
	h.verify(t, 1, 1)
}
