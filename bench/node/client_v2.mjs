// client_v2.mjs is the official MCP TypeScript SDK v2 client
// (@modelcontextprotocol/client, pinned in interop/package.json) driving
// the server started by argv[4…] over stdio, its revision negotiated as
// the SDK does by default: argv[3] warm lock-step tools/call echo calls,
// then argv[2] timed ones. It prints {"ns":[…],"revision":"…"}, each
// call's round trip as the client's callTool resolves it, and the
// revision the session speaks. The benchmark harness's clients section
// runs it (bench/clients.go), as it runs interop/bench_client.mjs for v1.
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [n, warm] = process.argv.slice(2, 4).map(Number);
const [command, ...args] = process.argv.slice(4);
const client = new Client({ name: "aegis-bench", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
const ns = [];
for (let i = 0; i < warm + n; i++) {
  const t0 = process.hrtime.bigint();
  const res = await client.callTool({ name: "echo", arguments: { message: "hello" } });
  const d = process.hrtime.bigint() - t0;
  if (res.isError) throw new Error(`call ${i}: ${JSON.stringify(res)}`);
  if (i >= warm) ns.push(Number(d));
}
process.stdout.write(JSON.stringify({ ns, revision: client.getNegotiatedProtocolVersion?.() ?? "" }) + "\n");
await client.close();
