// readline.mjs: a tool server that reads stdin with Node's readline
// (createInterface over process.stdin), which ends a line at "\n", "\r" or
// "\r\n", and decodes each line with JSON.parse (last duplicate key wins);
// an object is a message, an array a JSON-RPC batch of messages.
//
// Every tools/call it executes is appended to $READER_EXEC as one JSON line
// {"reader":"node-readline","id":<id>,"tool":<name>}, before it is answered
// on stdout with a result. Other requests get an empty result; lines that
// are not JSON are skipped.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const exec = process.env.READER_EXEC;

function answer(id, result) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
}

function serve(msg) {
  if (msg === null || typeof msg !== "object" || Array.isArray(msg) || typeof msg.method !== "string") {
    return;
  }
  const hasId = msg.id !== undefined && msg.id !== null;
  if (msg.method === "tools/call") {
    const p = msg.params;
    if (p === null || typeof p !== "object" || typeof p.name !== "string") {
      return;
    }
    appendFileSync(exec, JSON.stringify({ reader: "node-readline", id: msg.id, tool: p.name }) + "\n");
    if (hasId) {
      answer(msg.id, { content: [{ type: "text", text: "ran " + p.name }] });
    }
  } else if (hasId) {
    answer(msg.id, {});
  }
}

const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let value;
  try {
    value = JSON.parse(line);
  } catch {
    return;
  }
  if (Array.isArray(value)) {
    value.forEach(serve);
  } else {
    serve(value);
  }
});
