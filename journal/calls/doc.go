// Package calls is the one model of what happened in an audit log, read
// record by record in log order: its sessions, which session each record
// belongs to, each call's intents and outcomes paired into its rounds and
// its task, and the anomalies where the records break those rules. aegis
// log shows the calls it builds (package logview), verify judges the
// anomalies it reports; an exporter reads the same model.
//
// # Sessions
//
// A session is live from its session_start until its session_end, a
// recovery (the crash it answers ended every session then live), or the
// end of the log; with Options.Exclusive, also until a session_start
// without a transport (a stdio wrap, which holds its log alone, so a
// session live when one starts never got its end). Sessions served over
// HTTP (wrap --listen) share one log and interleave: each record belongs
// to the live session its sid names. A recovery must be followed by the
// session_start of the sid it carries.
//
// A record of a sid that no session_start opened is outside its session,
// unless records before it may be missing (Book.Missing, or
// Options.Partial for a reader that may lack the start of the log): then
// its session is opened as it comes, without a start (Session.Started is
// false), and what the missing records would have held (an intent whose
// outcome is read, the session's counts) is not held against it.
//
// # Calls
//
// A call is an intent with an id (a notification, id null, opens none)
// and what answered it. Each of its outcomes names the seq of its round's
// intent and carries that intent's id. Its outcomes come before its
// session's session_end, which counts the session's intents and
// outcomes; an intent without one in a session that ended is an anomaly,
// in a session cut off it is what the cut left.
//
// # Rounds and tasks
//
// A call may take several rounds (MCP 2026-07-28): an outcome of status
// input_required waits for a retry, an intent whose round.of names that
// outcome's seq (record doc.go, "Rounds and tasks"); the retry, with an
// id of its own, and its outcome are the call's next round, and so on.
// An outcome is answered by one round at most: a round.of that names no
// input_required outcome of its session still waiting, or one a round
// already answered, is an anomaly, and the retry is a call of its own; so
// is a round whose by and of do not go together (state or match naming no
// outcome, unknown_state or reused_state naming one, any other by). A retry the relay could not
// link (by unknown_state or reused_state, of null) is a call of its own,
// as its record says.
//
// A call may become a task: an outcome of status task, with a task_id.
// The task records that name the intent of that outcome's round and the
// same task_id are the task's (its input_required, update and cancel
// events and its end); one that names no such call of its session is an
// anomaly, as is a second end, and, at the session's session_end, a task
// without its end (the relay writes an unfinished end for a task open as
// its session ends); so is an outcome naming the task_id of a task of its
// session not ended (that outcome's call takes no task records). A
// server_request names calls of its session in flight (waiting for their
// outcome, or their task's end), and a client_answer must answer a
// server_request of its session.
//
// A call's status is the final one: its last round's outcome's, or its
// task's end's. Its latency runs from its first intent to that final
// record: the recorded latency_ns where that is the whole (a call of one
// round, the end of a task made by the first round), else the difference
// of the records' ts. A call is Done when nothing more can be added to
// it: its final outcome is read and is neither input_required nor task,
// its task ended, or its session closed.
//
// A call of one round keeps no more than its intent's entry; one of
// several rounds or with a task keeps its rounds and task records (at
// most 256 of each, the rest counted), and its session keeps, until the
// session closes, the outcomes its rounds answered, its tasks and its
// server_requests, so that a second claim is found wherever it comes.
//
// # Approvals
//
// A call an approve rule parks has an intent with approval terms (record
// doc.go, "Capability"): its approval id is its session's once, and the
// call waits for one approval record, which names that intent's seq, id
// and request_digest, and whose grant is "approval:<id>" when approved,
// deny_all otherwise. A second decision, one naming no parked intent of
// its session still waiting, or one that does not match its intent, is
// an anomaly. The call's outcome comes after its decision: an approved
// call's is what its server answered, a denied or expired one's is
// host_denied; an outcome before any decision is an anomaly unless it is
// the host_denied outcome that says the session ended awaiting approval
// (ReasonApprovalEnded). A session keeps the ids of its parked calls
// until it closes.
//
// # Egress
//
// A session that grants egress (its session_start's confine names
// --allow-egress grants) may hold egress records (record.Egress). One
// with a conn is the opening record of that connection ("open":true),
// its closing record (allowed, after its opening one, with the same
// host, port, method, address, grant, sni and in_flight), or a refused
// connection's one record; a conn is opened once and ended once. The
// in_flight of each names intents of calls of its session (such a
// session keeps their seqs until it closes). A connection open at its
// session's session_end is an anomaly (aegis ends every connection
// first); one open when the session is cut is what the crash left
// (Session.Unclosed). Records without conn, from logs before opening
// records, are one per connection and are not paired.
//
// # Anomalies
//
// An anomaly is reported once, where it is found (Anomaly.Rec), in log
// order, through Book.OnAnomaly. Cut anomalies are what a cut or torn
// tail leaves (a session without its end, a recovery without the
// session after it); the others, no log the journal writes holds.
//
// A Book is used by one goroutine. It keeps one entry per session and one
// per call still waiting for its outcome (its id inline, unless long or
// abbreviated), and what rounds and tasks need (above); counting the
// intent and outcome of a call of one round allocates nothing beyond the
// growth of those (TestCountAllocs).
package calls
