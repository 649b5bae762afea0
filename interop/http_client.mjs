// http_client.mjs is the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json) running one script
// against server-everything, over Streamable HTTP (argv[2] "http", then
// the endpoint URL and the bearer token, "" for none) or over stdio
// (argv[2] "stdio", then the server's argv). It prints one JSON line per
// step, the server's answers with what differs between two runs (clock
// times) left out, so that two runs, one through aegis wrap --listen and
// one direct, can be compared line for line. http_test.go runs it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "http") {
  const [url, token] = rest;
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
} else {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args, stderr: "inherit" });
}
const client = new Client({ name: "aegis-http-interop", version: "1.0.0" }, { capabilities: { roots: {} } });
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///aegis-http-root", name: "aegis http" }] }));
const out = (step, v) => process.stdout.write(JSON.stringify({ step, v }) + "\n");
const clock = /\b\d{1,2}:\d{2}:\d{2}\s?[AP]M\b/g;
const steady = (v) => JSON.parse(JSON.stringify(v).replace(clock, "<time>"));

await client.connect(transport);
out("initialize", { server: client.getServerVersion(), caps: client.getServerCapabilities() });
out("ping", await client.ping());
out("tools/list", (await client.listTools()).tools.map((t) => t.name).sort());
const calls = [
  ["echo", { message: "hello over HTTP: ünïcödé \"quoted\" \\ \u2028" }],
  ["get-sum", { a: 2, b: 3 }],
  ["get-sum", { a: "two", b: 3 }],
  ["get-tiny-image", {}],
  ["get-structured-content", { location: "Chicago" }],
  ["get-roots-list", {}],
  ["no-such-tool", {}],
];
for (const [name, args] of calls) {
  out(`tools/call ${name}`, steady(await client.callTool({ name, arguments: args })));
}
const progress = [];
const res = await client.callTool(
  { name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } },
  undefined,
  { onprogress: (p) => progress.push(`${p.progress}/${p.total}`) },
);
// The last step's notification races the result (the server sends both
// as the operation ends), here as over stdio: the first two are owed.
out("tools/call trigger-long-running-operation", { res: steady(res), progress: progress.slice(0, 2) });
// Calls in flight together, on streams of their own.
const burst = await Promise.all(
  [0, 1, 2, 3, 4, 5].map((i) => client.callTool({ name: "echo", arguments: { message: `burst ${i}` } })),
);
out("burst", burst);
await transport.terminateSession?.();
await client.close();
