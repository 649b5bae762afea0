//go:build mcp2026

package interop

// mcp2026 is true when the tests run with -tags mcp2026: then they also
// hold aegis to what it records of the 2026-07-28 revision (rounds,
// server requests, the revision on record) and to the 2026-07-28
// conformance suite through wrap --listen (TestConformance2026ThroughListen).
const mcp2026 = true
