package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aegisrelay/aegis/internal/confine"
	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/logview"
	"github.com/aegisrelay/aegis/internal/otelexport"
	"github.com/aegisrelay/aegis/internal/pin"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/serve"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/internal/supervise/confined"
	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// wrapFlags are aegis wrap's flags, each group's in its own file.
type wrapFlags struct {
	fs                                                             *flag.FlagSet
	audit, name, client, keyPath, durability, maxFrame, policyPath *string
	allowOpenKey                                                   *bool
	maxPending                                                     *int
	callTimeout, grace                                             *time.Duration
	pins                                                           *string
	cf                                                             *confineFlags    // wrap_confine.go
	lg                                                             *serve.Log       // wrap_log.go
	lf                                                             *serve.Front     // listen.go
	wf                                                             *witnessFlags    // witness.go
	af                                                             *serve.Approvals // wrap_approvals.go
}

func newWrapFlags() *wrapFlags {
	fs := newFlags("wrap", "aegis wrap [flags] [--] CMD [ARGS…]", wrapExamples)
	return &wrapFlags{
		fs:           fs,
		audit:        fs.String("audit", "", "append the audit log to `FILE` (default: NAME.jsonl in $XDG_STATE_HOME/aegis)"),
		name:         fs.String("name", "", "name the server's default log `NAME`.jsonl (default: from the child command, e.g. server-memory for npx -y @modelcontextprotocol/server-memory)"),
		client:       fs.String("client", "", "record that the MCP client `CLIENT` (such as claude-desktop, claude-code, vscode, cursor) runs this server; 'aegis config wrap' sets it"),
		keyPath:      fs.String("signing-key", "", "sign with the PKCS#8 PEM Ed25519 key in `FILE` (default: signing.key in $XDG_CONFIG_HOME/aegis; see aegis keygen), refused if its group or others have any permission on it; or with the Ed25519 key an ssh-agent ($SSH_AUTH_SOCK) holds: ssh-agent:SHA256:<fingerprint>, ssh-agent:FILE.pub or ssh-agent:'ssh-ed25519 AAAA…'"),
		allowOpenKey: fs.Bool("allow-open-key", false, "accept a --signing-key file that its group or others may read or write (a named hole: whoever can read the key can sign records as this log's)"),
		durability:   fs.String("durability", "strict", "when records reach the disk: strict, reply, interval[:D] or none (or G3..G0)"),
		maxFrame:     fs.String("max-frame", "64MiB", "longest line either way, its newline counted, in bytes (KiB, MiB, GiB suffixes); longer ends the session with exit 65 (over --listen, a longer body is answered 413)"),
		maxPending:   fs.Int("max-pending", relay.DefaultMaxPending, "calls in flight tracked; beyond it the oldest is recorded unanswered"),
		callTimeout:  fs.Duration("call-timeout", 0, "answer a tools/call the child has not answered after `D` with a CALL_TIMEOUT error, record it timeout, and drop the late answer (0: never)"),
		grace:        fs.Duration("grace", supervise.DefaultGrace, "how long the child has to exit after its stdin closes, and after SIGTERM"),
		pins:         pin.Flags(fs),
		policyPath:   fs.String("policy", "", "enforce the tool policy in `FILE` (see 'aegis policy --help'); SIGHUP or a change of the file reloads it"),
		cf:           addConfineFlags(fs),
		lg:           addLogFlags(fs),
		lf:           addListenFlags(fs),
		wf:           addWitnessFlags(fs),
		af:           addApprovalFlags(fs),
	}
}

// wrapBoolFlag reports whether wrap's flag name takes no value: config
// reads a wrapped entry's arguments as wrap's flag parser does, and a flag
// that takes none must not swallow the child's command.
func wrapBoolFlag(name string) bool {
	f := newWrapFlags().fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// runWrap is aegis wrap: its flags, then each check that makes a setup
// mistake exit 2 before anything is opened, in the order a user fixes
// them, then the log opened and the session run (serve.Config.Run). It
// stays one flat sequence so that the order of the checks can be read at
// once.
func runWrap(args []string) int {
	f := newWrapFlags()
	audit, name, client, keyPath := f.audit, f.name, f.client, f.keyPath
	cf, lf, wf := f.cf, f.lf, f.wf
	// The flag package stops at the first argument that is not a flag
	// and drops a "--" it stops at: either way, what is left is the
	// child's argv, exactly as given.
	if code, ok := parseFlags(f.fs, args); !ok {
		return code
	}
	argv := f.fs.Args()
	if len(argv) == 0 {
		return fail(exitcode.Usage, "wrap: no child command (see 'aegis wrap --help')")
	}
	if err := lf.Check(); err != nil {
		return fail(exitcode.Usage, "wrap: %v", err)
	}
	// Over --listen the child starts only with a client's session: a
	// command that cannot be found is said now, as stdio would say it.
	if _, err := exec.LookPath(argv[0]); lf.On() && err != nil {
		fail(exitcode.CannotStart, "wrap: cannot start %q: %v", argv[0], err)
		explainEnd(supervise.Ending{Argv: argv, Result: supervise.Result{Exit: exitcode.CannotStart, Err: err,
			End: record.SessionEnd{Reason: record.EndChildStartFailed, ExitCode: exitcode.CannotStart}}})
		return exitcode.CannotStart
	}
	prof, childEnv, envNames, err := cf.resolve()
	if err != nil {
		return fail(exitcode.Usage, "wrap: %v", err)
	}
	if cf.printProfile {
		if err := confine.PrintProfile(os.Stdout, *prof, argv); err != nil {
			return fail(exitcode.Confinement, "wrap: --print-profile: %v", strings.TrimPrefix(err.Error(), "confine: "))
		}
		return exitcode.OK
	}
	if *name != "" && userfiles.SafeName(*name) != *name {
		return fail(exitcode.Usage, "wrap: --name %q: use letters, digits, '.', '_' and '-' only (it names a file)", *name)
	}
	if *client != "" && userfiles.SafeName(*client) != *client {
		return fail(exitcode.Usage, "wrap: --client %q: use letters, digits, '.', '_' and '-' only", *client)
	}
	defaultLog := *audit == ""
	if code, ok := defaultFiles(argv, audit, name, keyPath); !ok {
		return code
	}
	if *f.callTimeout < 0 {
		return fail(exitcode.Usage, "wrap: --call-timeout %v: want a positive duration such as 30s, or 0 for none", *f.callTimeout)
	}
	if err := f.af.Check(); err != nil {
		return fail(exitcode.Usage, "wrap: %v", err)
	}
	dur, err := journal.ParseDurability(*f.durability)
	if err != nil {
		return fail(exitcode.Usage, "wrap: --durability: %v", err)
	}
	frameMax, err := journal.ParseSize(*f.maxFrame)
	if err != nil {
		return fail(exitcode.Usage, "wrap: --max-frame: %v", err)
	}
	// A key that cannot be had is a setup mistake, found before the log
	// is opened.
	key, err := userfiles.SigningKey(*keyPath, *f.allowOpenKey)
	switch {
	case errors.Is(err, record.ErrKeyMode):
		return fail(exitcode.Usage, "wrap: --signing-key: %v; --allow-open-key accepts it anyway", err)
	case err != nil && strings.HasPrefix(*keyPath, userfiles.AgentPrefix):
		return fail(exitcode.Usage, "wrap: --signing-key %v", err)
	case err != nil:
		return fail(exitcode.Usage, "wrap: --signing-key: %v", err)
	}
	// Under --confine, the helper refuses a profile that would let the
	// child reach the agent's socket.
	childEnv, agent, err := userfiles.AgentFreeEnv(key, childEnv)
	if err != nil {
		return fail(exitcode.Usage, "wrap: %v", err)
	}
	if prof != nil {
		prof.Agent = agent
	}
	pol, ok := loadWrapPolicy(*f.policyPath, *name)
	if !ok {
		return exitcode.Usage
	}
	pins, err := pin.OpenFor(*f.pins, *name, pol.OnToolChange, logf)
	if err != nil {
		return fail(exitcode.Usage, "wrap: --pins: %v", err)
	}
	if code, ok := undumpable(prof); !ok {
		return code
	}
	jopts, err := f.lg.Options(*audit, journal.Options{Durability: dur, Key: key, Logf: logf})
	if err == nil {
		err = wf.check(*audit, jopts)
	}
	if err != nil {
		return fail(exitcode.Usage, "wrap: %v", err)
	}
	tel, err := otelexport.Start(otelexport.Config{Server: *name, Logf: logf, Relayed: relay.Relayed}) // nil: no OTLP endpoint set
	if err != nil {
		return fail(exitcode.Usage, "wrap: telemetry: %v", err)
	}
	defer tel.Close()
	jopts.TapLines, jopts.TapSync = tel.TapLinesFunc(), tel.TapSyncFunc()

	// Signals: SIGINT/SIGTERM/SIGHUP go to the child. SIGPIPE is caught so
	// that a client gone away shows up as EPIPE on write, not as aegis's
	// death (and, caught rather than ignored, it is default again in the child).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	start := &record.SessionStart{Aegis: aegisVersion(), Argv: argv, Name: *name, Client: *client, Durability: dur.String(), PolicySet: pol.Set()}
	start.Confine, start.Env = prof.Request(), envNames
	if err := record.Fits(start); err != nil {
		return fail(exitcode.Usage, "wrap: the child's command line, --env names and confinement paths are too long to record in one line: %v", err)
	}
	if err := ensureParent("wrap", *audit); err != nil {
		return fail(exitcode.Usage, "wrap: cannot create the folder for the audit log: %v", err)
	}
	jopts, code, ok := wf.start(key, jopts)
	if !ok {
		return code
	}
	j, code, ok := openAudit(audit, *name, defaultLog, jopts)
	if !ok {
		wf.abort()
		return code
	}
	fmt.Fprintf(os.Stderr, "aegis: recording %s to %s\n", logview.ShortArgv(argv), *audit)
	if err := lf.Bind(start, *audit, logf); err != nil {
		j.Close()
		wf.abort()
		return fail(exitcode.Usage, "wrap: %v", err)
	}
	// session_start is made durable while the child starts (Session.Ready).
	startSeq, err := j.Append(start)
	if err != nil {
		j.Close()
		wf.abort()
		return fail(exitcode.AuditIO, "wrap: %v", err)
	}
	w := wrapSession{argv: argv, audit: *audit, start: start, listen: lf.On()}
	c := serve.Config{
		Argv: argv, Env: childEnv, Launcher: confined.Launcher(prof),
		MaxFrame: frameMax, MaxPending: *f.maxPending, CallTimeout: *f.callTimeout, Grace: *f.grace,
		Stderr: os.Stderr, Logf: logf, Pins: pins,
	}
	pol.Configure(&c)
	defer c.ServeApprovals(*audit, *name, f.af, lf, logf)()
	return w.end(c.Run(serve.Run{
		Journal: j, StartSeq: startSeq, Start: start, Front: lf, Serving: func() { logf("%s", lf.Serving()) },
		Stdin: os.Stdin, Stdout: os.Stdout, Signals: sigs, Closed: wf.finish,
	}))
}

// defaultFiles fills in the server's name (from the child command when
// empty), the audit log (from the name) and the signing key that no flag
// named.
func defaultFiles(argv []string, audit, name, keyPath *string) (code int, ok bool) {
	if *name == "" {
		*name = userfiles.ServerName(argv)
	}
	if *audit == "" {
		p, err := userfiles.LogPath(*name)
		if err != nil {
			return fail(exitcode.Usage, "wrap: no --audit FILE given, and %v", err), false
		}
		*audit = p
	}
	if *keyPath == "" {
		p, err := userfiles.DefaultKey()
		switch {
		case errors.Is(err, userfiles.ErrNoKey):
			return fail(exitcode.Usage, "wrap: no signing key at %s: make it once with 'aegis keygen', or name one with --signing-key FILE", p), false
		case err != nil:
			return fail(exitcode.Usage, "wrap: no --signing-key FILE given, and %v", err), false
		}
		*keyPath = p
	}
	return 0, true
}

// openAudit opens the audit log at *audit; the default log of a server
// already running records to NAME-2.jsonl and so on (serve.OpenLog), and
// *audit says which. Every failure here is a setup mistake (exit 2).
func openAudit(audit *string, name string, defaultLog bool, jopts journal.Options) (j *journal.Journal, code int, ok bool) {
	if !defaultLog {
		name = ""
	}
	j, path, err := serve.OpenLog(*audit, name, jopts, logf)
	*audit = path
	switch {
	case errors.Is(err, journal.ErrNotLog) || errors.Is(err, journal.ErrNotRegular):
		return nil, fail(exitcode.Usage, "wrap: %v; it is left as it was", err), false
	case errors.Is(err, journal.ErrLocked):
		return nil, fail(exitcode.Usage, "wrap: %v: another aegis wrap is recording to it; give this one its own log with --name NAME or --audit FILE", err), false
	case err != nil:
		// Nothing was relayed yet: a log or head file that cannot be
		// opened is a setup mistake (a folder without write permission,
		// a read-only file system), not a failure during a session.
		return nil, fail(exitcode.Usage, "wrap: cannot start recording: %v", err), false
	}
	return j, 0, true
}

// wrapSession is what wrap says of a session once it has ended.
type wrapSession struct {
	argv   []string
	audit  string
	start  *record.SessionStart // the session_start appended
	listen bool                 // served over HTTP (--listen)
}

// logf prints an aegis: diagnostic.
func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "aegis: "+format+"\n", args...) }

// end says how the session (or serving) ended, and returns wrap's exit
// status.
func (w wrapSession) end(e serve.Ended) int {
	if !w.listen {
		// The technical line first, then one plain sentence for an
		// abnormal end (explain.go).
		defer explainEnd(supervise.Ending{Result: e.Result, CloseErr: e.CloseErr, Argv: w.argv, Confine: w.start.Confine, Audit: w.audit})
	}
	switch {
	case e.NotServed:
		return fail(e.Exit, "wrap: %v", e.Err)
	case e.AuditIO && w.listen:
		return fail(e.Exit, "wrap: audit log failed: %v", e.Err)
	case e.AuditIO:
		return fail(e.Exit, "wrap: audit log failed, nothing more was relayed: %v", e.Err)
	case e.Err != nil:
		fail(e.Exit, "wrap: %v", e.Err)
	}
	if e.HasHead {
		fmt.Fprintf(os.Stderr, "aegis: audit head %s (keep it elsewhere; check with verify --head)\n", e.Head)
	}
	return e.Exit
}
