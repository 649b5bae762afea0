#!/usr/bin/env node

/**
 * MCP Conformance Test Server: the Streamable HTTP entry (as upstream's
 * everythingServer.ts serves it), on PORT (default 3000).
 */

import { randomUUID } from 'node:crypto';

import { localhostHostValidation } from '@modelcontextprotocol/express';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import type { McpServer } from '@modelcontextprotocol/server';
import { classifyInboundRequest, createMcpHandler, isInitializeRequest } from '@modelcontextprotocol/server';
import cors from 'cors';
import type { Request, Response } from 'express';
import express from 'express';

import { createEventStore, createMcpServer, servers, transports } from './server.ts';
import { registerTasks } from './tasks.ts';


// ===== 2026-07-28 (MODERN ERA) SERVING =====

// Modern-era traffic — requests claiming the per-request `_meta` envelope
// mechanism (SEP-2575), including `server/discover` and malformed variants of
// the claim — is served through `createMcpHandler`, backed by the same
// `createMcpServer()` fixture definition the 2025 sessions use. Legacy traffic
// never reaches this handler (see the routing in the POST handler below), so
// the 2025 stateful session path is unchanged.
const modernHandler = createMcpHandler(
    () => {
        const s = createMcpServer();
        registerTasks(s);
        return s;
    },
    {
        onerror: error => console.error('Modern-era MCP handler error:', error)
    }
);
const modernNodeHandler = toNodeHandler(modernHandler);

/** Normalize a possibly-repeated HTTP header to its first value. */
function headerValue(value: string | string[] | undefined): string | undefined {
    return Array.isArray(value) ? value[0] : value;
}

// ===== EXPRESS APP =====

const app = express();
app.use(express.json());

// DNS rebinding protection: reject non-localhost Host headers
app.use(localhostHostValidation());

// Configure CORS to expose Mcp-Session-Id header for browser-based clients
app.use(
    cors({
        origin: '*',
        exposedHeaders: ['Mcp-Session-Id'],
        allowedHeaders: ['Content-Type', 'mcp-session-id', 'last-event-id', 'mcp-protocol-version', 'mcp-method']
    })
);

// Handle POST requests - stateful mode
app.post('/mcp', async (req: Request, res: Response) => {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;

    try {
        // 2026-07-28 (modern era) traffic: anything claiming the per-request
        // envelope mechanism — including malformed claims, which must get the
        // modern validation-ladder errors rather than the 2025 session errors —
        // is served by the createMcpHandler entry. Legacy-classified requests
        // (initialize, no-claim traffic, batches, posted responses) fall
        // through to the stateful 2025 session path below, untouched.
        const inbound = classifyInboundRequest({
            httpMethod: req.method,
            protocolVersionHeader: headerValue(req.headers['mcp-protocol-version']),
            mcpMethodHeader: headerValue(req.headers['mcp-method']),
            body: req.body
        });
        if (inbound.kind !== 'legacy') {
            await modernNodeHandler(req, res, req.body);
            return;
        }

        let transport: NodeStreamableHTTPServerTransport;

        if (sessionId && transports[sessionId]) {
            // Reuse existing transport for established sessions
            transport = transports[sessionId];
        } else if (!sessionId && isInitializeRequest(req.body)) {
            // Create new transport for initialization requests
            const mcpServer = createMcpServer();

            transport = new NodeStreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                eventStore: createEventStore(),
                retryInterval: 5000, // 5 second retry interval for SEP-1699
                onsessioninitialized: (newSessionId: string) => {
                    transports[newSessionId] = transport;
                    servers[newSessionId] = mcpServer;
                    console.log(`Session initialized with ID: ${newSessionId}`);
                }
            });

            transport.onclose = () => {
                const sid = transport.sessionId;
                if (sid && transports[sid]) {
                    delete transports[sid];
                    if (servers[sid]) {
                        servers[sid].close();
                        delete servers[sid];
                    }
                    console.log(`Session ${sid} closed`);
                }
            };

            await mcpServer.connect(transport);
            await transport.handleRequest(req, res, req.body);
            return;
        } else if (sessionId) {
            res.status(404).json({
                jsonrpc: '2.0',
                error: { code: -32_001, message: 'Session not found' },
                id: null
            });
            return;
        } else {
            res.status(400).json({
                jsonrpc: '2.0',
                error: { code: -32_000, message: 'Bad Request: Session ID required' },
                id: null
            });
            return;
        }

        await transport.handleRequest(req, res, req.body);
    } catch (error) {
        console.error('Error handling MCP request:', error);
        if (!res.headersSent) {
            res.status(500).json({
                jsonrpc: '2.0',
                error: {
                    code: -32_603,
                    message: 'Internal server error'
                },
                id: null
            });
        }
    }
});

// Handle GET requests - SSE streams for sessions
app.get('/mcp', async (req: Request, res: Response) => {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;

    if (!sessionId) {
        res.status(400).send('Missing session ID');
        return;
    }
    if (!transports[sessionId]) {
        res.status(404).send('Session not found');
        return;
    }

    const lastEventId = req.headers['last-event-id'] as string | undefined;
    if (lastEventId) {
        console.log(`Client reconnecting with Last-Event-ID: ${lastEventId}`);
    } else {
        console.log(`Establishing SSE stream for session ${sessionId}`);
    }

    try {
        const transport = transports[sessionId];
        await transport.handleRequest(req, res);
    } catch (error) {
        console.error('Error handling SSE stream:', error);
        if (!res.headersSent) {
            res.status(500).send('Error establishing SSE stream');
        }
    }
});

// Handle DELETE requests - session termination
app.delete('/mcp', async (req: Request, res: Response) => {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;

    if (!sessionId) {
        res.status(400).send('Missing session ID');
        return;
    }
    if (!transports[sessionId]) {
        res.status(404).send('Session not found');
        return;
    }

    console.log(`Received session termination request for session ${sessionId}`);

    try {
        const transport = transports[sessionId];
        await transport.handleRequest(req, res);
    } catch (error) {
        console.error('Error handling termination:', error);
        if (!res.headersSent) {
            res.status(500).send('Error processing session termination');
        }
    }
});

// Start server
const PORT = process.env.PORT || 3000;
const httpServer = app.listen(PORT, () => {
    console.log(`MCP Conformance Test Server running on http://localhost:${PORT}`);
    console.log(`  - MCP endpoint: http://localhost:${PORT}/mcp`);
});
// Idle connections outlive the client's: Node closes an idle keep-alive
// connection after 5 s, and a client reusing it at that moment fails with
// "fetch failed" (not upstream's code; the suite runs many clients at once).
httpServer.keepAliveTimeout = 65_000;
httpServer.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE') {
        throw error;
    }
    console.error(`Port ${PORT} is already in use — is a stale conformance server still running?`);
    process.exit(1);
});
