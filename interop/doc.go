// Package interop holds aegis's interoperability tests with third-party MCP
// software: the official MCP Go SDK client (github.com/modelcontextprotocol/go-sdk)
// driving the official reference servers (@modelcontextprotocol/server-everything,
// pinned in package.json and package-lock.json), once directly and once through
// `aegis wrap`, with the two sessions required to be indistinguishable.
//
// The package has no non-test code. The Node servers are installed by
// `npm ci` in this directory; without them the tests fail, never skip.
package interop
