// The official TypeScript SDK v2 client for the rules test: connects to
// the server that argv[3:] starts, speaking the revision argv[2] names
// ("2026-07-28" pinned, or "legacy": the 2025-11-25 handshake), makes the
// calls given as JSON in $AEGIS_INTEROP_CALLS ([{"tool":…,"args":{…}}])
// in order, and prints one JSON line per call: its result, or the error
// the SDK raised with its code and data.
//
// It is run by TestRulesTypeScriptSDKv2 (rules_test.go); it has no logic
// of its own to test.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [revision, cmd, ...args] = process.argv.slice(2);
const calls = JSON.parse(process.env.AEGIS_INTEROP_CALLS ?? '[]');
const mode = revision === 'legacy' ? 'legacy' : { pin: revision };
const client = new Client({ name: 'aegis-interop-rules', version: '1.0.0' }, { versionNegotiation: { mode } });
await client.connect(new StdioClientTransport({ command: cmd, args }));
for (const c of calls) {
  const line = { tool: c.tool };
  try {
    line.result = await client.callTool({ name: c.tool, arguments: c.args });
  } catch (e) {
    line.error = { message: String(e.message), code: e.code, data: e.data };
  }
  process.stdout.write(JSON.stringify(line) + '\n');
}
await client.close();
