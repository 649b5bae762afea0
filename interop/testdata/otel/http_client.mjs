// An official TypeScript SDK client over Streamable HTTP: v1
// (@modelcontextprotocol/sdk, argv[4] "v1": 2025-11-25 sessions) or v2
// (@modelcontextprotocol/client pinned to the revision argv[4]). It
// connects to argv[2] with the bearer token argv[3], answers every
// elicitation by accepting with the reason "because", calls echo and
// confirm with params._meta.traceparent argv[5] (and tracestate argv[6]),
// and prints what each returned as one JSON object.
const [url, token, mode, traceparent, tracestate] = process.argv.slice(2);
const requestInit = { headers: { Authorization: `Bearer ${token}` } };
const out = { elicitations: [] };
const answer = async (req) => {
  out.elicitations.push(req.params.message);
  return { action: 'accept', content: { reason: 'because' } };
};
let client;
if (mode === 'v1') {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  client = new Client({ name: 'aegis-otel-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, answer);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit }));
} else {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  client = new Client({ name: 'aegis-otel-v2', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: mode } } });
  client.setRequestHandler('elicitation/create', answer);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit }));
}
const _meta = { traceparent, tracestate };
for (const [name, a] of [['echo', { text: 'hi' }], ['confirm', { action: 'deploy' }]]) {
  try {
    const r = await client.callTool({ name, arguments: a, _meta });
    out[name] = { content: r.content, isError: r.isError ?? false };
  } catch (e) {
    out[name] = { error: String(e.message), code: e.code };
  }
}
console.log(JSON.stringify(out));
await client.close();
