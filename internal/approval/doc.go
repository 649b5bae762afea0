// Package approval holds the calls a policy's approve rule parks until a
// person decides, and serves those people over a local socket.
//
// A Table is one wrap's parked calls. The relay parks a call (Park) under
// an id from NewID once its intent, which names the id and the terms it is
// bound to, is appended; the call then waits, neither forwarded nor
// refused, until one of three things happens: an approver approves or
// denies it (Decide), it expires (the Table's timeout, from Park), or the
// session ends (Drop, by the relay). Each id is decided once: Decide
// removes it before it tells the relay (Resolver), so a second decision
// of the same id, approve or deny, fails with ErrDecided and releases
// nothing.
//
// Approvers reach a Table over a unix socket beside the log (SocketPath),
// mode 0600, whose server (Serve) checks each peer's uid with SO_PEERCRED:
// only the user that runs aegis, or root, may list or decide. The peer's
// uid and user name, never anything the peer says of itself, name the
// approver in the approval record. One request per connection, one JSON
// line each way (Request, Response); the aegis approvals, approve and
// deny commands are its client (Do). Under wrap --listen, the HTTP
// front also serves a Table to approvers with a bearer token of their
// own (package httpfront, "Approvers"); such a decision names the
// approver by the token's id (Decision.Principal).
//
// What a listing shows of a call (tool, arguments) is what a client sent:
// Pending holds it quoted (Go syntax, every non-graphic character
// escaped, invalid UTF-8 as \x escapes) and truncated, so that a terminal
// shows it as text and never obeys it.
//
// WriteList prints a listing as aegis approvals shows it: a table, one
// JSON object per call, or a sentence when no call waits.
package approval
