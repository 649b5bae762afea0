// Package calls is the one model of what happened in an audit log, read
// record by record in log order: its sessions, which session each record
// belongs to, each call's intent and outcome paired, and the anomalies
// where the records break those rules. aegis log shows the calls it
// builds, verify judges the anomalies it reports; an exporter reads the
// same model.
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
// and the outcome that names the intent's seq and carries the same id.
// Its outcome comes before its session's session_end, which counts the
// session's intents and outcomes; an intent without one in a session
// that ended is an anomaly, in a session cut off it is what the cut
// left. A call is one round today: one request and its response. The
// protocol's later shapes of a call (several rounds, each a
// request/response pair with its own id; a task, a later result tied to
// the call) belong in Call beside its intent, and their anomalies here.
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
// abbreviated); counting a record that breaks no rule allocates nothing
// beyond the growth of those (TestCountAllocs).
package calls
