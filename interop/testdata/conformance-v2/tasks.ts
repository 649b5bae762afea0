/**
 * The Tasks extension (io.modelcontextprotocol/tasks, 2026-07-28) for the
 * conformance everything-server: the fixtures the suite's tasks-*
 * scenarios call. Not upstream code: the TypeScript SDK v2 has no Tasks
 * runtime, so this file builds the extension on the SDK's public API (a
 * tool handler may return a CreateTaskResult; tasks/get, tasks/update and
 * tasks/cancel are custom request handlers with explicit schemas). Tasks
 * live in this process, because every 2026-07-28 request is served by a
 * fresh server instance.
 */

import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import {
    acceptedContent,
    CLIENT_CAPABILITIES_META_KEY,
    inputRequired,
    MissingRequiredClientCapabilityError,
    ProtocolError,
    ProtocolErrorCode
} from '@modelcontextprotocol/server';
import * as z from 'zod/v4';

const EXT = 'io.modelcontextprotocol/tasks';
const TTL_MS = 60_000;
const POLL_MS = 100;

type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

interface TaskState {
    taskId: string;
    status: Status;
    createdAt: string;
    lastUpdatedAt: string;
    result?: Record<string, unknown>;
    error?: { code: number; message: string };
    inputRequests?: Record<string, unknown>;
    onInput?: (responses: Record<string, unknown>) => void;
    timer?: ReturnType<typeof setTimeout>;
}

const tasks = new Map<string, TaskState>();
let next = 0;

function declared(ctx: ServerContext): boolean {
    const caps = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
    return caps?.extensions?.[EXT] !== undefined;
}

function requireDeclared(ctx: ServerContext): void {
    if (!declared(ctx)) {
        throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [EXT]: {} } } });
    }
}

function settle(t: TaskState, status: Status, fields: Partial<TaskState> = {}): void {
    if (t.status === 'completed' || t.status === 'failed' || t.status === 'cancelled') return;
    Object.assign(t, fields, { status, lastUpdatedAt: new Date().toISOString() });
    if (status !== 'input_required') {
        delete t.inputRequests;
        delete t.onInput;
    }
}

function create(run: (t: TaskState) => void): Record<string, unknown> {
    const now = new Date().toISOString();
    const t: TaskState = { taskId: `task-${process.pid}-${++next}`, status: 'working', createdAt: now, lastUpdatedAt: now };
    tasks.set(t.taskId, t);
    run(t);
    return {
        resultType: 'task',
        taskId: t.taskId,
        status: t.status,
        createdAt: t.createdAt,
        lastUpdatedAt: t.lastUpdatedAt,
        ttlMs: TTL_MS,
        pollIntervalMs: POLL_MS
    };
}

function text(s: string, isError = false): Record<string, unknown> {
    return isError ? { content: [{ type: 'text', text: s }], isError: true } : { content: [{ type: 'text', text: s }] };
}

function elicit(message: string): unknown {
    return inputRequired.elicit({
        message,
        requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }
    });
}

/** registerTasks adds the extension's capability, fixtures and methods to a server. */
export function registerTasks(s: McpServer): void {
    s.server.registerCapabilities({ extensions: { [EXT]: {} } });

    s.registerTool('greet', { description: 'Tasks fixture: sync-only', inputSchema: z.object({ name: z.string().optional() }) }, async args =>
        text(`Hello, ${args.name ?? 'World'}!`)
    );

    s.registerTool(
        'slow_compute',
        {
            description: 'Tasks fixture: sleeps `seconds`, then answers (a task when the client declares the extension)',
            inputSchema: z.object({ seconds: z.number().optional(), label: z.string().optional() })
        },
        async (args, ctx) => {
            const seconds = args.seconds ?? 1;
            const answer = text(`computed ${args.label ?? ''} after ${seconds}s`);
            if (!declared(ctx)) {
                await new Promise(r => setTimeout(r, Math.min(seconds, 1) * 1000));
                return answer as never;
            }
            return create(t => {
                t.timer = setTimeout(() => settle(t, 'completed', { result: answer }), seconds * 1000);
            }) as never;
        }
    );

    // A tool with task support required answers -32021 to a client that
    // did not declare the extension. McpServer turns what a tool handler
    // throws into a tool error result, so the check runs before it, in
    // front of its tools/call handler.
    const required = new Set<string>(['test_tool_with_task']);
    const requiredTask = (name: string, description: string, run: (t: TaskState) => void) => {
        required.add(name);
        s.registerTool(name, { description, inputSchema: z.object({}).passthrough() }, async () => create(run) as never);
    };

    requiredTask('failing_job', 'Tasks fixture: a task that ends with a tool error after ~1s (task support required)', t => {
        t.timer = setTimeout(() => settle(t, 'completed', { result: text('the job failed', true) }), 1000);
    });
    requiredTask('protocol_error_job', 'Tasks fixture: a task that fails with a protocol error', t => {
        t.timer = setTimeout(() => settle(t, 'failed', { error: { code: -32603, message: 'the job crashed' } }), 200);
    });
    requiredTask('confirm_delete', 'Tasks fixture: a task that asks for confirmation, then completes', t => {
        settle(t, 'input_required', {
            inputRequests: { confirm: elicit('Delete everything?') },
            onInput: responses => {
                if ('confirm' in responses) settle(t, 'completed', { result: text('deleted') });
            }
        });
    });
    requiredTask('multi_input', 'Tasks fixture: a task that asks two questions at once', t => {
        const answered = new Set<string>();
        settle(t, 'input_required', {
            inputRequests: { first: elicit('First?'), second: elicit('Second?') },
            onInput: responses => {
                for (const k of Object.keys(responses)) {
                    if (t.inputRequests && k in t.inputRequests) {
                        answered.add(k);
                        delete t.inputRequests[k];
                    }
                }
                if (answered.size === 2) settle(t, 'completed', { result: text('both answered') });
            }
        });
    });

    s.registerTool(
        'test_tool_with_task',
        { description: 'Tasks fixture: asks for user_name (multi round-trip), then continues as a task', inputSchema: z.object({}).passthrough() },
        async (_args, ctx) => {
            const name = acceptedContent<{ name: string }>(ctx.mcpReq.inputResponses, 'user_name')?.name;
            if (typeof name !== 'string') {
                return inputRequired({
                    inputRequests: {
                        user_name: inputRequired.elicit({
                            message: 'What is your name?',
                            requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
                        })
                    }
                }) as never;
            }
            return create(t => {
                t.timer = setTimeout(() => settle(t, 'completed', { result: text(`Hello, ${name}, from a task`) }), 200);
            }) as never;
        }
    );

    type Handler = (request: { params?: { name?: unknown } }, ctx: ServerContext) => Promise<unknown>;
    const handlers = (s.server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers;
    const callTool = handlers.get('tools/call');
    if (!callTool) throw new Error('McpServer has no tools/call handler');
    handlers.set('tools/call', async (request, ctx) => {
        if (typeof request.params?.name === 'string' && required.has(request.params.name)) requireDeclared(ctx);
        return callTool(request, ctx);
    });

    const find = (taskId: string): TaskState => {
        const t = tasks.get(taskId);
        if (!t) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown task ${taskId}`);
        return t;
    };

    s.server.setRequestHandler('tasks/get', { params: z.object({ taskId: z.string() }).passthrough() }, async (params, ctx) => {
        requireDeclared(ctx);
        const t = find(params.taskId);
        const out: Record<string, unknown> = {
            resultType: 'complete',
            taskId: t.taskId,
            status: t.status,
            createdAt: t.createdAt,
            lastUpdatedAt: t.lastUpdatedAt,
            ttlMs: TTL_MS,
            pollIntervalMs: POLL_MS
        };
        if (t.status === 'completed' && t.result) out.result = t.result;
        if (t.status === 'failed' && t.error) out.error = t.error;
        if (t.status === 'input_required' && t.inputRequests) out.inputRequests = t.inputRequests;
        return out;
    });

    // The SDK lifts a request's inputResponses out of params into
    // ctx.mcpReq.inputResponses (multi round-trip), on tasks/update too.
    s.server.setRequestHandler('tasks/update', { params: z.object({ taskId: z.string() }).passthrough() }, async (params, ctx) => {
        requireDeclared(ctx);
        const t = find(params.taskId);
        const responses = (ctx.mcpReq.inputResponses ?? params.inputResponses) as Record<string, unknown> | undefined;
        if (responses === null || typeof responses !== 'object') {
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'tasks/update needs inputResponses');
        }
        t.onInput?.(responses);
        return { resultType: 'complete' };
    });

    s.server.setRequestHandler('tasks/cancel', { params: z.object({ taskId: z.string() }).passthrough() }, async (params, ctx) => {
        requireDeclared(ctx);
        const t = find(params.taskId);
        if (t.timer) clearTimeout(t.timer);
        settle(t, 'cancelled');
        return { resultType: 'complete' };
    });
}
