package serve

import (
	"errors"
	"io"
	"os"

	"github.com/aegisrelay/aegis/internal/exitcode"
	"github.com/aegisrelay/aegis/internal/supervise"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// Run is one aegis wrap once its log is open and its session_start
// (Start, at StartSeq) appended: the stdio session, or the HTTP front
// when Front is on.
type Run struct {
	Journal  *journal.Journal
	StartSeq uint64
	Start    *record.SessionStart
	// Front, when on and bound, is served (Config.HTTP), calling Serving
	// once the server is about to accept; otherwise the one session runs
	// over Stdin and Stdout (Config.Stdio).
	Front   *Front
	Serving func()
	Stdin   io.Reader
	Stdout  io.Writer
	Signals <-chan os.Signal
	// Closed, when set, is called once the log is closed, before End
	// returns: what must follow the log's last record (the witnesses'
	// last checkpoint).
	Closed func()
}

// Ended is how a wrap ended, for the command to say.
type Ended struct {
	Exit int // wrap's exit status
	// Err is what failed: the session's error, the log's, or the front's.
	// AuditIO says it is the log's (Exit is exitcode.AuditIO), NotServed
	// that HTTP stopped before serving (ErrNotServed; Closed was not
	// called).
	Err                error
	AuditIO, NotServed bool
	// Result is the stdio session's, and CloseErr what closing the log
	// returned (supervise.Ending says both in a sentence).
	Result   supervise.Result
	CloseErr error
	// Head is the log's signed head once closed; HasHead is false for a
	// log nothing was written to.
	Head    record.Head
	HasHead bool
}

// Run runs r, then closes the log, calls r.Closed and reads the head:
// the one ending of both fronts.
func (c Config) Run(r Run) Ended {
	var e Ended
	j := r.Journal
	if r.Front.On() {
		var err error
		e.Exit, err = c.HTTP(j, r.StartSeq, r.Front.Options(r.Start, r.Signals, r.Serving))
		if errors.Is(err, ErrNotServed) {
			j.Close()
			e.Err, e.NotServed = err, true
			return e
		}
		e.CloseErr = j.Close()
		e.Err = errors.Join(err, e.CloseErr)
		e.AuditIO = e.Err != nil || e.Exit == exitcode.AuditIO
	} else {
		e.Result = c.Stdio(j, r.StartSeq, r.Stdin, r.Stdout, r.Signals)
		e.CloseErr = j.Close()
		e.Exit, e.Err = e.Result.Exit, e.Result.Err
		if e.AuditIO = errors.Is(e.Err, journal.ErrIO) || errors.Is(e.CloseErr, journal.ErrIO); e.AuditIO && e.Err == nil {
			e.Err = e.CloseErr
		}
	}
	if r.Closed != nil {
		r.Closed()
	}
	if e.AuditIO {
		e.Exit = exitcode.AuditIO
	}
	e.Head, e.HasHead = j.Head()
	return e
}
