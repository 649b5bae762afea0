// The official TypeScript SDK v1 server (@modelcontextprotocol/sdk, stdio,
// 2025-11-25) with the SDK's experimental tasks: `slow_sum` runs only as a
// task (execution.taskSupport required) and completes 200 ms after it
// starts, with the sum of a and b; `failing` runs as a task and ends with
// a tool error. The SDK answers tasks/get, tasks/result and tasks/cancel
// from its in-memory task store.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import * as z from 'zod';

const taskStore = new InMemoryTaskStore();
const server = new McpServer(
  { name: 'v1-tasks', version: '1.0.0' },
  { capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore }
);

function taskTool(name, inputSchema, run) {
  server.experimental.tasks.registerToolTask(
    name,
    { description: name, inputSchema, execution: { taskSupport: 'required' } },
    {
      createTask: async (args, extra) => {
        const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 50 });
        setTimeout(async () => {
          const result = run(args);
          await extra.taskStore.storeTaskResult(task.taskId, 'completed', result);
        }, 200);
        return { task };
      },
      getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
      getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId)
    }
  );
}
taskTool('slow_sum', { a: z.number(), b: z.number() }, ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
taskTool('failing', {}, () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }));

// The store's expiry timers would keep Node running after stdin closes.
server.server.onclose = () => taskStore.cleanup();
await server.connect(new StdioServerTransport());
