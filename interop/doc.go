// Package interop holds aegis's interoperability tests with third-party MCP
// software: the official MCP Go SDK client (github.com/modelcontextprotocol/go-sdk)
// driving the official reference servers (@modelcontextprotocol/server-everything,
// pinned in package.json and package-lock.json), once directly and once through
// `aegis wrap`, with the two sessions required to be indistinguishable; the
// official TypeScript SDK clients and servers (v1, and v2 on both revisions:
// rounds and tasks); and the official conformance suite, 0.1.13 on
// 2025-11-25 and 0.2.0-alpha.12 on 2026-07-28 (against the TypeScript SDK
// v2's conformance server, vendored in testdata/conformance-v2), through
// `aegis wrap --listen`.
//
// The package has no non-test code. The Node packages, Node 22 among them
// (the npm package node@22), are installed by `npm ci` in this directory;
// without them the tests fail, never skip.
package interop
