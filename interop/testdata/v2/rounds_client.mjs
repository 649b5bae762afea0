// An official TypeScript SDK client: v2 (@modelcontextprotocol/client,
// argv[2] "auto" for versionNegotiation auto, or a revision to pin) or
// v1 (@modelcontextprotocol/sdk, argv[2] "v1"). It connects to the server
// argv[3:] starts, answers every elicitation by accepting with the reason
// "because", calls echo and confirm, and prints what each returned, and
// how many elicitations it answered, as one JSON object.
const [mode, cmd, ...args] = process.argv.slice(2);
const out = { elicitations: [] };
let client;
if (mode === 'v1') {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  client = new Client({ name: 'aegis-interop-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out.elicitations.push(req.params.message);
    return { action: 'accept', content: { reason: 'because' } };
  });
  await client.connect(new StdioClientTransport({ command: cmd, args }));
} else {
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  const negotiation = mode === 'auto' ? { mode: 'auto' } : { mode: { pin: mode } };
  client = new Client({ name: 'aegis-interop-v2', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: negotiation });
  client.setRequestHandler('elicitation/create', async (req) => {
    out.elicitations.push(req.params.message);
    return { action: 'accept', content: { reason: 'because' } };
  });
  await client.connect(new StdioClientTransport({ command: cmd, args }));
}
for (const [key, name, a] of [['echo', 'echo', { text: 'hi' }], ['confirm', 'confirm', { action: 'deploy' }]]) {
  try {
    const r = await client.callTool({ name, arguments: a });
    out[key] = { content: r.content, isError: r.isError ?? false };
  } catch (e) {
    out[key] = { error: String(e.message), code: e.code };
  }
}
console.log(JSON.stringify(out));
await client.close();
