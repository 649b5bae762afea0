#!/usr/bin/env node

/**
 * MCP Conformance Test Server: the stdio entry. The same server factory as
 * the Streamable HTTP entry, over the SDK's serveStdio (both revisions: the
 * 2025-11-25 initialize handshake and 2026-07-28 per-request _meta), so that
 * a relay can run it as a child and serve it over HTTP itself.
 */

import { serveStdio } from '@modelcontextprotocol/server/stdio';

import { createMcpServer } from './server.ts';
import { registerTasks } from './tasks.ts';

serveStdio(() => {
    const s = createMcpServer();
    registerTasks(s);
    return s;
});
