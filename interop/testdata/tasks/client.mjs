// The official TypeScript SDK v1 client (@modelcontextprotocol/sdk,
// 2025-11-25) with its experimental tasks: connects to the server argv[2:]
// starts and calls slow_sum and failing as tasks (callToolStream: the
// call, tasks/get polls, tasks/result), and prints, for each, whether the
// stream began with the task's creation, the last status it polled and
// the final result, as one JSON object. (How many polls saw "working"
// depends on timing, so it is not printed.)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [cmd, ...args] = process.argv.slice(2);
const client = new Client({ name: 'aegis-interop-tasks', version: '1.0.0' }, { capabilities: { tasks: {} } });
await client.connect(new StdioClientTransport({ command: cmd, args }));
const out = {};
for (const [name, a] of [['slow_sum', { a: 2, b: 3 }], ['failing', {}]]) {
  let created, status, result;
  for await (const m of client.experimental.tasks.callToolStream({ name, arguments: a }, undefined, { task: { ttl: 60000 } })) {
    if (created === undefined) created = m.type === 'taskCreated';
    if (m.type === 'taskStatus') status = m.task.status;
    if (m.type === 'result') result = { content: m.result.content, isError: m.result.isError ?? false };
    if (m.type === 'error') result = { error: String(m.error?.message ?? m.error) };
  }
  out[name] = { created, status, result };
}
console.log(JSON.stringify(out));
await client.close();
