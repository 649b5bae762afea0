package clientconfig

import (
	"path/filepath"
	"strings"
)

// Location is where a client keeps a configuration file.
type Location struct {
	Client string // "Claude Desktop", "Cursor", "VS Code", "Claude Code"
	Path   string
}

// The clients' ids, as Options.Client writes them and aegis wrap's
// --client records them.
const (
	ClaudeDesktop = "claude-desktop"
	ClaudeCode    = "claude-code"
	VSCode        = "vscode"
	Cursor        = "cursor"
)

// ClientOf returns the id of the client that reads the file at path,
// told by where each client keeps its files (Locations, and VS Code's
// other editions: "Code - Insiders", VSCodium), or "" when path is none
// of them.
func ClientOf(path string) string {
	path = filepath.ToSlash(filepath.Clean(path))
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case base == "claude_desktop_config.json":
		return ClaudeDesktop
	case base == ".claude.json", base == ".mcp.json":
		return ClaudeCode
	case base != "mcp.json":
		return ""
	case dir == ".cursor":
		return Cursor
	case dir == ".vscode", dir == "User" && isCodeFolder(filepath.Base(filepath.Dir(filepath.Dir(path)))):
		return VSCode
	}
	return ""
}

// isCodeFolder reports whether name is the folder of an edition of VS
// Code under the user's application data.
func isCodeFolder(name string) bool {
	return name == "Code" || strings.HasPrefix(name, "Code - ") || name == "VSCodium"
}

// Env is what Locations reads of the environment: $HOME,
// $XDG_CONFIG_HOME, the working directory and the operating system
// (runtime.GOOS).
type Env struct {
	Home, XDGConfigHome, Dir, GOOS string
}

// Locations returns the well-known configuration files of each client,
// whether or not they exist: the user's (under Home) first, then the
// project's (under Dir). On Linux, Claude Desktop and VS Code (Electron
// applications) keep their folders in $XDG_CONFIG_HOME when it is set to
// an absolute path, otherwise in ~/.config; on macOS in ~/Library/Application
// Support.
func Locations(e Env) []Location {
	appData := filepath.Join(e.Home, ".config")
	if e.GOOS == "darwin" {
		appData = filepath.Join(e.Home, "Library", "Application Support")
	} else if filepath.IsAbs(e.XDGConfigHome) {
		appData = e.XDGConfigHome
	}
	var locs []Location
	if e.Home != "" {
		locs = append(locs,
			Location{"Claude Desktop", filepath.Join(appData, "Claude", "claude_desktop_config.json")},
			Location{"Cursor", filepath.Join(e.Home, ".cursor", "mcp.json")},
			Location{"VS Code", filepath.Join(appData, "Code", "User", "mcp.json")},
			Location{"Claude Code", filepath.Join(e.Home, ".claude.json")},
		)
	}
	if e.Dir != "" {
		locs = append(locs,
			Location{"Claude Code", filepath.Join(e.Dir, ".mcp.json")},
			Location{"Cursor", filepath.Join(e.Dir, ".cursor", "mcp.json")},
			Location{"VS Code", filepath.Join(e.Dir, ".vscode", "mcp.json")},
		)
	}
	return locs
}
