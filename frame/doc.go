// Package frame splits an MCP stdio byte stream into lines and classifies
// each line as JSON-RPC 2.0, without ever re-serialising it.
//
// # The two halves
//
// A Reader hands out runs of whole lines straight from its read buffer; the
// relay writes those bytes on unchanged, so everything it forwards is the
// input byte for byte, whatever the input is. A Classifier reads one line and
// reports what it carries: nothing (Empty), not exactly one JSON value
// (NotJSON, with an Anomaly reason), one value (Single) or a batch (Batch),
// and for each JSON-RPC message its type, method, id, and, for tools/call,
// the tool name and whether decoders could disagree about it (Malformed),
// and what it says about the revision, multi round-trip requests and tasks
// (Message.Rounds, "Rounds and tasks" below).
//
// # Contract
//
//   - Neither type is safe for concurrent use; use one per stream.
//   - Slices returned by Reader.Next alias its buffer: valid until the next
//     Next. Slices in a Frame alias the line or the Classifier's buffers:
//     valid until the next Classify on the same Classifier, and only while
//     the line's bytes are unchanged.
//   - Neither allocates per frame in steady state. The Reader keeps a
//     buffer of the size it was made with; a longer line is read into a
//     long buffer: on Linux one of a few mappings of max+1 bytes shared by
//     the process, resident only where a line has touched it (so the line
//     is held once); else one from a process-wide pool, or blocks joined
//     into a new one, at most max+1 bytes. It goes back to its pool once
//     the line is consumed (or at Reader.Release): a mapping keeps its
//     first MiB resident and gives its other pages back, a heap buffer is
//     freed by the next garbage collection unless another long line takes
//     it first. A Classifier keeps decoded
//     strings (at most ~3 bytes per input byte of a decoded method, name
//     or id, dropped after a frame that needed more than 1 MiB), at
//     most MaxBatch Messages for the line and MaxBatch for its other
//     readings, one Rounds for each of those that has a member Rounds
//     reads, and Inputs: at most MaxInputs per list per message and
//     8192 per line, members beyond those only counted.
//   - Bad input is the normal case: no input makes either panic, recurse
//     without bound, or hold memory beyond those bounds.
//
// # What "one JSON value" means
//
// A line is one JSON value if encoding/json would accept it (json.Valid):
// RFC 8259 grammar, white space " \t\r\n" around it (so "\n" and "\r\n"
// endings are fine), nesting at most 10000 deep, strings without raw control
// characters and with valid escapes. Like encoding/json (and JSON.parse on a
// UTF-8-decoded line) the classifier accepts invalid UTF-8 inside strings and
// decodes it, and unpaired surrogate escapes, as U+FFFD. A byte order mark,
// a second value, trailing bytes, a value cut short (an object split over
// lines) or deeper nesting make the line NotJSON.
//
// This package does not use fastjson, for reasons measured against
// v1.6.10: its Parser accepts what encoding/json rejects (NaN, raw
// control characters, bad escapes, 1.2.3), so validation is a second pass;
// its Validate recurses once per nesting level, and a 16 MiB line of '['
// kills the process ("fatal error: stack overflow", not a recoverable
// panic); its errors allocate; its unescaping differs from encoding/json's
// on surrogates; and its Parser keeps ~100 bytes per JSON value in a cache
// that never shrinks (49× the size of a line of "[0,0,…]", ~3 GiB pinned
// for one 64 MiB frame). This package validates in one iterative pass,
// keeping one bit per nesting level, and looks only at the members that
// classification needs; BenchmarkClassify compares it with
// Validate+Parse and with encoding/json.
//
// # Parser differentials are attacks
//
// The peers on either side may decode a line with any JSON decoder, and the
// relay must record what the child will execute, not what it would like the
// line to mean. Known behaviours: JSON.parse and Python's json keep the last
// of duplicate keys; Go's encoding/json keeps the last too, but also binds
// keys equal under Unicode simple case folding ("Method", "paramſ" with
// U+017F), and encoding/json/v2's case-insensitive mode also ignores '_' and
// '-'; C decoders may cut strings at U+0000; decoders replace, keep, drop or
// reject invalid UTF-8 and unpaired surrogates. So, for the members method,
// id and params of a message and name inside params (and id, result, error
// and result.isError of a response), Malformed is set when:
//
//   - a key appears twice (after escape decoding: "met\u0068od" is method);
//   - a key is a case-variant of the name: equal under Unicode simple case
//     folding with ASCII '_' and '-' ignored, but not exactly equal;
//   - a value has the wrong type: method or name not a string, id an object,
//     array or boolean, params not an object in a tools/call;
//   - a decoded method or name contains U+0000 or U+FFFD;
//   - a response has both result and error.
//
// IsToolCall is set if any method member, exact or variant, duplicate or
// not, decodes to "tools/call" — or would once cut at U+0000 and stripped of
// U+FFFD — because some decoder reads it so and the relay must record it.
// Tool is only given when params and name are unambiguous. Malformed is only
// computed for the messages the relay records: tool calls, responses, and
// requests and notifications any of whose method members reads (so) as
// tasks/get, tasks/result, tasks/update, tasks/cancel, notifications/tasks,
// notifications/tasks/status or notifications/cancelled.
//
// The members read for rounds and tasks (Message.Rounds) follow the same
// rules: in params, _meta and its "io.modelcontextprotocol/protocolVersion",
// taskId, status, requestState, inputResponses, inputRequests, task,
// requestId, result (and its isError) and error; in result, resultType,
// taskId, task (and its taskId and status), status, requestState,
// inputRequests, protocolVersion, action, result (and its isError) and
// error. A
// duplicate or case-variant key of any of them, a wrong type (_meta,
// inputResponses, inputRequests, task inside result and result inside
// params or result not objects; the revision, taskId, status,
// requestState, resultType, protocolVersion and action not strings;
// requestId not a string, number or null), U+0000 or U+FFFD in a decoded
// taskId, status, requestState, resultType or action, makes a recorded
// message Malformed;
// so does, inside an inputRequests or inputResponses value, a duplicate or
// case-variant "method" or "action" key or one of those with U+0000 or
// U+FFFD, and a key of inputRequests or inputResponses repeated (map keys
// are matched exactly by every decoder; a repeat is found when one of its
// occurrences is among the first MaxInputs, the ones listed). A result
// with both taskId (or status) and task is Malformed: a 2026-07-28 reader
// takes the flat member, a 2025-11-25 one the task's. A value whose
// reading is unclear is not given (its Has flag is false), whatever the
// message; a list is given whole or not at all. The descent is bounded:
// only params, params._meta, params.result, the values of
// params.inputResponses and params.inputRequests, result, result.task,
// result.result and the values of result.inputRequests are looked into.
//
// params.arguments is read with the same discipline and handed over raw
// (Message.Args, the span of the line, for a policy to read): a duplicate
// or case-variant arguments key is Malformed, since decoders would bind
// different arguments to one call, and Args is then not given. Text inside
// the arguments that decoders read differently (invalid UTF-8, an unpaired
// surrogate escape, U+0000, checked on the raw bytes so that "\\u0000" is
// text) is reported in Message.ArgsText rather than made Malformed: clients
// send such text in arguments, and only a reader of the values is misled,
// so it is that reader's to refuse. Duplicate keys inside the arguments
// object are not looked for here; a reader of the values meets them.
//
// Not malformed, by decision: a missing jsonrpc member or one other than
// "2.0" (peers ignore it; the line is still relayed and recorded as what it
// carries); a tools/call without params or without name (not ambiguous:
// every decoder agrees the name is absent; HasTool is false); an id string
// containing U+FFFD (ids are only matched, in order, and both sides see the
// same bytes).
//
// # Rounds and tasks
//
// Message.Op names the method among those the relay tracks (tools/call,
// initialize, the tasks methods of both revisions, notifications/cancelled
// and the requests a server sends a client), from the method a
// last-wins decoder keeps, so that the relay compares no strings per line.
// Message.Rounds gives, decoded, what a message says about the revision,
// multi round-trip requests (MRTR) and tasks:
//
//   - a request's revision, params._meta["io.modelcontextprotocol/protocolVersion"]
//     (Revision), and initialize's answer's result.protocolVersion
//     (ProtocolVersion);
//   - a retry's params.requestState (RequestState) and the keys of
//     params.inputResponses, each with its value's "action" (InputResponses,
//     also for tasks/update); an answer's result.resultType (ResultType),
//     result.requestState (ResultState) and the keys of result.inputRequests,
//     each with its value's "method" (InputRequests);
//   - tasks: params.taskId (TaskID) of tasks/get, tasks/result,
//     tasks/update, tasks/cancel, notifications/tasks and
//     notifications/tasks/status, with params.status (Status); params.task
//     of a 2025-11-25 task-augmented request (TaskAugmented); an answer's
//     task id and status, flat (2026-07-28: CreateTaskResult, tasks/get)
//     or inside result.task (2025-11-25 CreateTaskResult,
//     ResultTaskNested), as ResultTaskID and ResultStatus; a task's final
//     result.result.isError or params.result.isError (TaskResultIsError)
//     and its error member (TaskHasError); notifications/tasks's
//     params.inputRequests (InputRequests);
//   - notifications/cancelled's params.requestId (CancelID), an ID read and
//     matched as message ids are;
//   - a client's answer to elicitation/create: result.action
//     (ResultAction).
//
// Lists keep at most MaxInputs members in line order and count them all
// (InputRequestsN, InputResponsesN). A message without any of these
// members shares one zero Rounds.
//
// # Every reading of a line
//
// MCP's stdio transport ends messages at '\n', and the Reader splits there;
// but the peers on either side read lines their own way, and a relay that
// judges one reading hands the others to the child unjudged. The readers
// of the mainstream SDKs and runtimes, and how each reads a line:
//
//   - at '\n' only, one value per line, a trailing '\r' dropped: the
//     TypeScript SDK (ReadBuffer: indexOf("\n"), JSON.parse, the MCP
//     schema), Go's bufio.Scanner (ScanLines), Rust's BufRead::lines;
//   - at "\r\n", '\n' and a bare '\r': Python's text I/O in universal-newline
//     mode (the Python SDK's stdio server iterates a TextIOWrapper over
//     stdin), Node's readline (/\r?\n|\r(?!\n)/), Java's
//     BufferedReader.readLine (the Java SDK), .NET's
//     TextReader.ReadLine (the C# SDK). None of them, nor any SDK reader,
//     ends a line at U+2028, U+2029, U+0085, '\v' or '\f' (Python's
//     str.splitlines does; no transport uses it);
//   - as a stream of values, line ends being white space: the Go SDK (a
//     json.Decoder over stdin), and, per line, decoders that read the first
//     value and ignore what follows (Jackson's default, and the Go SDK's
//     message decoder);
//   - leniently: Python's json reads NaN, Infinity and -Infinity as numbers;
//     some readers drop a byte order mark;
//   - recursively: a handler that takes a batch element that is an array
//     as a batch of its own finds the messages of arrays inside arrays.
//
// Classify reads the line as one JSON value (Frame.Msgs: what the policy
// judges and the relay forwards under it) and, when the readings can
// differ — a '\r' inside the line other than one right before its end, a
// line that is not one value, an array inside a batch — reads it as the
// others do too: the pieces between bare CRs, each as a stream of values
// read leniently, and arrays inside a batch recursively. A line whose
// readings differ gets an Anomaly (AnomalyCR when two or more pieces have
// content; AnomalyNested for a message inside a nested array; the NotJSON
// reasons otherwise), and Frame.Hidden holds every tool call and every
// answer (Message.Answers) that the other readings find and Msgs does not,
// each object once (by its offset, Message.Off). So, for any line, every
// call some reader executes is in Msgs or Hidden, and one only in Hidden
// comes with an anomaly: the relay records an intent for each, and, under
// a policy, drops the line. A line whose only '\r's sit in white space at
// its ends (or before its '\n') reads alike everywhere and is not an
// anomaly.
//
// Readers that join lines (a stream decoder reading a value cut over
// several lines) cannot be followed line by line: such a line is NotJSON,
// recorded as an anomaly, and dropped under a policy.
//
// # Ids
//
// Ids are matched by value through ID.Key: numbers are compared exactly as
// decimal values (1, 1.0, 1e0, 10e-1 are equal; -0 equals 0; arbitrarily
// long integers and exponents are exact), strings by their decoded value, a
// string never equals a number.
//
// Clients match the responses they read more loosely, and a response that a
// client takes for the answer to its call must not go unrecorded. How the
// SDK clients match:
//
//   - the TypeScript SDK parses the line with JSON.parse (the last of
//     duplicate keys wins, keys exact), requires the id to be a string or an
//     integer number, and looks up Number(id) among the numbers of its
//     requests: "1", " 1 ", "1e0", "0x1" and "" (0) are numbers to it, and a
//     number id is rounded to a float64 (9007199254740993 answers
//     9007199254740992);
//   - the Python SDK reads the id as an int or a string and turns a string
//     into int(id) where it can ("+1", "1_0", " 1 ", digits of any script);
//   - the Go SDK decodes the id into a float64 and truncates it to an int64
//     (1.5 and 1.9 answer 1); a string is matched exactly; keys are exact,
//     the last duplicate wins.
//
// ID.LooseKeys gives the Keys of these readings; Message.AltIDs the other
// values of a repeated id member (the first or last exact key, the first or
// last of any spelling: what first-wins, last-wins and case-insensitive
// decoders keep); Message.Answers marks any message with an id and a result
// or error, a method or not (a client whose schema ignores extra members
// takes it as a response).
package frame

import "errors"

// Errors returned by Reader.Next. Classify has none: a line that is not
// JSON-RPC is a classification, not an error.
var (
	// ErrFrameTooLarge: a line (its '\n' included) is longer than the
	// Reader's max. Sticky; the relay ends the session (exit 65).
	ErrFrameTooLarge = errors.New("frame: line longer than max frame")
	// ErrBadRead: the underlying io.Reader returned an impossible count.
	ErrBadRead = errors.New("frame: reader returned an invalid count")
	// ErrReleased: Reader.Release was called; the Reader reads no more.
	ErrReleased = errors.New("frame: reader released")
)
