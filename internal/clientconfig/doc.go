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
// too). The reader is tailscale/hujson, which keeps every byte's offset,
// with nesting bounded (512 deep) before it recurses. Locations lists
// where each client keeps its files.
//
// # Entries
//
// An entry is a stdio server when it has a "command" and nothing that
// could make a client start something else; an entry without a command
// but with a url ("url", "httpUrl", "serverUrl") or a type other than
// stdio is remote and left alone. A "command" beside a url, or beside a
// "type" or "transport" that is not exactly "stdio", refuses the file:
// clients differ on which of the two they start (Claude Code and VS Code
// run the command beside a url, Gemini CLI connects to the url first;
// Claude Desktop runs the command whatever the type, Claude Code and
// VS Code run only a "stdio" one as stdio), so aegis cannot read it as
// the client does. A stdio server is wrapped when its command is an
// aegis binary (named aegis, or the path given as Options.Aegis) and its
// first argument is "wrap".
//
// Wrap turns
//
//	"command": CMD, "args": [A1, A2]
//
// into
//
//	"command": AEGIS, "args": ["wrap", "--name=NAME", "--client=CLIENT", CMD, A1, A2]
//
// with NAME the entry's key (or what Options.Name makes of it), CLIENT the
// id of the client that reads the file (Options.Client; ClientOf tells it
// by the file's path), and a "--" before CMD only if CMD begins with '-':
// a client that appends
// arguments of its own to an entry's args (the MCP Inspector's
// config-file mode adds --method …) must not find them behind a "--",
// which would hand them to the child.
//
// Wrap's mark is that shape exactly: "wrap", the one-argument
// --name=NAME (-name=NAME when the entry had no "args" and Wrap added
// one; Go's flag package reads all three spellings alike), the
// one-argument --client=CLIENT, then the command. Unwrap turns back only
// marked entries, so that it undoes what Wrap did and nothing a user
// wrote: a wrap written by hand ("--name", NAME as two arguments,
// --name=NAME without --client=, or no --name) or given a flag since may
// carry a --policy or --confine, and is left with a note unless
// Options.All. An entry that runs cmd /c (or /k), Windows's shell, is
// left by Wrap with a note: the file is written for Windows, where aegis
// does not run. Unwrap reads
// wrap's arguments as wrap does (Go's flag package: flags end at "--" or
// at the first argument that is not a flag, Options.BoolFlag telling
// which flags take no value), and puts back the child's command and
// arguments; aegis's own flags (--policy, --audit, …) are dropped.
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
// the array has one a line, with the file's line ends, CRLF or LF), and
// into an empty array just after its "[", keeping what was between the
// brackets; an entry without "args" gets one, placed just before
// "command". Unwrap of a file Wrap wrote therefore gives back the
// original bytes exactly, unless the file already held entries exactly
// as Wrap writes them.
// An entry with a comment among the bytes Unwrap would remove is left as
// it is, with a note: the comment would go with them.
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
// not JSONC, a comment holds invalid UTF-8, a // comment holds a line
// break other readers end it at (a carriage return not before a line
// feed, a vertical tab, a form feed, U+2028, U+2029: VS Code would read
// what follows as keys), its top level is not an object, or
// anything the rewrite reads is not what a client reads: a map or entry
// that is not an object, a "command", "type" or "transport" that is not a
// string, an "args" that is not an array of strings, a key written twice
// in an object the rewrite reads (readers disagree on which of the two
// counts), or a command beside a url or a non-stdio type (see Entries).
// ReadFile refuses a file that is not regular (a FIFO is not waited on),
// one with more than one name (a hard link: the rename would leave the
// other names with the old bytes), and one over MaxFile (16 MiB) before
// reading it.
//
// # Writing
//
// WriteFile replaces a file atomically (a temporary file in the same
// folder, synced, renamed over it, the folder synced) with the original's
// permission bits, after keeping a backup of the bytes it replaces, one
// per file, outside the file's folder (a project's would be committed
// with it): at the file's own path under a backups folder the caller
// names (BackupPath), mode 0600, replaced at each rewrite. The folders
// below the backups folder are made and entered without following a
// symlink.
//
// Run with sudo, the rewrite must not become a way for a user to have
// root write a file of theirs where they cannot. So ReadFile resolves
// the symlinks in the path once, opens the folder by a walk from / that
// follows none (O_NOFOLLOW on each component), and reads the file
// relative to that descriptor, not following it if it is a link; the
// backup and the temporary file are created relative to it with O_EXCL
// and O_NOFOLLOW, renamed with renameat and synced through it. Before
// writing, WriteFile walks the path again and refuses (ErrMoved), writing
// nothing, unless it reaches the same folder (device and inode): a folder
// swapped for a symlink while the file was parsed. The new files get the
// original's owner (by descriptor, never by path) only when that owner
// could have made files in the folder itself (it owns the folder, or the
// file's group or anyone may write it); otherwise they stay the writer's
// (File.OwnerNote says so). The backup is the writer's. A symlink present when ReadFile starts is
// followed: the file it names is rewritten and the link stays.
//
// # Applying
//
// Apply does the whole of one file: ReadFile, Wrap, Unwrap or Scan, and
// WriteFile unless nothing changed or the caller asked for a dry run; it
// returns what it did for the caller to print. Do is Apply as aegis
// config runs it: the client told by the file's path (ClientOfFile, a
// symlink's target too) unless named, and a file with something to wrap
// whose client nothing tells read only, refused with ErrNoClient. Self is
// the aegis a client runs when none is named. Existing lists the files
// of Locations that exist, each once. Errors are the sentinels below,
// each in an Error whose Reason says it in a user's words, without the
// package's name.
//
// Report prints what aegis config did to one file (its entries, the
// diff, whether it was written) and gives the exit status of a file left
// as it was: a refusal is a usage error, a failed write an I/O one.
package clientconfig
