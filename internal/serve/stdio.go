package serve

import (
	"io"
	"os"
	"strconv"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/pin"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal"
)

// Config is what every session of one wrap shares.
type Config struct {
	Argv []string
	Env  []string // nil: aegis's own environment
	// Launcher starts the child; nil is supervise.Exec.
	Launcher supervise.Launcher
	// Gate is the policy every call passes; nil passes every call.
	Gate gate.Gate
	// Approvals, with a Gate, parks the calls its approve rules decide
	// until an approver decides (relay.Config.Approvals); Server names the
	// server they are bound to (wrap's --name).
	Approvals *approval.Table
	Server    string
	// ApprovalURL asks for approvals inside the protocol
	// (relay.Config.ApprovalURL; Approvals.Elicitation).
	ApprovalURL func(id string) string
	// Watch, when set, starts what reloads Gate, recording each reload
	// through the relay it is given, until the returned stop is called.
	Watch func(r *relay.Relay, logf func(string, ...any)) (stop func())
	// Pins, when set, records every tools/list answer against the
	// server's pins, refuses calls to changed tools under on_tool_change:
	// block, and watches its file for acceptances (package pin).
	Pins *pin.Pins

	MaxFrame    int
	MaxPending  int
	CallTimeout time.Duration
	Grace       time.Duration

	// Stderr is the child's stderr, passed through untouched.
	Stderr *os.File
	// Logf prints an aegis: diagnostic.
	Logf func(format string, args ...any)
}

// watch starts c.Watch on r, if any.
func (c *Config) watch(r *relay.Relay) (stop func()) {
	stop = func() {}
	if c.Watch != nil {
		stop = c.Watch(r, c.Logf)
	}
	if c.Pins != nil {
		policyStop, pinsStop := stop, c.Pins.Watch(r, c.Logf)
		stop = func() { pinsStop(); policyStop() }
	}
	return stop
}

// relay is one session's relay, recording to j, answering on out, for
// caller.
func (c *Config) relay(j *journal.Journal, out io.Writer, caller gate.Caller) *relay.Relay {
	rc := relay.Config{Journal: j, MaxFrame: c.MaxFrame, MaxPending: c.MaxPending, Gate: c.Pins.Gate(c.Gate), Client: out, CallTimeout: c.CallTimeout,
		Caller: caller, Approvals: c.Approvals, Server: c.Server, ApprovalURL: c.ApprovalURL}
	if c.Pins != nil {
		rc.Tools = c.Pins.Session() // never a nil *pin.Session in the interface
	}
	return relay.New(rc)
}

// Stdio runs the session of aegis wrap over stdin and stdout, recording to
// j, whose session_start is at startSeq (made durable while the child
// starts). Signals received on sigs go to the child. It returns once
// session_end is written (or the log failed); the caller closes j.
func (c Config) Stdio(j *journal.Journal, startSeq uint64, stdin io.Reader, stdout io.Writer, sigs <-chan os.Signal) supervise.Result {
	r := c.relay(j, stdout, gate.Caller{Principal: "uid:" + strconv.Itoa(os.Getuid())})
	s := &supervise.Session{
		Relay: r, Journal: j, Argv: c.Argv, Env: c.Env, Launcher: c.Launcher, Grace: c.Grace,
		Stdin: stdin, Stdout: stdout, Stderr: c.Stderr, Signals: sigs, Logf: c.Logf,
		Ready: func() error { return j.Wait(startSeq, journal.BeforeRequest) },
	}
	stop := c.watch(r)
	res := s.Run()
	stop()
	return res
}
