//go:build !mcp2026

package interop

// mcp2026 is false without -tags mcp2026 (see mcp2026_test.go).
const mcp2026 = false
