// approvals_elicit.mjs calls echo, which an approve rule parks, through
// `aegis wrap --listen` with the official MCP TypeScript SDK client, and
// decides each approval over the approvals page's endpoint with the
// approver token, as an approver on the page would:
//
//   argv: MCP_URL CLIENT_TOKEN APPROVER_TOKEN REVISION [MODE [AUDIT]]
//
// MODE (2026-07-28 only): "form" has the client declare form-mode
// elicitation only, and "none" no elicitation (and no handler): their
// calls must park unasked, so the script decides them from the pending
// list. "expire" lets both approvals expire: the first call's handler
// answers only once the log AUDIT holds the approval's expired record
// (the retry comes after the expiry), the second's at once (the retry
// waits parked until it expires); steps expired-before, expired-after.
//
// REVISION 2026-07-28 drives the SDK v2 client (@modelcontextprotocol/
// client) pinned to it, which declares URL-mode elicitation: its
// elicitation handler is handed aegis's input_required elicitation, and
// decides the approval named by the URL's #id= before answering accept,
// so that the SDK's retry finds it decided. 2025-11-25 drives the SDK v1
// client (@modelcontextprotocol/sdk), whose call parks as without the
// option: the script decides the approval it finds in the pending list,
// as it does for either client with "list" (wrap without the option).
//
// It prints one JSON line per step for approvals_test.go to judge; it
// decides nothing itself. Steps: approved (the first call's result, and
// the elicitations the client was sent), denied (the second call's
// error, with the reason "not today").
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import fs from "node:fs";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";

const [mcpURL, clientToken, approverToken, revision, mode, audit] = process.argv.slice(2);
const out = (step, v) => process.stdout.write(JSON.stringify({ step, ...v }) + "\n");
const long = { timeout: 120000 };
const pending = new URL("/approvals/pending", mcpURL);
const decideURL = new URL("/approvals/decide", mcpURL);

async function decide(id, decision, reason) {
  const res = await fetch(decideURL, {
    method: "POST",
    headers: { Authorization: `Bearer ${approverToken}`, "Content-Type": "application/json" },
    body: JSON.stringify({ id, decision, reason }),
  });
  if (!res.ok) throw new Error(`decide ${id}: ${res.status} ${await res.text()}`);
}

// next is what the approver decides of the next approval.
let next = { decision: "approve", reason: "" };
const elicitations = [];

async function onElicit(params) {
  elicitations.push(params);
  const id = new URL(params.url).hash.replace(/^#id=/, "");
  if (next.decision === "expire-first") await expired(id);
  else if (next.decision !== "expire") await decide(id, next.decision, next.reason);
  return { action: "accept" };
}

// expired returns once the log holds the expired approval record of id.
async function expired(id) {
  for (;;) {
    const log = fs.readFileSync(audit, "utf8");
    if (log.split("\n").some((l) => l.includes(`"approval":"${id}"`) && l.includes(`"decision":"expired"`))) return;
    await new Promise((r) => setTimeout(r, 50)); // polling the log, not timing the call
  }
}

// decidePending decides the one call the approvals list shows, once it
// shows one (the 2025-11-25 client's call waits unanswered).
async function decidePending() {
  for (;;) {
    const res = await fetch(pending, { headers: { Authorization: `Bearer ${approverToken}` } });
    const body = await res.json();
    const calls = body.pending;
    if (Array.isArray(calls) && calls.length > 0) {
      await decide(calls[0].id, next.decision, next.reason);
      return;
    }
    await new Promise((r) => setTimeout(r, 50)); // polling the list, not timing the call
  }
}

function settle(p) {
  return p.then(
    (result) => ({ result }),
    (err) => ({ error: { class: err?.constructor?.name, code: err?.code, message: err?.message, data: err?.data } }),
  );
}

const requestInit = { headers: { Authorization: `Bearer ${clientToken}` } };
let client, transport, call;
if (revision === "2026-07-28") {
  transport = new TransportV2(new URL(mcpURL), { requestInit });
  const capabilities = { "": { elicitation: { url: {} } }, list: { elicitation: { url: {} } }, expire: { elicitation: { url: {} } },
    form: { elicitation: { form: {} } }, none: {} }[mode ?? ""];
  client = new ClientV2({ name: "aegis-approvals-elicit", version: "1.0.0" },
    { capabilities, versionNegotiation: { mode: { pin: revision } } });
  if (capabilities.elicitation) client.setRequestHandler("elicitation/create", async (req) => onElicit(req.params));
  await client.connect(transport);
  call = (text) => settle(client.callTool({ name: "echo", arguments: { text } }, undefined, long));
  if (mode === "list" || mode === "form" || mode === "none") {
    call = async (text) => {
      const p = settle(client.callTool({ name: "echo", arguments: { text } }, undefined, long));
      await decidePending();
      return p;
    };
  }
} else {
  transport = new StreamableHTTPClientTransport(new URL(mcpURL), { requestInit });
  client = new Client({ name: "aegis-approvals-elicit", version: "1.0.0" }, { capabilities: { elicitation: { url: {}, form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => onElicit(req.params));
  await client.connect(transport);
  call = async (text) => {
    const p = settle(client.callTool({ name: "echo", arguments: { text } }, undefined, long));
    await decidePending();
    return p;
  };
}

if (mode === "expire") {
  next = { decision: "expire-first" };
  out("expired-before", { ...(await call("too late")), elicitations: [...elicitations] });
  next = { decision: "expire" };
  out("expired-after", { ...(await call("too late again")), elicitations: [...elicitations] });
  await client.close();
  process.exit(0);
}
out("approved", { ...(await call("run me")), elicitations: [...elicitations] });
next = { decision: "deny", reason: "not today" };
out("denied", { ...(await call("not me")), elicitations: [...elicitations] });
await transport.terminateSession?.();
await client.close();
