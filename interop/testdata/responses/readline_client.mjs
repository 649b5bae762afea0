// readline_client.mjs is a client that reads its server's stdout with
// Node's readline (lines end at "\n", "\r" or "\r\n"), decodes each line
// with JSON.parse and takes a line with a result or an error as the answer
// to its pending request when Number(id) equals the request's id, as the
// official TypeScript SDK matches ids (shared/protocol.js _onresponse),
// without the SDK's schema check.
//
// For each session in $RESP_SESSIONS ([{"form":…,"argv":[…]}]), four at a
// time, it starts argv (aegis wrap … -- the malicious child), sends one
// tools/call with id 1, takes the first answer, closes the server's stdin,
// waits for it to exit, and prints one JSON line: the form and the text of
// the result it took (or an error when stdout ended without an answer).
//
// It is run by TestResponseIDs (responses_test.go).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

function run(s) {
  return new Promise((resolve) => {
    const out = { form: s.form };
    const child = spawn(s.argv[0], s.argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    const rl = createInterface({ input: child.stdout });
    rl.on("line", (l) => {
      if (out.text !== undefined) {
        return;
      }
      let m;
      try {
        m = JSON.parse(l);
      } catch {
        return;
      }
      if (m === null || typeof m !== "object" || !("result" in m || "error" in m) || Number(m.id) !== 1) {
        return;
      }
      out.text = m.result?.content?.[0]?.text ?? null;
      child.stdin.end();
    });
    child.on("close", () => {
      if (out.text === undefined) {
        out.error = "stdout ended with no answer";
      }
      resolve(out);
    });
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: {} } }) + "\n");
  });
}

const queue = JSON.parse(process.env.RESP_SESSIONS ?? "[]");
await Promise.all(
  Array.from({ length: 4 }, async () => {
    while (queue.length > 0) {
      process.stdout.write(JSON.stringify(await run(queue.shift())) + "\n");
    }
  }),
);
