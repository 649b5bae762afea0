// The official TypeScript SDK v2 server (stdio, both revisions) with a
// tool that asks the client for input through the SDK's multi round-trip
// API: `confirm` answers inputRequired (an elicitation, with requestState)
// until a retry carries an accepted answer, then completes; on a
// 2025-11-25 session the SDK's legacy shim asks the same question as a
// real elicitation/create request instead. `echo` completes at once.
import * as z from 'zod';
import { acceptedContent, inputRequired, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

serveStdio(() => {
  const s = new McpServer({ name: 'v2-rounds', version: '1.0.0' });
  s.registerTool('echo', { description: 'echo', inputSchema: z.object({ text: z.string() }) }, async (args) => ({
    content: [{ type: 'text', text: String(args?.text ?? '') }]
  }));
  s.registerTool('confirm', { description: 'asks the user to confirm an action', inputSchema: z.object({ action: z.string() }) }, async (args, ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, 'ok');
    if (answer === undefined) {
      return inputRequired({
        inputRequests: {
          ok: inputRequired.elicit({
            message: `Really ${args.action}?`,
            requestedSchema: { type: 'object', properties: { reason: { type: 'string' } }, required: ['reason'] }
          })
        },
        requestState: `asked:${args.action}`
      });
    }
    return { content: [{ type: 'text', text: `${args.action}: confirmed (${answer.reason})` }] };
  });
  return s;
});
