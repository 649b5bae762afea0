// Package record is the format of aegis's audit log: the bytes of every
// line, the record kinds and their fields, the hash chain, the signature
// rules, and the head file's one line. It encodes records (AppendCommon,
// Body's AppendFields, AppendSig) and decodes them (Decoder, PeekChain),
// and reads and writes the keys that sign them. It does no I/O on logs:
// package journal writes them, package segment reads their files, package
// verify judges them.
//
// Every part of a line is spelled here, once: the common fields
// (AppendCommon, LineStart) that package journal's writer appends and the
// decoder's canonical check re-encodes, the field names the canonical
// scanner reads, the one time encoder (AppendTime), and the cheap read of
// a line's seq and prev (PeekChain) by which package tlog picks the
// tree's leaves. Package segment tells a log's first bytes, and a torn
// line's, by LineStart.
//
// The constants marked as part of the format (Version, TimeLayout,
// MaxLine, MaxValueBytes, PrefixBytes, MaxListEntries, the kind names,
// verdicts, statuses, end reasons, round links, task events and actions) cannot change without making every existing log
// unverifiable; the golden files in testdata/ (kept by package journal's
// TestRecordTestdata, and rounds.jsonl, every kind and field of rounds and
// tasks, by package verify's TestRoundsGolden) show any change to what is
// written as a diff.
//
// # Format
//
// The log is UTF-8 text, one record per line, each line ended by a single
// '\n'. Every record is written by aegis's own encoder (never a copy of client
// JSON) in one canonical form: no white space, fields in a fixed order, strings
// escaping only '"', '\\' and bytes below 0x20 (as \n, \r, \t or \u00XX),
// invalid UTF-8 replaced by U+FFFD. Because the form is canonical, verify
// decodes every line and re-encodes it; a line that does not come back byte for
// byte (an unknown field, another order, other escapes, white space) is
// rejected.
//
// The common fields, in order:
//
//	{"v":2,"seq":N,"ts":"2006-01-02T15:04:05.000000000Z","sid":"<32 hex>",
//	 "kind":"<kind>","prev":"sha256:<64 hex>", <kind fields>[,"sig":"ed25519:<base64>"]}
//
// sid names the record's session: every record carries the sid of its
// session's session_start. Sessions may interleave in one log (wrap
// --listen runs one per client, each with its own sid); a session's records
// are those with its sid from its session_start to its session_end (or a
// recovery, or the end of the log).
//
// seq counts 0,1,2,… per log with no gaps (across its segments, below). prev
// is the SHA-256 of the previous line's bytes without its '\n'; for seq 0 it
// is 64 zeros. The kind fields of
// every kind are listed on the types that encode them (SessionStart,
// Enforcement, Intent, Outcome, Anomaly, PolicyReload, Recovery, SessionEnd,
// and, for rounds and tasks, Protocol, Task, ServerRequest, ClientAnswer;
// Close, "close", has none).
//
// # Outcome statuses
//
// An outcome's execution.status says how its call ended:
//
//	ok              the child answered with a result
//	tool_error      … with a result that has isError true
//	rpc_error       … with a JSON-RPC error
//	host_denied     not executed: the policy refused it or a sibling in its batch
//	unanswered      no answer: the session ended first, or the call was evicted
//	seccomp_killed  no answer: the child died of SIGSYS under the seccomp filter
//	timeout         no answer within wrap's --call-timeout: aegis answered the
//	                client with an error of its own (CALL_TIMEOUT)
//	input_required  the answer's result.resultType is "input_required": the
//	                tool has not finished; the client may retry (a round)
//	task            the call became a task: resultType "task" (2026-07-28),
//	                or a 2025-11-25 CreateTaskResult {"task":{"taskId":…}};
//	                its end is a task record
//	other           a resultType other than complete, input_required and
//	                task, named in result_type; never ok
//	cancelled       the client cancelled the call (notifications/cancelled
//	                naming it while in flight); response_digest null
//
// A result without resultType, or with resultType "complete", is complete:
// ok or tool_error. Only ok, tool_error, rpc_error, input_required, task
// and other have a response_digest. A timed-out
// call is over for the client, which has aegis's answer; if the child
// answers it later, that line is an anomaly with its response_digest and
// forwarded false: it is not relayed (unless it also answers a call still
// in flight, a batch: then forwarded true).
//
// # Decisions
//
// An intent's "policy" names the rule set that decided it ("set", the
// SHA-256 of the policy file's bytes: a call decided before a reload
// names the old file, one decided after it the new) and the deciding rule
// ("rule": "rules[i] <pattern>[ when <condition>]" or "default"), and may
// add, after "set", in this order:
//
//	,"line":N          the line of that rule (or of default) in the file set names
//	,"reason":"<text>" why the call was refused other than by the rule's action:
//	                   "condition: <CEL's error>" (a missing key, a wrong type, the
//	                   cost limit), or "arguments: <what>" where decoders read the
//	                   arguments differently; aegis's own text of at most 512 bytes,
//	                   which may quote a key or a number of the arguments
//
// Both are absent in an intent without a policy or written before they
// existed, which encodes as it always did.
//
// # Rounds and tasks
//
// MCP 2026-07-28 answers a tools/call that needs more from the client
// with input_required, and the client retries it with a new id (a round);
// the Tasks extension, and 2025-11-25's experimental tasks, answer one
// with a task whose result comes later. The fields and kinds that record
// them are optional: absent unless used, so that every record an older
// aegis wrote encodes the same. Values a peer controls are bounded values
// (below); "sha256:<hex>" of a requestState is the SHA-256 of the JSON
// string's decoded value (a client may re-escape it).
//
// An outcome may add, after latency_ns, in this order:
//
//	,"result_type":<bounded>        the result's resultType member, any value, when it has one
//	,"task_id":<bounded>            status task: the task's id
//	,"input_requests":[{"key":<bounded>,"method":<bounded>|null},…][,"more":N]
//	                                status input_required: the keys of result.inputRequests
//	                                in the order of the line; method null unless the value is
//	                                an object with a string "method"
//	,"request_state":"sha256:<hex>" status input_required: the digest of result.requestState
//
// An intent may add, after "malformed" and before "policy", in this
// order:
//
//	,"revision":<bounded>           params._meta["io.modelcontextprotocol/protocolVersion"],
//	                                when a string
//	,"principal":"<text>"           the HTTP front's principal of this request, when a
//	                                session serves several (aegis's own text)
//	,"round":{"of":S|null,"by":"state"|"match"|"unknown_state"|"reused_state","n":K}
//	                                a retry: S the seq of the input_required outcome it
//	                                answers, by how it was linked (the exact requestState;
//	                                or, neither carrying state, the same tool and arguments
//	                                from the same session within the relay's window), K its
//	                                round number (the first request is round 1 and carries
//	                                no round; its first retry is 2). A retry whose state no
//	                                outcome issued is {"of":null,"by":"unknown_state","n":0};
//	                                one whose state a round already claimed (an outcome is
//	                                answered by one round at most) is
//	                                {"of":null,"by":"reused_state","n":0}
//	,"request_state":"sha256:<hex>" the digest of the retry's params.requestState
//	,"input_responses":[{"key":<bounded>,"action":"accept"|"decline"|"cancel"|null},…][,"more":N]
//	                                the keys of params.inputResponses in the order of the
//	                                line; action when the value is an object whose "action"
//	                                is one of the three. Content is never copied: the
//	                                request_digest covers it
//	,"trace":{"traceparent":"00-<32 hex>-<16 hex>-<2 hex>"[,"tracestate":"…"]}
//	                                params._meta's W3C trace context, when its traceparent
//	                                is one of version 00 (trace-id and parent-id not all
//	                                zeros), each key once and in no other case; tracestate
//	                                when it follows the W3C grammar in at most 512 bytes.
//	                                A span built from the log continues the client's trace
//
// A list a peer controls (input_requests, input_responses, a
// server_request's calls) holds at most MaxListEntries (32) entries; when
// there were more, the list is followed, in the same object, by
// ,"more":N, N ≥ 1 the entries not written. "more" is absent otherwise
// (never "more":0), and follows only its list.
//
// The kinds:
//
//	protocol        "revision":<bounded>
//	                the protocolVersion an initialize answer settled, written as the
//	                answer passes the relay (session_start, written before the child
//	                runs, cannot know it)
//	task            "task_id":<bounded>,"intent":S,"event":"input_required"|"update"|"cancel"|"end",
//	                "via":"<method>","digest":"sha256:<hex>"|null, then by event:
//	                  end:            ,"execution":{"status":…,"reason":…|null},"latency_ns":N
//	                  input_required: ,"input_requests":[…][,"more":N]
//	                  update:         ,"input_responses":[…][,"more":N]
//	                  cancel:         nothing more
//	                an event in a task's life after its creation: S is the seq of the
//	                intent whose outcome had status task with this task_id; via the
//	                method of the message that carried it (tasks/get,
//	                notifications/tasks, tasks/result, notifications/tasks/status,
//	                tasks/update, tasks/cancel), or session_end or evicted for an end
//	                no message carried (status unfinished, digest null); digest the
//	                SHA-256 of that message's line. An end's status is ok, tool_error,
//	                rpc_error, failed, cancelled or unfinished, its latency from the
//	                call's release to the child to the end. A task has one end at
//	                most; a poll that changes nothing writes no record
//	server_request  "call":<id>,"method":<bounded>,"response_digest":"sha256:<hex>","calls":[S,…][,"more":N]
//	                a request the child sent while calls were in flight (2025-11-25:
//	                elicitation/create, sampling/createMessage, roots/list, any method):
//	                its id, its method, the digest of its line, and the seqs of the
//	                intents then in flight
//	client_answer   "call":<id>,"request":S,"request_digest":"sha256:<hex>",
//	                "execution":{"status":"ok"|"rpc_error"},"action":"accept"|"decline"|"cancel"|null
//	                the client's answer to the server_request at seq S: the digest of
//	                its line, and result.action when it is one of the three
//
// session_end's counts are unchanged: protocol, task, server_request and
// client_answer records are not counted there.
//
// # Capability
//
// Every intent ends with "capability":{"grant":"deny_all"}, and an intent
// whose call did not reach the child (Refused) adds
// "status":"denied","reason":"policy blocked before capability". This is
// the capability layer of the record format as first defined: "grant"
// names the capability minted for the call, and aegis mints none, which
// deny_all, the grant of nothing, says. It is not a placeholder: it is the
// true value, hashed into the chain of every log and read by verify as
// written. A grant minted for a call is another value of "grant"; deny_all
// keeps its meaning.
//
// An approval is the first grant aegis mints. A call an approve rule
// parks has an intent whose verdict is pending_approval, not refused, and
// which adds, after "policy",
//
//	,"approval":{"id":"<id>","server":"<name>","caller":"<principal>","timeout_ms":N}
//
// the approval id (16 hex digits, random), bound to that intent's
// request_digest (the exact frame), its policy set, the server (wrap's
// --name) and the caller, and expiring timeout_ms after the intent's ts;
// its capability is deny_all, since nothing is minted yet. The decision
// is an approval record (Approval) naming the id, the intent's seq and
// request_digest, the decision (approved, denied, expired), the approver
// (uid and user name, from the approvals socket's peer credentials; null
// for an expiry), a reason, and the grant: "approval:<id>" when approved,
// which releases that one frame, byte for byte, once; deny_all otherwise.
// An approved call's outcome follows as any call's; a denied or expired
// one's is host_denied ("not executed: approval denied", "… expired"),
// and a call still parked when its session ends gets host_denied "not
// executed: the session ended awaiting approval" before session_end.
//
// # Bounded values
//
// No line is longer than MaxLine (1 MiB, without its '\n'): that is the
// longest line verify and the writer read, and the writer never writes a
// longer one. What a client controls is bounded in the record itself:
// an intent's and an outcome's "call" (the JSON-RPC id) and an intent's
// "tool" (params.name); so is an intent's policy "rule" (a policy file's
// text), which a call may not fail for; and so are the values of rounds
// and tasks a peer controls (revision, result_type, task_id, method, the
// keys of input_requests and input_responses), written as "tool" is, and
// their lists (at most MaxListEntries entries). Such a value of at most
// MaxValueBytes (256) bytes as recorded (a number's literal, a string's
// canonical text) is written whole; a longer one is written abbreviated,
// as an object, which no genuine value is (a JSON-RPC id is never an
// object, a tool name and a rule are strings):
//
//	"call":{"type":"number"|"string","prefix":"<text>","bytes":N,"sha256":"sha256:<64 hex>"}
//	"tool":{"prefix":"<text>","bytes":N,"sha256":"sha256:<64 hex>"}
//	"rule":{"prefix":"<text>","bytes":N,"sha256":"sha256:<64 hex>"}
//
// in that order, where N is the value's length in bytes (a number's
// literal as the client wrote it, a string as decoded from the frame),
// sha256 the SHA-256 of those bytes, and prefix, a JSON string in the
// canonical form, its longest leading run of whole characters whose
// canonical text takes at most PrefixBytes (64) bytes (an invalid byte
// counting as the 3 of U+FFFD). Equal values are abbreviated equally, so
// an outcome's call matches its intent's whether whole or abbreviated.
// With the bound, an intent or an outcome takes a few KiB at most,
// whatever a client sends. The other fields hold what aegis itself
// supplies (argv, environment names, confinement paths, statuses, …):
// Append refuses, writing nothing, a record whose kind fields would make
// a line longer than MaxLine, with an error matching ErrRecord.
//
// # Signatures
//
// sig, when present, is always the last field: an Ed25519 signature, by the
// key named in the session's session_start ("key"), over the line's bytes
// before `,"sig":`. Through prev it covers every line before it.
//
// att, when present, follows the kind fields (before sig): an attestation,
// a signature by the same key of an earlier line, made after that line was
// written and carried by a later record:
//
//	,"att":{"seq":K,"sig":"ed25519:<base64>"}
//
// signs the message of AppendAttestMessage ("aegis attest v1", the seq K
// and the hash of the line with seq K, each line ended by '\n'), and so
// covers that line and every line before it. K names a line after the
// last one a signature covered and before the record that carries it.
//
// A line is attested when a signature covers it: its own, a later line's,
// or a later attestation of it or of a line after it. The writer (package
// journal's doc, "Signatures") signs every session_end and attests every
// other line within one commit group, or a bounded time where nothing is
// synced; and once the unattested lines reach MaxUnattested bytes it signs
// the next record itself. A writer that closes its log with the last line
// unattested writes a close record, signed, in that line's session
// (Close): so a cleanly closed log has no unattested tail, and a close
// record, like a session_end, is always signed. The lines after the last
// one attested are an unattested tail: what a crash leaves, reported and
// not trusted, and longer than MaxUnattested bytes before its last line,
// a finding. Logs written before attestations sign the last record of
// every commit group instead, carry no att, and verify as they always
// did.
//
// # Session keys
//
// A log has one root key, the one a verifier pins (the aegis keygen file,
// or a key an ssh-agent holds). The root signs no record: each journal
// (each aegis wrap) makes an Ed25519 session key in memory, never
// written anywhere, and the root certifies it once, in the "cert" of
// session_start, whose "key" is then the session key:
//
//	"key":"ed25519:<session key>","cert":{"root":"ed25519:<root key>","sid":"<32 hex>",
//	 "seq":N,"prev":"sha256:<hex>","ts":"<TimeLayout>","sig":"ed25519:<base64>"},…
//
// sig is the root's Ed25519 signature of the certificate's message
// (SessionCert.AppendMessage), seven lines each ended by '\n':
//
//	aegis session key v2
//	root ed25519:<root key>
//	key ed25519:<session key>
//	sid <sid>
//	seq <N>
//	prev sha256:<hex>
//	ts <ts>
//
// where sid is the sid of the first session the key signs, seq and prev
// are those of that session's first record (its session_start, or the
// recovery just before it), and ts is when the certificate was made, no
// later than that session_start's ts. The certificate names the one place
// in one log where the key's sessions begin (for a new log, seq 0 after
// 64 zeros), so it cannot be moved to another place, and the session key
// it certifies signs nothing before it; and it names the one session it
// was made for, so that a session key and certificate taken from a log
// cannot start a new log (whose place, seq 0 after zeros, is every new
// log's) without claiming to be that very session. A journal's first
// session_start carries the journal's own sid (package journal's
// Options.SID). The first line keeps the root's signature of a
// certificate from passing for any other signature the root makes: a record line or a
// head file's begins with '{', a checkpoint's with its origin, an SSH
// authentication (through an ssh-agent) with a length. Sessions that
// share one journal (wrap --listen) carry the same key and the same
// certificate, and all begin before the next journal's first record: a
// session_start may carry again only the key of the session_start
// before it, with no recovery between. Every record signature of a session is by its session
// key; the root's signatures are the certificate, the head file and the
// checkpoints, which a third party checks knowing the root alone.
//
// A v1 certificate, as journals wrote before v2, has no "sid" and its
// message begins "aegis session key v1" and has no sid line; it is
// checked as it always was, and names only the place, which for a new
// log is every new log's.
//
// A session_start without "cert", as every session was written before
// session keys, is signed by its "key" directly, and that key is its
// root: such logs verify as they always did.
//
// # Head file
//
// A head file (package journal's Options.HeadFile) holds a signed head
// of a log, for operators who ship it off the machine: one line,
//
//	{"v":2,"kind":"head","seq":N,"hash":"sha256:<hex>","ts":"<ts>","key":"ed25519:<base64>","sig":"ed25519:<base64>"}
//
// where seq and hash name the last line written (as Journal.Head) and sig
// signs the bytes before `,"sig":` with the log's root key (never a
// session key: a head file is checked knowing the root alone). "head" is no record
// kind, so the line cannot pass for a record.
//
// # Checkpoints
//
// A checkpoint file (package journal's Options.Checkpoint) holds no line of
// this format: it is a C2SP tlog-checkpoint signed note of the log's RFC
// 6962 Merkle tree, whose leaf i is the line with seq i byte for byte,
// without its '\n', signed by the log's root key under the origin
// aegis.log/<first 16 hex digits of the SHA-256 of the line with seq 0>.
// Package tlog writes its format down (journal/tlog/doc.go). Nothing in a
// record refers to a checkpoint, so logs written with and without them
// are the same bytes.
package record
