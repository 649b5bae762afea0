// The official TypeScript SDK v2 client: connects to the server that
// argv[3:] starts, speaking the revision argv[2] names ("2026-07-28",
// pinned: server/discover and per-request _meta, no initialize; or
// "legacy": the 2025-11-25 initialize handshake), calls echo and
// delete_all, and prints what each call returned or the error it raised,
// as one JSON object.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [revision, cmd, ...args] = process.argv.slice(2);
const mode = revision === 'legacy' ? 'legacy' : { pin: revision };
const client = new Client({ name: 'aegis-interop-v2', version: '1.0.0' }, { versionNegotiation: { mode } });
await client.connect(new StdioClientTransport({ command: cmd, args }));
const out = {};
for (const [key, name, args] of [['echo', 'echo', { text: 'hi' }], ['del', 'delete_all', {}]]) {
  try {
    out[key] = await client.callTool({ name, arguments: args });
  } catch (e) {
    out[key] = { error: String(e.message), code: e.code };
  }
}
console.log(JSON.stringify(out));
await client.close();
