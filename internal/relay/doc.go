// Package relay moves the bytes of one MCP stdio session between a client
// and a child server and records every tools/call that crosses it in a
// journal. Relay is the recorder and its two pumps, Upstream
// (client→child) and Downstream (child→client), which read and write any
// io.Reader and io.Writer: the relay knows nothing of processes. Package
// supervise runs a child under a Relay from start to exit status; package
// gate is the contract with the policy it enforces. This comment is the
// relay's contract: what reaches each side, in what order, and when the
// records describing it are durable.
//
// # Byte identity
//
// A line is the bytes up to and including a '\n' (the last line of a stream
// may lack it). A line that is relayed is written exactly as it was read:
// never re-encoded, trimmed, merged with another or split, whatever it
// holds ('\r', invalid UTF-8, several values, no JSON at all).
//
// Without a Gate (pass-through) each side receives every byte the other
// wrote, in the order written. The one exception is a line longer than
// Config.MaxFrame: none of it is relayed, and the session ends
// (ErrFrameTooLarge). Config.CallTimeout makes another ("Call timeouts"
// below).
//
// With a Gate, the child receives exactly the client's lines that are one
// JSON value (white space around it aside), read alike by every reader,
// and whose tools/calls are all allowed, in the order written; it receives
// no part of any other line.
// The client receives every byte the child wrote, in order, and aegis's
// refusal frames, each a whole line written between two of the child's
// lines, never inside one.
//
// # Ordering
//
// Each pump writes lines in the order it read them. A refusal frame is
// written to the client before any line the client sent after the refused
// one reaches the child, so the refusal comes before the answer to any
// later request. Records are appended in the order their lines were read
// in each direction, and the two directions share the journal's one
// order: an answer's outcome follows its call's intent.
//
// # Durability before forwarding
//
// Nothing is written to either side before the records describing it are
// as durable as the journal's level requires, and before every record
// appended ahead of them is too (journal.Journal.Wait):
//
//   - a run of the client's lines reaches the child once its records
//     (intents, anomalies, outcomes of evicted and cancelled calls, task
//     records, client answers) pass journal.BeforeRequest; a run holding a refusal waits for
//     journal.BeforeResponse, since its refusal frame goes to the client;
//   - a run of the child's lines reaches the client once its records
//     (outcomes, anomalies, task, protocol and server_request records)
//     pass journal.BeforeResponse;
//   - a run without records waits for nothing.
//
// Intents and outcomes go in with their journal.Hint (an intent awaits
// its outcome, an outcome answers its intent's seq), from which the
// journal's group commit knows which records are about to come.
//
// So at strict every record is written and fdatasync'd before the line it
// describes moves; at reply an intent is written (not yet synced) before
// its request moves, and intent and outcome are synced before the response
// moves; at interval and none records are written before their lines move
// and reach the disk later. A crash therefore never leaves a call that
// reached the child (strict) or a response that reached the client
// (strict, reply) without its record.
//
// While a run waits for its records, the pump reads and records the lines
// that arrive meanwhile, so that one sync covers them too; at most 1 MiB
// of read-ahead is held, and runs still leave in the order read, each
// after its own records. A lone call, with nothing else in flight, is
// written by the goroutine that read it.
//
// # How lines are judged
//
// Peers read lines in different ways (frame's package documentation,
// "Every reading of a line" and "Ids"); the relay records what any of
// those readers could act on.
//
// From the client, every line is classified. A line that is not exactly
// one JSON value, that some reader reads differently, or whose batch is
// too long to classify whole gets an anomaly record. Every tools/call that
// any reading finds gets an intent: those of the line read as one value
// with their batch position, those only another reading finds as
// malformed, with the line's anomaly as the reason. A call with an id that
// a response can name enters the table of calls in flight. A line of
// white space carries nothing and gets no record.
//
// From the child, lines are read only while calls are in flight, calls
// that timed out or were cancelled are remembered ("Call timeouts" and
// "Cancellation" below), or tasks are live ("Tasks"). A message with an
// id and a result or error, in any reading, is judged against the table:
//
//   - a clean answer (a response, not malformed, in a line every reader
//     reads alike) whose id names exactly one call in flight, the same
//     call however a client reads the id, gets that call's outcome
//     (ok, rpc_error or tool_error, the response's digest, and latency_ns
//     from when the request was released to the child); duplicate ids in
//     flight are answered in the order they were sent;
//   - any other message that could answer a call in flight for some
//     client (any of its ids, as any client reads ids) makes the line an
//     anomaly (ReasonLooseID, ReasonAnswerWithMethod, ReasonTwoCalls, or
//     the line's or message's own malformation), and the call stays in
//     flight: whichever answer the client takes is in the record, this
//     line's digest or a later answer's outcome;
//   - lines that could answer nothing are relayed without a record.
//
// The table of calls in flight also follows, without an intent, the
// client's requests whose answers the record needs: initialize, and
// tasks/get, tasks/result and tasks/cancel naming a live task ("Tasks"
// below). Their answers are judged by the same rules (an unclear one is
// an anomaly, and the request stays in flight), and they leave the
// table silently at End or when evicted.
//
// # What an answer says
//
// A clean answer to a tools/call gets an outcome whose status says what
// the answer was: rpc_error for an error; by result.resultType,
// input_required (the tool has not finished: the outcome lists the keys
// and methods of result.inputRequests and the digest of
// result.requestState), task (the call became a task: result.taskId, or
// the 2025-11-25 CreateTaskResult's result.task.taskId when the result
// has no resultType) and other (any other resultType but complete,
// recorded by its name in result_type, never ok); a result without
// resultType, or with resultType complete, is ok, or tool_error when
// result.isError is true. frame reads these members with the same
// discipline as ids: an answer whose resultType, taskId, task, status,
// requestState or inputRequests readers could read differently is
// malformed, so the line is an anomaly and the call stays in flight.
//
// # Rounds
//
// An input_required outcome issues what a retry of the call presents
// (MCP's multi round-trip requests: the retry is a new tools/call, with a
// new id, carrying params.requestState and params.inputResponses). The
// retry's intent records its params.requestState's digest and
// params.inputResponses' keys, with the action of each that is an
// elicitation's answer (accept, decline, cancel), never their content
// (the request's digest covers it), and the round it is:
//
//   - by "state": its requestState (compared by the SHA-256 of the
//     decoded string, so that a client's re-escaping does not matter) is
//     the one an input_required outcome of this session issued;
//   - by "match": neither carries a state, and it names the same tool
//     with the same params.arguments bytes, in a session of the same
//     principal (Config.Caller), as a tools/call answered input_required
//     without state at most 10 minutes before;
//   - "unknown_state": it carries a state that no outcome the relay
//     remembers issued;
//   - "reused_state": its state was claimed by an earlier round. An
//     outcome is claimed by at most one round; a match, once claimed,
//     links no other call.
//
// A request linked to nothing is round 1 of its call and carries no
// round; a linked retry's round number is one more than the round it
// answers. The states issued are remembered in a table of at most
// Config.MaxPending entries; beyond it the oldest is forgotten (a retry
// presenting its state is then unknown_state, or, by match, round 1).
// Each round is a tools/call, decided by the Gate as the call it is; a
// retry the Gate refuses claims what it links to all the same (it was
// presented). Only a call whose line every reader reads alike, not
// malformed, is linked or records a state.
//
// A notifications/cancelled or a task request that readers read
// differently (frame marks it malformed) is relayed and changes nothing
// in the record: the call or task it may name stays as it was.
//
// # Tasks
//
// A task outcome enters the table of live tasks (at most
// Config.MaxPending; a task beyond it evicts the oldest, which gets an
// unfinished end, via "evicted"). A task id that names a live task is
// never entered twice: that answer is an anomaly (ReasonTaskClaimed) and
// its call stays in flight. Every task record names the task's id and
// its call's intent; those the child's lines cause are durable before
// the line reaches the client, those the client's before its line
// reaches the child:
//
//   - its end, the first of: on 2026-07-28 (a task made by resultType
//     "task"), a tasks/get answer or a notifications/tasks with status
//     completed (ok; tool_error for result.isError; rpc_error for an
//     error), failed or cancelled; on 2025-11-25 (a CreateTaskResult),
//     the tasks/result answer (ok, tool_error or rpc_error as a call's),
//     or status failed or cancelled in a tasks/get answer, a
//     notifications/tasks/status or the answer to tasks/cancel. The end
//     has the digest of the line that carried it and the latency from
//     the call's release to the child. At End, every live task gets an
//     unfinished end, via session_end, before the session's end;
//   - input_required: a task status input_required (tasks/get,
//     notifications/tasks) first seen, or with inputRequests keys not
//     recorded yet (each task remembers its last 32);
//   - update: the client's tasks/update (its inputResponses as a
//     retry's);
//   - cancel: the client's tasks/cancel.
//
// A poll whose answer changes nothing adds no record; requests about a
// task the relay does not know (never created, ended, evicted) add none.
//
// # Server requests
//
// A request the child sends (elicitation/create, sampling/createMessage,
// roots/list, any method) in a line the relay reads (above), every
// reader reading it alike, gets a server_request record naming the calls
// then in flight (awaiting their answer, or their task live; in the
// order of their intents, at most 32 listed, the rest counted), and is
// remembered (at most Config.MaxPending, the oldest forgotten) until the
// client answers it: the answer, clean and relayed, gets a client_answer
// record (ok or rpc_error, and an elicitation's result.action: accept,
// decline or cancel). Under a session revision of 2026-07-28 or later, where
// servers send no requests, such a request is also an anomaly
// (ReasonServerRequest), and is relayed all the same.
//
// The session's revision is the protocolVersion of initialize's answer
// (then a protocol record is written, before the answer reaches the
// client); until one settles it, the revision the client's requests
// declare in params._meta["io.modelcontextprotocol/protocolVersion"].
// An intent records the revision its request declares.
//
// # Cancellation
//
// A notifications/cancelled from the client, clean, whose
// params.requestId names a tools/call in flight (by value, as ids are
// matched) ends that call: its outcome is cancelled (no response digest,
// latency to the cancellation), durable before the notification reaches
// the child. The call is remembered in the table of late calls (as
// bounded as with a CallTimeout): the child's later answer to it is an
// anomaly (ReasonAnswerAfterCancel) and is relayed, since the client
// ignores it. A call in flight with the same id takes an answer first: a
// child need not answer a cancelled request, and the client matches the
// answer to its live request. The HTTP front sends such a notification
// when its client goes away mid-request, so both fronts end calls this
// one way.
//
// # Call timeouts
//
// With Config.CallTimeout, a tools/call request that the child has not
// answered CallTimeout after its request was released to it is answered
// by the relay: a refusal frame (AppendRefusal) with the request's own id
// as it was sent and data.aegis.code CodeCallTimeout, written to the
// client once the call's timeout outcome passes journal.BeforeResponse,
// as a whole line between two of the child's lines. The call leaves the
// table of calls in flight. A line from the child that is then a clean
// answer to it (as above) is recorded as an anomaly (ReasonLateAnswer,
// with its digest) and not relayed, since the client already has an
// answer for that id; if the line also answers a call still in flight (a
// batch), it is relayed, and the anomaly says forwarded. Any other line
// that could answer it for some client is an anomaly, relayed, as for a
// call in flight. Each call of a batch times out on its own. Calls whose
// line some reader reads differently, malformed calls and calls with an
// id token longer than 256 bytes are never timed out (timeout.go says
// why). The client then receives every byte the child wrote but those
// lines, in order, and the timeout frames.
//
// # Gating and refusals
//
// With a Gate (which requires Config.Client), every frame that carries a
// tools/call is decided whole under one rule set (gate.Gate,
// gate.FrameDecider). A decision's verdict is recorded in the intent, and
// a refused one names the refusal's code: gate.Denied POLICY_DENIED,
// gate.RateLimited RATE_LIMITED, gate.PendingApproval PENDING_APPROVAL
// (and gate.Parked alike), unless the call is parked ("Approvals" below);
// a verdict the
// relay does not know, the zero Decision's included, refuses as denied. A
// malformed call (a duplicate or case-variant params.arguments included),
// or one that names no tool, is refused without asking the Gate: readers
// could disagree about which tool it runs or with what. The Gate sees a
// gate.Call: the tool, params.arguments as the line carries them (with
// frame's report of text decoders read differently), Config.Caller, and
// the call's round ("Rounds" above), linked before the decision and
// recorded the same in the intent.
//
// Calls are decided outside the relay's lock, which the child→client pump
// takes for every line it records: the client→child pump classifies and
// decides a line on its own goroutine, then holds the lock only to append
// that line's records and enter its calls in the table of calls in
// flight. The order of the log is kept without the lock: that goroutine
// alone appends intents, line after line in the order read, and a line's
// bytes are written to the child only after its run's records are
// appended and past their barrier, so a frame's intent always precedes
// its bytes reaching the child, and an outcome (which needs the child's
// answer, or a timeout armed once the call is released) follows its
// intent. If any call
// of a frame is refused the whole frame is: its line is dropped, every
// intent says refused, every call with an id gets a host_denied outcome
// (ReasonNotExecuted, or ReasonSibling for the calls refused for a
// sibling's sake), and every request in it is answered with a refusal
// frame (AppendRefusal; a batch is answered with an array, a frame with no
// request is not answered). Rate tokens are taken only when a frame is
// relayed. A client that is gone gets no refusal; the records stand.
//
// # Approvals
//
// With Config.Approvals, a single request with an id whose call an approve
// rule decides (gate.PendingApproval or gate.Parked) is parked
// (approve.go): its intent says pending_approval with the approval's id
// and terms, not refused, and its line is dropped from the run and kept.
// The pumps go on: later calls are decided, recorded and relayed, and
// answers returned, while it waits. Its decision appends an approval
// record; approved, the kept line is written to the child, byte for byte,
// once that record is as durable as any request's records (so every
// intent still precedes its forward), with cmu held so that it never
// splits another run's lines, and the call enters the table of calls in
// flight (timed out from then, with a CallTimeout); denied or expired, it
// gets a host_denied outcome and the client an APPROVAL_DENIED (with the
// approver's reason) or APPROVAL_TIMEOUT refusal. End gives every call
// still parked a host_denied outcome. An approval is bound to the rule
// set that parked the call: a reload that applies another set (Note)
// expires the calls parked under the old one, and an approval that comes
// for such a call anyway releases nothing (ErrVoid). A batch that holds such a call is
// refused PENDING_APPROVAL as a whole, as without approvals.
//
// With Config.ApprovalURL too, a parked call whose request declares
// revision 2026-07-28 and URL-mode elicitation in its client capabilities
// (params._meta, each key once and in no other case) is asked inside the
// protocol (approve_elicit.go):
// the relay answers it at once, resultType input_required with one
// URL-mode elicitation keyed "aegis-approval-<id>" (its outcome, status
// input_required, is its intent's, durable before the answer moves), and
// the client's retry, linked by match to that outcome and presenting the
// key, parks under the same id and moves as the approval decides, before
// it came or after: byte for byte to the child, or refused as above. Such
// an approval names the first intent. A 2025-11-25 request, or one that
// does not declare URL-mode elicitation, is never asked so: it waits for
// the approver; a retry that does not qualify parks under an id of its own.
//
// # Memory
//
// The table of calls in flight holds at most Config.MaxPending calls of at
// most about 640 bytes each (900 with a CallTimeout, which keeps the id
// token to answer with), whatever their ids. A call beyond it evicts the
// oldest, which is recorded unanswered at once. With a CallTimeout, the
// calls that timed out are remembered, for their late answers, in a table
// as bounded (MaxPending calls of a few hundred bytes); beyond it the
// oldest is forgotten, and its late answer is relayed as one that answers
// nothing. The tables of rounds issued (about 100 bytes an entry), of
// live tasks (about 700 bytes: the id as recorded, its key, 32 key
// hashes) and of server requests (as a call) hold at most
// Config.MaxPending entries each. A pump holds at most
// the longest line (Config.MaxFrame) plus the read-ahead bound.
//
// # Failing closed
//
// Once the journal has failed (journal.ErrIO), nothing more moves either
// way, recorded or not: both pumps return the error at once, even one
// blocked in a read, and drop what they hold unwritten; whoever runs them
// (package supervise) then ends the session without session_end, which
// could not be written. After End, the pumps fail with ErrEnded and Note
// refuses, so that nothing follows session_end. A failure that the
// timeout timer meets (Config.CallTimeout) writes nothing to the client
// and is delivered on Relay.Fault, on which the session ends the same
// way; the pumps fail at their next line.
//
// # Concurrency
//
// A Relay's methods are safe for its two pumps and one controller (the
// goroutine calling End, Note, Counts and Fault). Each pump runs on the goroutine
// that calls it and one more that it starts to read. With a CallTimeout,
// one timer (time.AfterFunc) answers the calls that time out, on its own
// goroutine; End stops it.
//
// A pump whose source (Upstream) or destination (Downstream) is an
// *os.File in blocking mode, as wrap's stdin and stdout usually are, adds
// one to GOMAXPROCS, once per direction in a process, unless the
// environment sets GOMAXPROCS: a thread blocked in that read or write
// keeps its scheduler slot, and without a spare one the runtime takes it
// away and wakes its monitor every 20 µs while messages flow (procs.go).
package relay
