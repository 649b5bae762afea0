// policy_client.mjs drives the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json) against a server
// started by the command in argv[2] with the arguments after it, typically
// `aegis wrap --policy … -- node server-everything stdio`. It makes the
// calls given as JSON in $AEGIS_INTEROP_CALLS ([{"tool":…,"args":{…}}]), in
// order, and prints one JSON line per call saying how the SDK surfaced it:
// a result, or an error with its class, code, message and data.
//
// It is run by TestPolicyRefusalTypeScriptSDK (policy_test.go); it has no
// logic of its own to test.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError, UrlElicitationRequiredError } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = process.argv.slice(2);
const calls = JSON.parse(process.env.AEGIS_INTEROP_CALLS ?? "[]");

const client = new Client({ name: "aegis-interop-ts", version: "1.0.0" });
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
await client.connect(transport);

for (const c of calls) {
  const line = { tool: c.tool };
  try {
    const res = await client.callTool({ name: c.tool, arguments: c.args ?? {} });
    line.result = res;
  } catch (err) {
    line.error = {
      class: err?.constructor?.name,
      isMcpError: err instanceof McpError,
      isUrlElicitation: err instanceof UrlElicitationRequiredError,
      code: err?.code,
      message: err?.message,
      data: err?.data,
    };
  }
  process.stdout.write(JSON.stringify(line) + "\n");
}
await client.close();
