package bench

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// nodeScripts are the harness's own Node programs (node/*.mjs): clients
// and fronts built on the pinned npm packages of interop/.
//
//go:embed node/*.mjs
var nodeScripts embed.FS

// nodeScript writes the embedded node/name into the work directory and
// returns its path. Beside it, node_modules links to interop's installed
// packages, from which Node resolves the script's imports (an ES module
// resolves its bare imports from its own folder up, never from the
// working directory or NODE_PATH).
func (h *harness) nodeScript(name string) (string, error) {
	mods := filepath.Join(h.root, "interop", "node_modules")
	if !fileExists(filepath.Join(mods, "@modelcontextprotocol", "server")) {
		return "", fmt.Errorf("%s has no @modelcontextprotocol/server: run npm ci in interop/ (the harness's Node programs use its pinned packages)", mods)
	}
	dir := filepath.Join(h.work, "node")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	data, err := nodeScripts.ReadFile("node/" + name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, data, 0o644)
}
