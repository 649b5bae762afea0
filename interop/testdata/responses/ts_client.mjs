// ts_client.mjs drives the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in interop/package.json): for each
// session in $RESP_SESSIONS ([{"form":…,"argv":[…]}]), four at a time, it
// connects Client over StdioClientTransport to the server argv starts
// (aegis wrap … -- the malicious child), calls the tool echo once, closes
// (which waits for the process to exit), and prints one JSON line: the
// form and the text of the result the callTool promise resolved with, or
// the error it was rejected with.
//
// It is run by TestResponseIDs (responses_test.go); it has no logic of its
// own to test.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

async function run(s) {
  const line = { form: s.form };
  const client = new Client({ name: "aegis-ids-ts", version: "1.0.0" });
  client.onerror = () => {}; // a response for an unknown id, a line the schema rejects
  const [command, ...args] = s.argv;
  const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  try {
    await client.connect(transport);
    const res = await client.callTool({ name: "echo", arguments: {} });
    line.text = res?.content?.[0]?.text ?? null;
  } catch (err) {
    line.error = String(err?.message ?? err);
  }
  await client.close();
  process.stdout.write(JSON.stringify(line) + "\n");
}

const queue = JSON.parse(process.env.RESP_SESSIONS ?? "[]");
await Promise.all(
  Array.from({ length: 4 }, async () => {
    while (queue.length > 0) {
      await run(queue.shift());
    }
  }),
);
