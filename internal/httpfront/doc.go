// Package httpfront serves MCP's Streamable HTTP transport in front of
// stdio sessions (aegis wrap --listen), on one endpoint in both of its
// shapes: the sessions of revisions 2025-03-26 to 2025-11-25 (initialize,
// Mcp-Session-Id, a GET stream, resumption) and the stateless requests
// of revision 2026-07-28. Each session is one child run as a stdio
// session is (package relay, through Config.Start), with its own records
// in the one log; this package moves the bytes between HTTP and that
// session's two line streams. This comment is its contract.
//
// # Endpoint
//
// One endpoint, Path (/mcp), answers POST, GET and DELETE; anything else
// is 405. Every request passes, in order: the Host check (a loopback
// name, or Config.AllowHosts; not for a unix socket) and the Origin check
// (when the header is present: http or https on a loopback name, or
// Config.AllowOrigins), each 403 when it fails (DNS-rebinding protection);
// the bearer token (Config.Token, compared in constant time; 401 with
// WWW-Authenticate: Bearer; the scheme read without case, one
// Authorization header only); and MCP-Protocol-Version, when present, one
// of the revisions this package knows (400 otherwise, with the JSON-RPC
// error -32022 naming 2026-07-28, the revision served without a
// handshake, and the request's id; absent is taken as 2025-03-26, as the
// transport says). A request whose MCP-Protocol-Version is 2026-07-28 is
// a stateless request ("Stateless requests"); any other is served as a
// session's ("Sessions").
//
// # Connections
//
// A client without a token costs a descriptor for a bounded time, never
// reaches a session or the log, and never keeps a client with the token
// out. A connection is unproven until a request on it passes
// authentication (the token; with none, Host and Origin). At most
// Config.MaxConns connections are open at once, and
// Config.MaxConnsPerPeer from one peer (an IPv4 address, an IPv6 /64; a
// unix socket's clients count only against the total). A new connection
// beyond either bound takes the place of an unproven one, which is reset:
// at the per-peer bound, its peer's oldest; at the total, the oldest of
// the peer holding the most unproven connections, so that a peer waiting
// on one request of its own keeps it while another holds more. It is
// reset as soon as it is accepted, before a byte is read, only when
// proven connections alone bar its way. A request's headers must arrive
// within Config.HeaderTimeout of the connection's start or of its
// previous request. A request refused before authentication (Host,
// Origin, token, another path) is answered with Connection: close and
// its connection ends there, its body unread. TCP keep-alive is turned
// on for a connection once it is proven (a listener given to Serve is
// best opened without it, as aegis's is). Running out of descriptors while accepting leaves new
// connections waiting in the kernel's queue (retried with backoff up to
// a second); FitDescriptors sizes the bounds so that the log's own files
// always find one.
//
// # Sessions
//
// A POST of an initialize request without MCP-Session-Id starts a
// session: a new id (16 random bytes in hex), Config.Start, and the
// initialize written to its child. The response carries the id in
// MCP-Session-Id. Every other request must carry it: 400 without it, 404
// for an id that names no session (never issued, deleted, idle past
// Config.IdleTimeout, or whose child exited). DELETE ends the session
// (the child's stdin is closed, as a stdio client's EOF ends a stdio
// session) and answers 200; from then on the id is 404. Idleness ends it
// the same way, but Conn.In returns ErrIdle where DELETE gives io.EOF, so
// that the session's end can say why. An initialize (or
// a principal's first stateless request) beyond Config.MaxSessions is
// answered 503; a session counts against it
// until its child has exited (after DELETE or idleness, through the
// child's grace periods), so the bound is one on children running. A session's lines reach its
// child alone: sessions share nothing but the log.
//
// # Stateless requests
//
// A request of revision 2026-07-28 belongs to no session its client
// knows: Mcp-Session-Id and Last-Event-ID are not read, none is given,
// and GET and DELETE are 405 (the revision has no GET stream and no
// resumption). Only POST serves it, and a POSTed response is 400: the
// revision's clients send none.
//
// Its child: each principal (Conn.Principal: the token's id, or "none")
// has one stateless session, started by its first stateless request
// (Conn.Stateless; no initialize is written: the request goes to the
// child as it is), whose one child serves every stateless request of
// that principal, so that a task one request creates is found by the
// next tasks/get. It is a session as any other to the log (its own
// session_start, transport http, that principal, and as peer the
// endpoint served, since its clients are many) and to the bounds: it
// counts against Config.MaxSessions while its child runs, and ends,
// as a session does, when no request has used it for Config.IdleTimeout
// or its child exits; the next stateless request starts another. Its
// requests share the child as a session's do: one request per id in
// flight, a second with that id waiting, unwritten, until the first is
// answered ("Routing"), so that two clients that both send id 1 never
// receive each other's answer, and the bytes the child reads are each
// client's own. A subscriptions/listen holds its id for as long as its
// stream is open.
//
// Its headers, checked against its body before anything of it reaches
// the child (a failure is 400 with the JSON-RPC error -32020,
// HeaderMismatch, naming the request's id as its client wrote it; the
// line never reaches the child or the log):
//
//   - the body is read as every decoder reads it: method, params,
//     params.name, params.uri, params.taskId, params.arguments, params._meta
//     and its io.modelcontextprotocol/protocolVersion must each appear
//     once, under its exact key (no duplicate, no key a decoder binds to
//     it by case folding or by ignoring '_' and '-'), their strings
//     valid UTF-8 without U+0000 or U+FFFD; a body some decoder reads
//     otherwise is 400 (-32600) before any header is compared;
//   - the revision the body declares in params._meta, when it declares
//     one, is 2026-07-28;
//   - Mcp-Method is required on a request and equals method (checked on
//     a notification where given);
//   - Mcp-Name is required where the body carries the value it mirrors,
//     and equals it: params.name for tools/call and prompts/get,
//     params.uri for resources/read, params.taskId for tasks/get,
//     tasks/update and tasks/cancel; given for any other message, it is
//     a mismatch;
//   - Mcp-Param-{Name}, for each argument of a tools/call that the
//     tool's inputSchema mirrors in a header (x-mcp-header, reached
//     through properties keys only): required when the argument is a
//     string, number or boolean in the body, and equal to it (numbers
//     compared as numbers). The declarations are learnt from the answers
//     to the session's tools/list requests as they pass (at most 1024
//     tools of 64 declarations each); a tools/call before any tools/list
//     of its session has none to be checked against.
//
// Its envelope, checked next: the child reads nothing that is not of
// the revision, since a stdio server takes the first line it reads to
// say which revision its connection speaks, and the child is every
// client's of the principal. A message whose params._meta lacks
// io.modelcontextprotocol/protocolVersion (or, for a request,
// io.modelcontextprotocol/clientCapabilities as an object) is 400 with
// -32602 (Invalid params), as the revision's servers answer it; an
// initialize, the older revisions' handshake and no method of this one,
// is 404 with -32601 (Method not found). Neither reaches the child or
// the log.
//
// A header value is one header, its surrounding spaces and tabs dropped,
// of visible ASCII, space and tab only; the header name's case is free,
// the value's is not. Mcp-Name and Mcp-Param-* values of the form
// =?base64?…?= are compared as the UTF-8 text their canonical Base64
// encodes (other Base64 is a mismatch).
//
// Its answer: the request's stream is kept until its first event, or
// 3 s at most; an answer that comes whole before then (and before any
// other event) is the response's application/json body, with the HTTP
// status its JSON-RPC error code calls for (404 for -32601; 400 for
// -32700, -32600, -32602, -32020, -32021, -32022; 200 for a result or
// any other error). Otherwise the response is an SSE stream as a
// session's, without the priming event (nothing resumes it); its events
// are let go once sent.
//
// Its cancellation: a client that closes its response stream before its
// answer has cancelled the request, as the revision says. The front
// writes to the child the stdio transport's cancellation, built by
// aegis, naming the request's id token exactly as its client wrote it:
//
//	{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":<id>,"reason":"the client closed its response stream"}}
//
// (not for an id token longer than 4096 bytes, which is not kept), and
// drops whatever the child still writes for the request. Its id stays in
// flight until the child answers it or for one second, so that an
// answer already on its way is dropped rather than given to a later
// request with the same id; a child that answers a cancelled request
// later than that answers the request then in flight with that id, as
// the log pairs them too. Within a session (revisions up to 2025-11-25)
// a disconnection is not a cancellation ("Streams and resumption").
//
// # Bytes
//
// A POST body is one JSON-RPC message (a batch is refused, 400, as the
// 2025-06-18 revision removed them). It is written to the child's stdin
// as the line it is, followed by '\n' (Line): one trailing "\n" or "\r\n"
// of the body is a line ending and not written twice; a body holding any
// other raw CR or LF byte is refused with 400, since on line-framed stdio
// it would be two lines, or one that a reader splits at a bare CR.
// Config.MaxFrame (--max-frame) counts a line as the relay's reader counts
// it, on stdio and here alike: its bytes and its '\n'. A body whose line
// and '\n' are longer is 413, whatever line ending the body itself has;
// so a body taken here never ends its session as too long. Ids and every
// other byte are never rewritten: two sessions may both use id 1.
//
// Each line the child writes goes to exactly one place, without its line
// ending ("\n", or "\r\n"), byte for byte: an SSE event's data, or, for a
// client that takes only application/json, the response body. (A raw CR
// inside a line, which JSON allows only as white space, ends an SSE
// field: it is sent as the start of another data field, which the
// reader joins with "\n", white space still.)
//
// # Answers
//
// A notification or a response POSTed is answered 202 with no body once
// its line is written to the child. A request is answered with an SSE
// stream when the client's Accept takes text/event-stream (every
// conforming client's does), and with application/json only when it
// takes JSON alone: an SSE stream is what lets the server's own requests
// and notifications reach the client during the call. The stream's first
// event is a priming event (an id, the retry field, empty data); the
// stream ends once the answer to the request is sent.
//
// # Routing
//
// The child's lines are routed in the order written, each to one stream,
// never two:
//
//   - a response (a message with an id and a result or error) goes to
//     the stream of the request in flight with that id, matched by value
//     as JSON-RPC peers match ids (1 and 1.0 are one). A session has one
//     request in flight per id: a second request with an id in flight
//     waits, unwritten, until the first is answered (or its client goes
//     away), since aegis itself answers a call its policy refuses, at
//     once, ahead of the child's answer to an earlier call with that id.
//     A request's route is registered in the same step as its line is
//     written to the child, in the order the lines are written, so each
//     request receives the answer the log pairs with it. A request whose
//     id is ambiguous (a duplicate or case-variant id member, a value of
//     the wrong type beside another) is routed by every value a decoder
//     may keep and by null, which the relay's refusal of it carries and a
//     peer that cannot tell the id answers with: every request gets an
//     answer or a close;
//   - a notifications/progress whose progressToken is the one a request
//     in flight asked for (params._meta.progressToken) goes to that
//     request's SSE stream;
//   - a notification whose params._meta names a subscription
//     (io.modelcontextprotocol/subscriptionId, the id of a
//     subscriptions/listen in flight, matched by value as ids are) goes
//     to that subscriptions/listen's stream, which carries nothing else
//     but its own answer;
//   - any other line (the server's requests and notifications, a
//     response that answers nothing in flight) goes to the SSE stream of
//     the newest request still in flight in the session, a
//     subscriptions/listen excepted: the call in progress, which it
//     most likely concerns; with none in flight, to the session's
//     standalone stream, which a GET reads, or, in a stateless session,
//     which has none, nowhere (it is dropped).
//
// # Streams and resumption
//
// This section is the sessions' (revisions up to 2025-11-25); a
// stateless request's stream is never resumed. Event ids are "<stream>-<n>": the stream (0 the standalone stream, 1,
// 2, … the requests' streams in the session) and the event's number in
// it, so each id is unique in its session and names its stream. A
// client whose connection dropped resumes with GET and Last-Event-ID:
// the events of that stream after that one are written again, then the
// stream goes on. A request's stream keeps the events not yet written
// to any connection (within the bounds of "Memory"), and up to
// Config.Replay of those written; the standalone stream keeps
// Config.Replay events at most, written or not (a child's messages that
// no GET reads are dropped beyond that, oldest first); a session keeps
// the last 64 answered streams for resumption. A disconnection is not a
// cancellation: the request stays in flight and its answer waits for the
// client to resume. One connection writes a stream at a time: a second
// GET of the standalone stream is 409, while a resumption takes its
// stream over from a connection the server has not yet seen close.
//
// # Memory
//
// What the front holds for clients is bounded in bytes in each
// direction, per session (Config.SessionBuffer, default twice MaxFrame)
// and for the server (Config.Buffer, default four times MaxFrame), each
// at least one largest frame:
//
//   - client to child: a POST body is counted before it is read (its
//     Content-Length, or MaxFrame+1 when it gives none), and waits, in
//     order, unread, until both bounds have room; it is counted until the
//     session's relay has taken its line. A client whose child reads
//     nothing is held back by TCP, not buffered;
//   - child to client: each event is counted from when it is routed
//     until its stream lets it go: sent and beyond Config.Replay, or
//     dropped. When an event does not fit, first the events already sent
//     and kept only for resumption go (in every session, for the
//     server's bound), then the streams no connection is writing (their
//     client is gone: they are dropped, and a resumption is 404); then
//     the router waits, holding the child's output back as a stdio
//     client that reads slowly does, for the connections writing the
//     session's streams to send theirs, but no longer than
//     Config.WriteTimeout: the relay's Downstream pump never waits on a
//     client for longer. Past that every stream of the session still
//     holding unsent events is dropped and its connection ended; the
//     standalone stream loses its events (the transport lets a server
//     end it at any time) and a request's stream is lost: what the child
//     still writes for it is dropped, and its answer still completes it,
//     so that no answer ever reaches another request.
//
// The log is unchanged by any of this: an outcome records what the
// server answered, before it is routed, as on stdio, where a client that
// is gone receives nothing either; whether a client read it is not a
// record. Ids and progress tokens longer than 64 bytes are held as their
// SHA-256, as the relay's table of calls in flight holds ids, so a
// request in flight costs a bounded few hundred bytes whatever its id.
// The number of requests is bounded by the connections (Config.MaxConns).
// The relay behind each session holds its own bounds (package relay,
// "Memory").
//
// # Approvers
//
// With Config.Approver, the front also serves the people who decide the
// calls a policy's approve rules park (package approval), under
// ApproverPath (/approvals/), past the same Host check:
//
//   - the page (GET /approvals/, page.js, page.css, embedded): plain HTML
//     and JavaScript that list the calls waiting and approve or deny
//     them. It holds no data and is served without a token; it reads the
//     approver token from its address's fragment (#token=…, which the
//     browser never sends, cleared once read) or a form, keeps it in
//     memory, and sends it as a bearer token, never a cookie. What a
//     client sent is set as text (textContent), already quoted and cut
//     by approval.Quote;
//   - GET /approvals/pending: the calls waiting, oldest first, at most
//     MaxListed of them with the total;
//   - POST /approvals/decide, {"id","decision":"approve"|"deny","reason"}
//     (at most 8 KiB, unknown keys refused): 200 once decided, 404 for an
//     id nothing waits under, 409 for one decided already, 410 when the
//     call's session ended first.
//
// The endpoints take Approver.Token alone (401 otherwise; a client's
// token is 403 there, and the approver token is no token on the MCP
// endpoint). A decision names its approver "token:<Approver.TokenID>".
// A browser request from any page but this one is refused (403): a
// Sec-Fetch-Site other than same-origin, or an Origin other than the
// request's own; a decision's body must be application/json, which a
// form of another origin cannot send. Every response forbids framing
// (Content-Security-Policy frame-ancestors 'none', X-Frame-Options) and
// runs the page's own script alone.
//
// # Concurrency
//
// Server's methods are safe for concurrent use. A session's child's
// lines are routed by the goroutine that writes them to Conn.Out (the
// relay's Downstream pump), which waits for a client only as "Memory"
// says; each request is served on its own goroutine (net/http's).
package httpfront
