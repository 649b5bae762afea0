package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptSDKv2BothRevisions drives the official TypeScript SDK v2
// client and server through aegis wrap --policy on each revision the
// client speaks: 2026-07-28 (pinned: server/discover, each request
// carrying its revision in _meta, no initialize) and 2025-11-25 (the
// initialize handshake). On both, the allowed call reaches the server and
// is answered, the denied one is refused with -32042 and never runs, and
// the log records each call with its verdict and status and verifies
// against the key.
func TestTypeScriptSDKv2BothRevisions(t *testing.T) {
	t.Parallel() // it waits on Node and the children more than it runs
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	key := filepath.Join(dir, "key")
	pub := keygen(t, aegis, key)
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\ndefault: allow\nrules:\n  - tool: delete_all\n    action: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	node := lookPath(t, "node")
	v2 := filepath.Join("testdata", "v2")
	tests := []struct {
		revision string // the client's versionNegotiation
		modern   bool   // answers carry the 2026-07-28 per-result _meta
	}{
		{"2026-07-28", true},
		{"legacy", false},
	}
	for _, tt := range tests {
		t.Run(tt.revision, func(t *testing.T) {
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			cmd := exec.Command(node, filepath.Join(v2, "client.mjs"), tt.revision,
				aegis, "wrap", "--audit", audit, "--signing-key", key, "--policy", pol, "--",
				node, filepath.Join(v2, "server.mjs"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("client: %v\n%s", err, stderr.String())
			}
			var got struct {
				Echo struct {
					Meta    map[string]json.RawMessage `json:"_meta"`
					Content []struct{ Text string }
				}
				Del struct {
					Error   string
					Code    int
					Content []struct{ Text string }
				}
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("client printed %q: %v", out, err)
			}
			if len(got.Echo.Content) != 1 || got.Echo.Content[0].Text != "hi" {
				t.Errorf("echo = %s; want the server's answer hi", out)
			}
			if _, ok := got.Echo.Meta["io.modelcontextprotocol/serverInfo"]; ok != tt.modern {
				t.Errorf("echo's _meta has serverInfo = %v; want %v (the revision spoken)", ok, tt.modern)
			}
			if got.Del.Code != -32042 || len(got.Del.Content) != 0 {
				t.Errorf("delete_all = %s; want refused with -32042, never run", out)
			}

			logOut, err := exec.Command(aegis, "log", "--json", audit).Output()
			if err != nil {
				t.Fatalf("aegis log: %v", err)
			}
			want := map[string][2]string{"echo": {"allowed", "ok"}, "delete_all": {"denied", "host_denied"}}
			seen := map[string]bool{}
			sc := bufio.NewScanner(bytes.NewReader(logOut))
			for sc.Scan() {
				var row struct{ Type, Tool, Verdict, Status string }
				if err := json.Unmarshal(sc.Bytes(), &row); err != nil || row.Type != "call" {
					continue
				}
				w, ok := want[row.Tool]
				if !ok || row.Verdict != w[0] || row.Status != w[1] {
					t.Errorf("log row %s; want tool echo (allowed, ok) or delete_all (denied, host_denied)", sc.Bytes())
				}
				seen[row.Tool] = true
			}
			if len(seen) != len(want) {
				t.Errorf("log has calls %v; want echo and delete_all\n%s", seen, logOut)
			}
			if v, err := exec.Command(aegis, "verify", "--key", pub, audit).CombinedOutput(); err != nil || !strings.Contains(string(v), "VALID") {
				t.Errorf("aegis verify --key: %v\n%s", err, v)
			}
		})
	}
}
