// Package supervise runs one MCP session's child server under a
// relay.Relay, from its start to wrap's exit status: it starts the child
// through a Launcher, runs the relay's two pumps between the client and
// the child, passes signals on, ends the child, and writes the session's
// last records. The relay records; this package owns the process. It is
// the only part of a session that starts, signals or waits for one, and
// the only one that knows confinement exists, through the Launcher it is
// given (Exec, or wrap's confining re-exec: package supervise/confined)
// rather than by importing it. CleanEnv makes the child's environment
// under --clean-env.
//
// # Lifecycle
//
// Session starts the child in its own process group (a terminal's ^C
// reaches aegis alone, which forwards it once), its stdin and stdout pipes
// grown where the system allows. If the child's Launch reports what it
// enforced (under --confine), that enforcement record is appended and made
// durable (journal.BeforeResponse) before any line moves; a launch that
// refused, or that cannot say what it enforced, ends the session with
// exitcode.Confinement, its child killed in the second case since it may
// run the target unrecorded. No byte moves either way before Session.Ready
// has returned (wrap makes session_start durable there); it runs while the
// child starts, so the sync and the child's start overlap. Then:
//
//   - at the client's EOF the child's stdin is closed; it has the grace
//     period to exit, then gets SIGTERM, then after another grace period
//     SIGKILL;
//   - on a line too long or an audit I/O failure (a pump's error, or the
//     relay's Fault from its timeout timer) the child's stdin is closed
//     and it gets SIGTERM at once, then SIGKILL after the grace;
//   - a signal aegis receives is passed to the child's process group while
//     the child lives; SIGHUP does not by itself end the session;
//   - once the child has exited, its output is relayed until EOF or for
//     the grace period at most (a grandchild may hold the pipe open);
//   - every call still in flight then gets an outcome (relay.Relay.End:
//     unanswered, or seccomp_killed for a SIGSYS under a seccomp filter),
//     and session_end is appended and made durable.
//
// Once the journal has failed (journal.ErrIO), the session ends the child
// and returns exitcode.AuditIO without session_end, which could not be
// written.
//
// # Exit status
//
// Result.Exit is wrap's exit status: the child's, or 128+N if it died of
// signal N; exitcode.FrameTooLarge or exitcode.AuditIO when the session
// failed (session_end still records how the child ended);
// exitcode.Confinement when confinement was refused; exitcode.CannotExec
// or exitcode.CannotStart when the child could not be started. A child
// that dies of SIGSYS is recorded seccomp_killed only when its Launch
// reported a seccomp filter (Report.Seccomp), and then with the caveat
// that the wait status cannot tell a seccomp kill from a SIGSYS sent to
// it (SIGSYSFiltered); without one it is an ordinary signal.
//
// Ending.Sentence explains an abnormal end to someone who has never read
// the record format: one sentence naming the cause (from session_end,
// the Result and the journal's close) and the next step; ClientGone tells
// a client that went away from one that closed its input and waited;
// Summary puts a session_end in a few words for aegis log.
//
// # Concurrency
//
// A Session is run once, by one goroutine (Run). Run starts a goroutine
// per pump, one that waits for the child, and one for Ready; all have
// returned when Run does, but for a pump still blocked reading the
// client's Stdin, which ends at the client's EOF or when the relay ends.
package supervise
