// The official TypeScript SDK v2 server (stdio, both revisions: the
// 2025-11-25 initialize handshake and 2026-07-28 server/discover) with
// the tools echo and delete_all.
import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
serveStdio(() => {
  const s = new McpServer({ name: 'v2', version: '1.0.0' });
  s.registerTool('echo', { description: 'echo', inputSchema: z.object({ text: z.string() }) }, async (args) => ({ content: [{ type: 'text', text: String(args?.text ?? '') }] }));
  s.registerTool('delete_all', { description: 'delete', inputSchema: z.object({}) }, async () => ({ content: [{ type: 'text', text: 'deleted' }] }));
  return s;
});
