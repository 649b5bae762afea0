// Package demo is the two ends of `aegis demo`: a minimal MCP server (Serve,
// run by `aegis demo --serve` as the child of `aegis wrap`)
// and a scripted client (Drive) that exercises it through the relay.
//
// # Wire
//
// Both ends speak MCP's stdio framing: one JSON-RPC 2.0 message, or one batch
// (a top-level array of messages), per '\n'-terminated line. Serve writes each
// answer as a single Write of one whole line, so answers from concurrent
// handlers never interleave.
//
// # Server
//
// Serve answers initialize, ping, tools/list and tools/call, and accepts
// notifications (notifications/initialized and any other) without an answer.
// An unknown method is -32601, a line that is not JSON is -32700 with id null,
// a message that is not a request is -32600, bad tool arguments and unknown
// tools are -32602. A batch is answered by one array holding the answers to
// its requests, in their order; a batch of notifications only gets no answer.
//
// The tools are echo {text}, add {a,b}, slow {ms} (sleeps, then answers; run
// concurrently, so later calls overtake it) and fail (a result with isError
// set). Serve is meant to be small and readable, not fast: it uses
// encoding/json throughout.
//
// # Client
//
// Drive runs a fixed script (initialize, notifications/initialized,
// tools/list, every tool, an unknown tool, a batch of two calls), checks every
// answer, accepts answers in any order, and bounds every wait by a timeout so
// that it never hangs on a silent server.
//
// # Session
//
// Record runs the two through a real aegis wrap: the binary given wraps
// itself as the server, signing with the key Key makes (or finds) in the
// demo's folder, and Drive is the client on its stdio. SelfCommand is how
// the commands the demo shows name this aegis.
package demo
