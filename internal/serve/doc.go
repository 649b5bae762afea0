// Package serve runs a wrapped MCP server's sessions once the audit log
// is open: one entry point for each front wrap offers, each wiring the
// same pieces the same way. A session is a relay.Relay (what is recorded
// and enforced) under a supervise.Session (the child process), recording
// to the log through a journal handle.
//
//   - Config.Stdio runs the one session of aegis wrap over its own stdin
//     and stdout, the caller being the local user.
//   - Config.HTTP serves MCP Streamable HTTP (package httpfront) until
//     SIGINT or SIGTERM: each MCP session is a child of its own under a
//     relay of its own, recorded as a session of its own in the one log
//     (journal.Session) with its own session_start, the caller being the
//     HTTP peer and the principal it proved. The stateless requests of
//     revision 2026-07-28 are served by one such session per principal
//     (httpfront.Conn.Stateless), whose peer is the endpoint served,
//     since its clients are many. The listener's own session_start and
//     session_end frame them.
//
// Config holds what every session shares: the child's argv and
// environment, how it is launched (supervise.Launcher: plain exec, or
// wrap's confining re-exec, injected so that this package knows nothing of
// confinement), the policy gate and what reloads it (PolicyReloads: on
// SIGHUP and when its file changes, each reload recorded through the
// listener's or the stdio session's relay; its Configure sets both, and
// a nil PolicyReloads, no policy, leaves every call to pass), and the
// limits. Package
// cmd/aegis parses the flags, opens the log, appends the
// session_start, calls Run, and says how the session ended; this package
// prints nothing but its Logf diagnostics.
//
// Config.Run is the one entry point wrap calls: it runs Stdio, or HTTP
// when its Front is on, then closes the log, calls what must follow the
// log's last record (the witnesses' last checkpoint) and reads the head,
// and returns how the wrap Ended for the command to say.
//
// Log is wrap's log flags as given: Options makes the journal's options
// of them (rotation, head file, checkpoints), naming the flag at fault.
// OpenLog opens the log, a server's default log in use giving way to
// NAME-2.jsonl and on (MaxLogsInUse). LoadPolicy reads --policy into the
// PolicyReloads that gate the sessions.
//
// Front is wrap --listen's settings: Check reads the address with
// ParseAddr (which says whether only this machine can connect, where
// --auth none is allowed) before anything is opened; Bind fits the limits
// to the open-file limit with FitDescriptors, binds the socket with
// Listen, and makes the bearer token with WriteToken (in TokenPath by
// default).
package serve
