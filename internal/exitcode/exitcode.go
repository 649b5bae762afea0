// Package exitcode is the one table of the exit statuses of the aegis
// command: of wrap (its own failures, otherwise the child's status), of
// verify, log and policy, and of the confinement helper wrap starts.
//
// It is a leaf, importing nothing, because three layers share it: the
// confinement helper (package confine) exits with the statuses wrap then
// reports as its own, package relay maps how a session ended to wrap's
// status, and cmd/aegis uses them for every command. confine is imported
// by relay and relay by cmd/aegis, so the table cannot live in either of
// the upper two without a cycle, and it is not confinement's to own.
//
// The values are part of the command's interface: scripts test them.
package exitcode

const (
	// OK: the command did what was asked; verify: the log is valid.
	OK = 0
	// Invalid: verify found the log invalid (a line changed, removed,
	// added or moved, a bad signature, not a log), or policy found the
	// policy file invalid.
	Invalid = 1
	// Usage: bad flags or arguments, an input that cannot be read, or
	// nothing to work on; wrap: a file refused before the child starts.
	Usage = 2
	// Incomplete: verify found the log valid but incomplete (a session
	// with no session_end, or records after the last signature).
	Incomplete = 3

	// FrameTooLarge: wrap met a line longer than --max-frame.
	FrameTooLarge = 65
	// Confinement: --confine could not be enforced; nothing was executed.
	Confinement = 69
	// AuditIO: the audit log could not be written; nothing more was relayed.
	AuditIO = 74
	// CannotExec: the child exists but could not be executed (as a shell
	// reports it).
	CannotExec = 126
	// CannotStart: the child could not be started, or does not exist (as a
	// shell reports it).
	CannotStart = 127
)

// Worse returns the worse of two statuses of verify (and of the checks
// it makes with it): Usage (input that cannot be read) over Invalid over
// Incomplete over OK. With several logs, verify exits with the worst.
func Worse(a, b int) int {
	rank := func(c int) int {
		switch c {
		case Incomplete:
			return 1
		case Invalid:
			return 2
		case Usage:
			return 3
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
