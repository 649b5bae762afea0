// Package pin pins the tool definitions an MCP server gives its clients,
// and notices when they change (the "rug pull"): a tool that said one
// thing when a person trusted it and says another now.
//
// # Definitions and digests
//
// A tool's definition is its name, title, description, inputSchema,
// outputSchema and annotations (Fields), those present, as the server sent
// them, put in RFC 8785 canonical form (github.com/gowebpki/jcs); its
// digest is the SHA-256 of that form. Every JSON Schema keyword, a $ref
// and its $defs included, is hashed as sent: nothing is resolved or
// dropped. Key order and insignificant white space do not change a
// digest; any other change does.
//
// # Every reader
//
// A tools/list answer is read as each client may read it (ReadMessage). A
// key twice in one object (JSON.parse keeps the last, other decoders the
// first), keys that differ only in case (Go's encoding/json matches them
// to one field), invalid UTF-8 or a lone surrogate escape, an integer no
// double holds exactly, two tools with one name: the tools involved are
// ambiguous, have no digest, are recorded so with an anomaly, and count
// as changed, under every name some reader may give them (a name twice,
// a case variant of it). A key twice, or twice but for case, in the
// answer or its result, or a case variant of tools or nextCursor, makes
// the whole list ambiguous: every tool of every reading of it counts as
// changed. A result without a tools member lists nothing to every
// reader, and is no anomaly.
//
// # Pins
//
// Pins are kept per server (wrap's --name) in a pin file, by default
// NAME.pins.json in the state folder (Path). A tool listed for the first
// time is pinned (trust on first use), or ahead of time by aegis pin. A
// tool listed with another definition than its pin, or with a pinned
// tool's definition under a new name (a rename), is changed until a person
// accepts it (aegis pin accept SERVER TOOL): the definition seen is kept
// in the file's seen, for aegis pin diff. The file is written atomically
// under a lock (Update); a file that does not read as the format is
// refused and never written over.
//
// # Bounds
//
// What a server's answers can make a wrap hold is bounded, and past each
// bound a tool is never passed as pinned: it counts as changed (refused
// under block), is recorded with pin "ambiguous", the answer gets an
// anomaly record (ReasonListBound, ReasonPinBound), and stderr says so
// in a line, not a line a tool. One answer's tools are read up to
// MaxListed; those past it are named only. A pin file holds MaxPinned
// pins and MaxPinned seen definitions of at most MaxDefinition canonical
// bytes, within MaxFileSize as laid out (EntryBytes: a definition
// indented one member a line may take many times its canonical bytes);
// a changed tool whose definition is not kept is still changed, but aegis
// pin diff and accept do not know it. The table of changed tools holds
// every pinned name and MaxChanged others; once full, every tool without
// a pin counts as changed and none is pinned on first use until the wrap
// restarts. No writer writes a pin file Read refuses.
//
// # Decisions
//
// The policy's on_tool_change (package policy) says what a call to a
// changed tool meets: block refuses it TOOL_CHANGED (Gate), warn relays it
// and says so on stderr, allow relays it. Every tools/list answer is
// recorded (record.Tools) under all three. A running wrap learns of an
// acceptance by watching its pin file (Watch), records who accepted, and
// then lets the tool's calls pass.
package pin
