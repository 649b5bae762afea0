// approvals_page.mjs drives a real browser (Debian's Chromium, through
// playwright-core, pinned in package.json) on the approvals page of
// `aegis wrap --listen`, while the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk) calls tools an approve rule parks:
//
//   argv: MCP_URL CLIENT_TOKEN PAGE_URL APPROVER_TOKEN USER_DATA_DIR REVISION
//
// REVISION 2025-11-25 drives the SDK v1 client (sessions); 2026-07-28
// the SDK v2 client (@modelcontextprotocol/client) pinned to that
// revision (stateless requests).
//
// It prints one JSON line per step (step, and what it saw) for
// approvals_page_test.go to judge; it decides nothing itself. Steps:
//
//   shown     the first parked call's row as the page shows it (tool,
//             arguments) and whether the client's markup ran or became
//             an element;
//   approved  the client's result once the page approved it;
//   denied    the client's error once the page denied the next with a
//             reason;
//   bound     two sessions each park a call; the page approves A's:
//             A's result, and whether B's call was still listed, and
//             unanswered, once A had its answer; then B's error once the
//             page denied it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { chromium } from "playwright-core";

const [mcpURL, clientToken, pageURL, approverToken, userDataDir, revision] = process.argv.slice(2);
const out = (step, v) => process.stdout.write(JSON.stringify({ step, ...v }) + "\n");
const long = { timeout: 120000 };

async function connect(name) {
  const requestInit = { headers: { Authorization: `Bearer ${clientToken}` } };
  if (revision === "2026-07-28") {
    const transport = new TransportV2(new URL(mcpURL), { requestInit });
    const client = new ClientV2({ name, version: "1.0.0" }, { versionNegotiation: { mode: { pin: revision } } });
    await client.connect(transport);
    return { client, transport };
  }
  const transport = new StreamableHTTPClientTransport(new URL(mcpURL), { requestInit });
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

// settle is a call's promise as a value: its result, or its error as
// the SDK surfaced it.
function settle(p) {
  return p.then(
    (result) => ({ result }),
    (err) => ({ error: { class: err?.constructor?.name, isMcpError: err instanceof McpError, code: err?.code, message: err?.message, data: err?.data } }),
  );
}

const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = await context.newPage();
  const dialogs = [];
  page.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss(); });
  await page.goto(pageURL + "#token=" + encodeURIComponent(approverToken));

  // row finds the page's row of the call whose arguments cell holds text.
  const row = (text) => page.locator("#calls tbody tr", { has: page.locator("td.args", { hasText: text }) });

  const a = await connect("aegis-approvals-page-a");
  const markup = `<img src=x onerror="window.__aegisPwned=1">`;
  const first = settle(a.client.callTool({ name: "echo", arguments: { text: markup } }, undefined, long));
  const r1 = row("onerror");
  await r1.waitFor({ timeout: 60000 });
  out("shown", {
    tool: await r1.locator("td.tool").textContent(),
    args: await r1.locator("td.args").textContent(),
    imgs: await page.locator("#calls img").count(),
    pwned: await page.evaluate(() => window.__aegisPwned ?? null),
    address: page.url(),
    dialogs,
  });
  await r1.locator("button.approve").click();
  out("approved", await first);

  const second = settle(a.client.callTool({ name: "echo", arguments: { text: "second" } }, undefined, long));
  const r2 = row("second");
  await r2.waitFor({ timeout: 60000 });
  await r2.locator("input.reason").fill("not on a Friday");
  await r2.locator("button.deny").click();
  out("denied", await second);

  // Two sessions, one call parked in each: approving A's releases A's
  // alone.
  const b = await connect("aegis-approvals-page-b");
  let bDone = false;
  const callA = settle(a.client.callTool({ name: "echo", arguments: { text: "for A" } }, undefined, long));
  const callB = settle(b.client.callTool({ name: "echo", arguments: { text: "for B" } }, undefined, long)).then((v) => { bDone = true; return v; });
  const rA = row("for A"), rB = row("for B");
  await rA.waitFor({ timeout: 60000 });
  await rB.waitFor({ timeout: 60000 });
  await rA.locator("button.approve").click();
  const gotA = await callA;
  // The page lists every second: B's row is still there after a listing
  // made after A's answer.
  await page.evaluate(() => refresh());
  const bListed = await rB.count();
  out("bound", { a: gotA, bAnswered: bDone, bListed });
  await rB.locator("input.reason").fill("B stays");
  await rB.locator("button.deny").click();
  out("boundB", await callB);

  for (const s of [a, b]) {
    await s.transport.terminateSession?.();
    await s.client.close();
  }
} finally {
  await context.close();
}
