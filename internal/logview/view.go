package logview

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// Options say which lines a View shows, and when.
type Options struct {
	// Sessions: show session lines (the table always does; --json only
	// with --sessions).
	Sessions bool
	// Tool: only calls of this tool (a path.Match glob); "" shows all.
	// Session lines are shown regardless.
	Tool string
	// Since: only calls and session lines from after it; zero shows all.
	Since time.Time
	// Follow: show a call as soon as it is done rather than in record
	// order (aegis log -f, where a call in flight may never be done).
	Follow bool
}

// Item is one line to show: a call or a session line.
type Item struct {
	Call    *Call
	Session *Session
}

func (it Item) done() bool { return it.Call == nil || it.Call.done }

// View builds the lines of logs read record by record, and hands each to
// Show when it is due (doc.go). Not for concurrent use.
type View struct {
	opts  Options
	show  func(Item)
	book  *calls.Book[string, *Call] // the sessions (each its server's name) and calls of the log being read
	order []Item                     // lines not yet shown, in the order of their records
	// parked: the lines of calls parked for approval, by their intent's
	// seq, until their outcome is read.
	parked map[uint64]*Call
	dec    record.Decoder // Read's
}

// New returns a View that passes each line due to show.
func New(opts Options, show func(Item)) *View {
	v := &View{opts: opts, show: show}
	v.newLog()
	return v
}

// newLog starts the model of a log's sessions and calls (package calls)
// for the records that follow. A stdio session_start ends the sessions
// live before it (Exclusive: a stdio wrap holds its log alone), as a
// recovery does: they never got their end. Any log read may lack its
// first segments (Partial): a call whose session began there is still
// shown.
func (v *View) newLog() {
	v.book = calls.New[string, *Call](calls.Options{Exclusive: true, Partial: true})
	v.book.OnClose = v.closed
	v.parked = map[uint64]*Call{}
}

// Record takes the next record of the log, and shows the lines then due.
func (v *View) Record(r *record.Record) {
	var row *Call
	if b, ok := r.Body.(*record.Intent); ok {
		row = intentCall(r, b)
	}
	s, c := v.book.Add(r, row)
	switch b := r.Body.(type) {
	case *record.SessionStart:
		if s != nil {
			s.Data = b.Name
		}
		v.order = append(v.order, Item{Session: startLine(r, b)})
	case *record.Protocol:
		v.order = append(v.order, Item{Session: protocolLine(r, b)})
	case *record.Tools:
		v.order = append(v.order, Item{Session: toolsLine(r, b)})
	case *record.SessionEnd:
		rev := ""
		if s != nil {
			rev = s.Revision
		}
		v.order = append(v.order, Item{Session: endLine(r, b, rev)})
	case *record.Intent:
		if c != nil && c.Data != row {
			// A round of an earlier call: its line, not one of its own,
			// which keeps the round's verdict.
			if c.Data.rounds == nil {
				c.Data.rounds = map[uint64]*Call{}
			}
			c.Data.rounds[r.Seq] = row
			c.Data.update(c)
			if row.Approval != nil { // the call's line says what its round waited for
				c.Data.Approval = row.Approval
				v.parked[r.Seq] = c.Data
			}
			break
		}
		if row.Revision == "" && s != nil {
			row.Revision = s.Revision
		}
		if s != nil {
			row.hint(s.Data)
		}
		// Shown even outside its session: log shows what it can read.
		v.order = append(v.order, Item{Call: row})
		if row.Approval != nil && !row.done {
			v.parked[r.Seq] = row
		}
	case *record.Approval:
		if row := v.parked[b.Intent]; row != nil && row.SID == hex.EncodeToString(r.SID[:]) && row.Approval.ID == b.ID {
			row.Approval.decided(r, b)
		}
	case *record.Outcome:
		delete(v.parked, b.Intent)
		if c != nil {
			seq := r.Seq
			c.Data.OutcomeSeq = &seq
			c.Data.update(c)
		}
	case *record.Task:
		if c != nil {
			c.Data.update(c)
		}
	case *record.Egress:
		v.order = append(v.order, Item{Session: egressLine(r, b)})
	}
	v.flushDone()
}

// closed settles the calls of a session that stops being live: those
// waiting for a retry or a task's end are done as they are; if it is cut
// off without its session_end, those in flight are "no outcome" (a
// session's outcomes come before its end, so none will follow), and a
// session whose start was read gets a line saying so.
func (v *View) closed(s *calls.Session[string, *Call], how calls.How) {
	s.EachPending(func(c *calls.Call[*Call]) { c.Data.update(c) })
	if how == calls.Ended {
		return
	}
	s.Each(func(c *calls.Call[*Call]) { c.Data.Status, c.Data.done = "no outcome", true })
	if s.Started {
		v.order = append(v.order, Item{Session: openLine(s.SID, how)})
	}
}

// EndLog ends the reading of one log, and shows every line left: a
// session still open there has no session_end yet, and a call without an
// outcome has none (a log's calls are answered in it or not at all). The
// records that follow are another log's.
func (v *View) EndLog() {
	v.book.Close()
	v.flushDone()
	for _, it := range v.order {
		if !it.done() {
			it.Call.Status = "no outcome"
		}
		v.emit(it)
	}
	v.order = nil
	v.newLog()
}

// flushDone shows the lines at the front of the order that are done (a
// call nothing more will be added to, any session line), so that the
// output keeps the order of the records; with Follow, every line done.
func (v *View) flushDone() {
	if v.opts.Follow {
		kept := v.order[:0]
		for _, it := range v.order {
			if it.done() {
				v.emit(it)
			} else {
				kept = append(kept, it)
			}
		}
		clear(v.order[len(kept):])
		v.order = kept
		return
	}
	for len(v.order) > 0 && v.order[0].done() {
		v.emit(v.order[0])
		v.order[0] = Item{}
		v.order = v.order[1:]
	}
}

// emit shows it if the options say so.
func (v *View) emit(it Item) {
	if s := it.Session; s != nil {
		if v.opts.Sessions && (s.TS.IsZero() || v.opts.Since.IsZero() || !s.TS.Before(v.opts.Since)) {
			v.show(it)
		}
		return
	}
	c := it.Call
	if v.opts.Tool != "" {
		if c.Tool == nil {
			return
		}
		if ok, _ := path.Match(v.opts.Tool, *c.Tool); !ok {
			return
		}
	}
	if !v.opts.Since.IsZero() && c.TS.Before(v.opts.Since) {
		return
	}
	v.show(it)
}

// Read takes the records of the lines of r, up to its end, and shows the
// lines then due. A torn last line is not read; a line that does not
// decode is not taken (verify judges lines; log shows what it can read),
// nor one longer than any record, which long is told of (its length).
func (v *View) Read(r io.Reader, long func(n int64)) error {
	lr := segment.NewLineReader(r)
	for {
		line, err := lr.Next()
		var ll *segment.LongLineError
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &ll):
			long(ll.N)
		case err != nil:
			return err
		default:
			if rec, err := v.dec.Decode(line); err == nil {
				v.Record(rec)
			}
		}
	}
}

// ReadFiles takes the records of files, a log's files in seq order
// (segment.Set.OrderedFiles), as Read does; progress, if not nil, is told
// of the bytes read (segment.Open).
func (v *View) ReadFiles(files []string, progress func(n int), long func(n int64)) error {
	for _, name := range files {
		rc, err := segment.Open(name, progress)
		if err != nil {
			return err
		}
		err = v.Read(rc, long)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// Follow takes the records of the log whose live file is base, then
// keeps taking them as it grows, across rotations (segment.Follow), until
// ctx is done; idle is called whenever it waits for more, long as Read's.
func (v *View) Follow(ctx context.Context, base string, idle func(), long func(n int64)) error {
	return segment.Follow(ctx, base, segment.FollowOptions{
		Idle: idle,
		Skipped: func(err error) {
			if ll := (*segment.LongLineError)(nil); errors.As(err, &ll) {
				long(ll.N)
			}
		},
	}, func(rec *record.Record) error {
		v.Record(rec)
		return nil
	})
}
