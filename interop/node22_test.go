package interop

import (
	"os"
	"path/filepath"
	"testing"
)

// conformance2026Entry is the conformance suite release that knows the
// 2026-07-28 revision and the Tasks extension, installed under an npm
// alias beside 0.1.13 (package.json). It needs Node 22 or later.
const conformance2026Entry = "node_modules/conformance-2026/dist/index.js"

// node22Bin is the Node 22 binary the npm package node@22 installs.
const node22Bin = "node_modules/.bin/node"

// conformanceV2Dir holds the TypeScript SDK v2's conformance
// everything-server: its server factory, its Streamable HTTP entry and a
// stdio entry over the same factory.
const conformanceV2Dir = "testdata/conformance-v2"

// conformance2026Argv is Node 22 and the 0.2 suite's command, or the test
// fails telling how to install them.
func conformance2026Argv(t *testing.T) (node string, suite []string) {
	t.Helper()
	node, err := filepath.Abs(node22Bin)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := filepath.Abs(conformance2026Entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{node, entry} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v.\nRun `npm ci` in interop/ first: it installs Node 22 (the npm package node@22) and the conformance suite.", err)
		}
	}
	return node, []string{node, entry}
}

// tsxLoader is the absolute path of tsx's loader, for node --import: the
// conformance server is TypeScript, run as upstream runs it.
func tsxLoader(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("node_modules/tsx/dist/loader.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v.\nRun `npm ci` in interop/ first.", err)
	}
	return p
}
