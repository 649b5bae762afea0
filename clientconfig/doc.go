// Package clientconfig rewrites MCP clients' configuration files so that
// every stdio server they launch runs through `aegis wrap`, and back.
//
// # Files
//
// One reader serves every client, because they share one shape: a JSON
// object mapping a server's name to an entry. The maps rewritten are
//
//   - the top-level "mcpServers" (Claude Desktop's claude_desktop_config.json,
//     Cursor's mcp.json, Claude Code's .mcp.json and ~/.claude.json),
//   - the top-level "servers" (VS Code's mcp.json, beside its "inputs"),
//   - "projects".<path>."mcpServers" (Claude Code's ~/.claude.json, one map
//     per project).
//
// Files are read as JSONC, VS Code's dialect: // and /* */ comments and
// trailing commas are allowed in any file (a strict JSON file is JSONC
// too). Locations lists where each client keeps its files.
//
// # Entries
//
// An entry is a stdio server when it has a "command" and its "type", if
// any, is "stdio"; an entry with a "url", or of another type (http, sse,
// streamable-http, ws), is remote and left alone. A stdio server is
// wrapped when its command is an aegis binary (named aegis, or the path
// given as Options.Aegis) and its first argument is "wrap".
//
// Wrap turns
//
//	"command": CMD, "args": [A1, A2]
//
// into
//
//	"command": AEGIS, "args": ["wrap", "--name", NAME, CMD, A1, A2]
//
// with NAME the entry's key (or what Options.Name makes of it), and a
// "--" before CMD only if CMD begins with '-': a client that appends
// arguments of its own to an entry's args (the MCP Inspector's
// config-file mode adds --method …) must not find them behind a "--",
// which would hand them to the child. Unwrap
// turns any wrapped entry back: it reads wrap's arguments as wrap does
// (Go's flag package: flags end at "--" or at the first argument that is
// not a flag, Options.BoolFlag telling which flags take no value), and
// puts back the child's command and arguments; aegis's own flags
// (--policy, --audit, …) are dropped.
//
// # What is kept
//
// The rewrite is an edit of the file's bytes, never a re-serialisation:
// only the "command" value and the leading "args" elements of rewritten
// entries change. Every other byte — key order, white space, comments,
// trailing commas, string escapes, "env", "cwd", "type", "inputs" and
// every other key — is kept as it was; the original command and
// arguments move into "args" as the exact bytes they were written with.
// Wrap inserts its arguments in the array's own layout (one a line when
// the array has one a line), so Unwrap of a file Wrap wrote gives back the
// original bytes exactly. An entry without "args" gets one, placed just
// before "command"; Unwrap removes an "args" there that it empties.
//
// A command written with variables (${workspaceFolder} in VS Code,
// ${env:NAME} in Cursor, ${VAR} in Claude Code) still works from "args":
// each of these clients expands the same variables in "args" as in
// "command".
//
// # Refusals
//
// An empty file (or one of white space) has no servers. A file is refused
// whole (ErrSyntax, ErrShape), and nothing of it is rewritten, when it is
// not JSONC, its top level is not an object, or
// anything the rewrite reads is not what a client reads: a map or entry
// that is not an object, a "command" or "type" that is not a string, an
// "args" that is not an array of strings, or a key written twice in an
// object the rewrite reads (readers disagree on which of the two counts).
//
// # Writing
//
// WriteFile replaces a file atomically (a temporary file in the same
// folder, synced, renamed over it, the folder synced) with the original's
// permission bits and owner, after keeping a backup of the original bytes
// beside it, FILE.aegis-backup-<UTC time>, with the same permission bits
// and owner. A symlink
// is followed: the file it names is rewritten and the link stays.
package clientconfig
