// v2front.mjs is the official MCP TypeScript SDK v2's own Streamable HTTP
// handler fronting a stdio server, for the benchmark harness's http
// section (bench/http.go): a node:http server on 127.0.0.1:argv[2] whose
// requests go to @modelcontextprotocol/node's
// NodeStreamableHTTPServerTransport (the Node adapter of
// @modelcontextprotocol/server's WebStandardStreamableHTTPServerTransport),
// each JSON-RPC message it parses written to the child argv[3…] through
// @modelcontextprotocol/client's StdioClientTransport, and each message the
// child writes handed back to the HTTP transport, which routes a response
// to the request's stream by its id. The SDK has no proxy of its own, so
// this is the proxy its two transports make, and nothing else: no Server
// or Client object, no schema validation of the messages.
//
// A session of revision 2025-11-25 (an initialize without Mcp-Session-Id)
// gets a stateful transport and a child of its own, as supergateway
// --stateful runs one; DELETE ends both. A request of revision 2026-07-28
// (MCP-Protocol-Version: 2026-07-28) gets a stateless transport of its own,
// as the SDK's stateless examples make one per request, and goes to one
// child shared by every such request, its answer routed back by id.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { NodeStreamableHTTPServerTransport } from "@modelcontextprotocol/node";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { PerRequestHTTPServerTransport, classifyInboundRequest } from "@modelcontextprotocol/server";

const port = Number(process.argv[2]);
const [command, ...args] = process.argv.slice(3);
const sessions = new Map(); // Mcp-Session-Id → transport

function child() {
  return new StdioClientTransport({ command, args, stderr: "inherit" });
}

async function session() {
  const c = child();
  const t = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, t),
    onsessionclosed: (id) => {
      sessions.delete(id);
      c.close();
    },
  });
  t.onmessage = (msg) => c.send(msg).catch((e) => t.onerror?.(e));
  c.onmessage = (msg) => t.send(msg).catch(() => {});
  c.onclose = () => t.close();
  await c.start();
  return t;
}

// The stateless child, started at the first 2026-07-28 request; its
// answers go to the transport of the request with their id.
let modern;
const pending = new Map(); // request id → stateless transport

async function modernChild() {
  if (!modern) {
    modern = child();
    modern.onmessage = (msg) => {
      const t = msg.id !== undefined ? pending.get(msg.id) : undefined;
      if (t && (msg.result !== undefined || msg.error !== undefined)) {
        pending.delete(msg.id);
        t.send(msg).catch(() => {});
      }
    };
    await modern.start();
  }
  return modern;
}

// stateless serves one 2026-07-28 request as the SDK's dual-era entry
// does: classifyInboundRequest on its headers and body, then a
// PerRequestHTTPServerTransport of its own for the one exchange.
async function stateless(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    res.writeHead(400).end();
    return;
  }
  const route = classifyInboundRequest({
    httpMethod: req.method,
    protocolVersionHeader: req.headers["mcp-protocol-version"],
    mcpMethodHeader: req.headers["mcp-method"],
    mcpNameHeader: req.headers["mcp-name"],
    body,
  });
  if (route.kind !== "modern") {
    res.writeHead(route.kind === "reject" ? route.httpStatus ?? 400 : 400, { "content-type": "application/json" });
    res.end(JSON.stringify(route));
    return;
  }
  const c = await modernChild();
  const t = new PerRequestHTTPServerTransport({ classification: route.classification, responseMode: "sse" });
  t.onmessage = (msg) => {
    if (msg.id !== undefined && msg.method !== undefined) pending.set(msg.id, t);
    c.send(msg).catch((e) => t.onerror?.(e));
  };
  await t.start();
  const resp = await t.handleMessage(route.message);
  res.writeHead(resp.status, Object.fromEntries(resp.headers));
  if (resp.body) for await (const chunk of resp.body) res.write(chunk);
  res.end();
}

http
  .createServer(async (req, res) => {
    try {
      if (req.headers["mcp-protocol-version"] === "2026-07-28") return await stateless(req, res);
      const sid = req.headers["mcp-session-id"];
      let t = sid !== undefined ? sessions.get(sid) : undefined;
      if (t === undefined) {
        if (sid !== undefined) {
          res.writeHead(404).end();
          return;
        }
        t = await session();
      }
      await t.handleRequest(req, res);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    }
  })
  .listen(port, "127.0.0.1");
