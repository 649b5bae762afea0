package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pinServerOnly is the TypeScript SDK v2 server speaking 2026-07-28 only:
// serveStdio's legacy 'reject' answers initialize with the
// unsupported-version error.
const pinServerOnly = `
import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
serveStdio(() => {
  const s = new McpServer({ name: 'pinned', version: '1.0.0' });
  s.registerTool('echo', { description: 'Echo the text', inputSchema: z.object({ text: z.string() }) },
    async (args) => ({ content: [{ type: 'text', text: String(args?.text ?? '') }] }));
  return s;
}, { legacy: process.env.LEGACY });
`

// pinServerV1 is the TypeScript SDK v1 server, which speaks 2025-11-25
// only (initialize first).
const pinServerV1 = `
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
const s = new McpServer({ name: 'pinned', version: '1.0.0' });
s.registerTool('echo', { description: 'Echo the text', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text }] }));
await s.connect(new StdioServerTransport());
`

// TestPinAheadTypeScriptSDK: aegis pin SERVER -- CMD pins the tools of
// the TypeScript SDK v2 server that speaks only 2026-07-28 (it refuses
// initialize), over 2026-07-28; of the same server speaking both, over
// 2026-07-28 too (it answers server/discover); and of the SDK v1 server,
// which speaks only 2025-11-25, after initialize. Each says which it
// used. The v2 server's echo is one definition however it was listed
// (the v1 SDK lays out its schema otherwise).
func TestPinAheadTypeScriptSDK(t *testing.T) {
	dir := t.TempDir()
	aegis := buildAegis(t, dir)
	node := lookPath(t, "node")
	modules, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, tt := range []struct {
		name, server, legacy, want string
	}{
		{"v2 2026-07-28 only", pinServerOnly, "reject", "protocol 2026-07-28 (the server's answer to server/discover)\n"},
		{"v2 both revisions", pinServerOnly, "serve", "protocol 2026-07-28 (the server's answer to server/discover)\n"},
		{"v1", pinServerV1, "", "protocol 2025-11-25 (server/discover refused ("},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(aegis, "pin", "pinned", "--", node, "--input-type=module", "-e", tt.server)
			cmd.Dir = modules
			cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "LEGACY="+tt.legacy)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || !strings.HasPrefix(string(out), tt.want) {
				t.Fatalf("aegis pin: %v\n%s%s; want it to begin %q", err, out, stderr.String(), tt.want)
			}
			_, pinned, ok := strings.Cut(string(out), "\npinned echo ")
			if !ok {
				t.Fatalf("aegis pin:\n%s; want echo pinned", out)
			}
			digests[tt.name] = strings.TrimSpace(pinned)
		})
	}
	if a, b := digests["v2 2026-07-28 only"], digests["v2 both revisions"]; a != b {
		t.Errorf("the v2 server's echo pinned as %s and %s; want one definition", a, b)
	}
}
