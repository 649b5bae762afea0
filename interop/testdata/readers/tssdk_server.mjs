// tssdk_server.mjs: the official MCP TypeScript SDK server
// (@modelcontextprotocol/sdk, pinned in interop/package.json): McpServer
// over StdioServerTransport, whose ReadBuffer ends a message at "\n" only,
// strips one "\r" before it, and decodes the line with JSON.parse and the
// SDK's strict message schema.
//
// Its tools echo and delete_all each append the call they execute to
// $READER_EXEC as one JSON line {"reader":"ts-sdk","id":<id>,"tool":<name>}
// (the id is the JSON-RPC id the SDK hands the tool, extra.requestId).
import { appendFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const exec = process.env.READER_EXEC;
const server = new McpServer({ name: "aegis-readers-ts", version: "1.0.0" });
for (const name of ["echo", "delete_all"]) {
  server.registerTool(name, { description: "records that it ran" }, async (extra) => {
    appendFileSync(exec, JSON.stringify({ reader: "ts-sdk", id: extra.requestId, tool: name }) + "\n");
    return { content: [{ type: "text", text: "ran " + name }] };
  });
}
await server.connect(new StdioServerTransport());
