package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"

	"github.com/aegisrelay/aegis/journal/record"
)

// sessionBook is the bookkeeping of sessions and calls, in line order:
// which session each record belongs to, the intents still waiting for
// their outcome, and what a session lacks when it closes. It is used by
// the verifier's goroutine only.
//
// Sessions may interleave (aegis wrap --listen runs one per client on one
// log): a session is live from its session_start until its session_end,
// a recovery (the crash it answers ended every session then live) or the
// end of the log, and each record belongs to the live session its sid
// names. A signature covers, through the chain, the records of every
// session before it.
type sessionBook struct {
	pinned ed25519.PublicKey // Options.Key
	rep    *Report           // Sessions is appended to as sessions open
	byID   map[[16]byte]*SessionReport
	cur    *SessionReport   // the session the last record belonged to
	live   []*SessionReport // opened and not closed, in the order opened
	// After a recovery: the sid the next session_start must carry, and the
	// unsigned records (the recovery) that its first signature covers.
	expectSID   *[16]byte
	pendingRecs uint64
	keys        certBook    // session keys and their certificates (certs.go)
	sigs        *sigChecker // checks the certificates' signatures with the records'
}

func newSessionBook(pinned ed25519.PublicKey, rep *Report, sigs *sigChecker) sessionBook {
	return sessionBook{pinned: pinned, rep: rep, byID: map[[16]byte]*SessionReport{}, sigs: sigs}
}

// enter moves to the session r belongs to: a recovery closes the current
// one and names the next, a session_start opens it (checking the id and
// the pinned key), and any other record must fall inside an open session;
// a session whose start is in missing records (gapEnd > 0: reported) is
// opened as its first record comes. It reports whether r is to be counted
// in the current session (count).
func (b *sessionBook) enter(r *record.Record, gapEnd uint64, out *findings) bool {
	switch r.Kind {
	case record.KindRecovery:
		b.close(out)
		sid := r.SID
		b.expectSID = &sid
		b.pendingRecs = 1
		b.keys.recovery(r)
		if r.Sig != nil {
			out.invalid(r, "signed recovery: its key is named only by the session_start after it")
		}
		return false
	case record.KindSessionStart:
		if b.expectSID != nil && *b.expectSID != r.SID {
			out.invalid(r, "session_start after a recovery carries another session id")
		}
		b.expectSID = nil
		if _, dup := b.byID[r.SID]; dup {
			out.invalid(r, "session id %x reused", r.SID)
		}
		s := r.Body.(*record.SessionStart)
		b.open(&SessionReport{
			SID: hex.EncodeToString(r.SID[:]), Key: record.FormatPublicKey(s.Key), FirstSeq: r.Seq,
			sid: r.SID, pub: s.Key, open: map[uint64]openCall{}, Unsigned: b.pendingRecs,
		})
		b.checkKey(r, s, gapEnd, out) // certs.go
		b.pendingRecs = 0
	default:
		if b.expectSID != nil {
			out.invalid(r, "a recovery must be followed by its session_start")
			b.expectSID = nil
		}
		if gapEnd > 0 && b.byID[r.SID] == nil {
			// A session whose start is in missing records (reported): its
			// key is unknown, pinned or not (the pinned key is a root,
			// which may have certified a session key in the missing
			// session_start), so its signatures go unchecked rather than
			// each be reported in a set that is invalid already.
			b.open(&SessionReport{SID: hex.EncodeToString(r.SID[:]), Key: "(unknown: its session_start is missing)",
				FirstSeq: r.Seq, sid: r.SID, open: map[uint64]openCall{}, gapped: true})
		}
		// The current session is always the one its sid maps to: look
		// the map up only for a record of another session.
		if b.cur == nil || b.cur.sid != r.SID {
			s := b.byID[r.SID]
			if s == nil || s.closed && !s.Ended {
				out.invalid(r, "%s record outside its session", r.Kind)
				return false
			}
			b.cur = s
		}
		if b.cur.Ended {
			out.invalid(r, "%s record after session_end", r.Kind)
		}
	}
	return true
}

// open makes s the current session, live, found by its sid and reported.
func (b *sessionBook) open(s *SessionReport) {
	b.cur = s
	b.byID[s.sid] = s
	b.live = append(b.live, s)
	b.rep.Sessions = append(b.rep.Sessions, s)
}

// count counts r in the current session (entered): its calls opened and
// answered, its end checked against what the session holds, its
// signature or its lack. It returns the session's key if r's signature
// is to be checked (nil when unknown: a session begun in missing
// records, unpinned).
func (b *sessionBook) count(r *record.Record, gapEnd uint64, out *findings) ed25519.PublicKey {
	s := b.cur
	s.Records++
	s.LastSeq = r.Seq
	switch body := r.Body.(type) {
	case *record.Intent:
		s.Intents++
		if body.Call.Type != record.IDNull {
			s.open[r.Seq] = makeOpenCall(body.Call)
		}
	case *record.Outcome:
		s.Outcomes++
		c, ok := s.open[body.Intent]
		switch {
		case !ok && s.gapped && body.Intent < gapEnd:
			// Its intent may be in the missing records.
		case !ok:
			out.invalid(r, "outcome for intent seq %d, which is not an open intent of this session", body.Intent)
		case !c.matches(body.Call):
			// A copy, so that c, whose bytes call returns, stays on the
			// stack on the path every outcome takes.
			want := c
			out.invalid(r, "outcome call %s does not match intent seq %d's call %s", callText(body.Call), body.Intent, callText(want.call()))
		}
		delete(s.open, body.Intent)
	case *record.SessionEnd:
		s.Ended, s.EndReason = true, body.Reason
		if !s.gapped && (body.Counts.Intents != s.Intents || body.Counts.Outcomes != s.Outcomes) {
			out.invalid(r, "session_end counts %d intents and %d outcomes; the log holds %d and %d",
				body.Counts.Intents, body.Counts.Outcomes, s.Intents, s.Outcomes)
		}
		for seq := range s.open {
			if !s.gapped || seq >= gapEnd {
				out.invalid(r, "intent seq %d has no outcome in a session that ended", seq)
			}
		}
		if r.Sig == nil {
			out.invalid(r, "session_end is not signed")
		}
	}
	if r.Sig == nil {
		s.Unsigned++
	} else {
		for _, l := range b.live {
			l.Unsigned = 0
		}
	}
	if s.Ended && !s.closed {
		b.retire(s, out)
	}
	if r.Sig == nil {
		return nil
	}
	return s.pub
}

// missing marks the sessions still open as gapped: records of them may be
// in missing records (reported), so what those would have held (an
// intent's outcome, the session's counts) is not held against them.
func (b *sessionBook) missing() {
	if b.cur != nil {
		b.cur.gapped = true
	}
	for _, s := range b.byID {
		if !s.Ended {
			s.gapped = true
		}
	}
}

// close closes every live session, in the order they opened (a recovery
// or the end of the log ends them all), and leaves no session current.
func (b *sessionBook) close(out *findings) {
	for len(b.live) > 0 {
		b.retire(b.live[0], out)
	}
	b.cur = nil
}

// retire closes the live session s, reporting what it lacks, if anything.
func (b *sessionBook) retire(s *SessionReport, out *findings) {
	for i, l := range b.live {
		if l == s {
			b.live = append(b.live[:i], b.live[i+1:]...)
			break
		}
	}
	s.closed = true
	if s.Unsigned > 0 {
		out.incomplete(s.LastSeq, true, "session %s: %d records after its last signature (unsigned tail: not trusted)", s.SID, s.Unsigned)
	}
	if !s.Ended {
		out.incomplete(s.LastSeq, true, "session %s has no session_end (aegis stopped without closing it, or its tail was cut); %d intents without outcome", s.SID, len(s.open))
	}
}

// openCall is the call id of an intent waiting for its outcome, kept
// beyond the record it was decoded from (whose Text aliases a line that
// will be recycled). An id of up to len(short) bytes — nearly every one —
// is kept inline, so that keeping it allocates nothing; a longer one, or
// an abbreviated one, is copied (a decoded id holds at most MaxValueBytes).
type openCall struct {
	typ   record.IDType
	n     uint8
	short [22]byte
	long  *record.Call
}

func makeOpenCall(c record.Call) openCall {
	o := openCall{typ: c.Type}
	if len(c.Text) <= len(o.short) && c.Len <= 0 {
		o.n = uint8(copy(o.short[:], c.Text))
	} else {
		l := c
		l.Text = bytes.Clone(c.Text)
		o.long = &l
	}
	return o
}

// matches reports whether c is the same id: recorded the same, whole or
// abbreviated.
func (o *openCall) matches(c record.Call) bool {
	if o.long != nil {
		l := o.long
		return l.Type == c.Type && l.Len == c.Len && l.Sum == c.Sum && bytes.Equal(l.Text, c.Text)
	}
	return o.typ == c.Type && c.Len <= 0 && bytes.Equal(o.short[:o.n], c.Text)
}

// call returns the id as its record wrote it; its Text aliases o.
func (o *openCall) call() record.Call {
	if o.long != nil {
		return *o.long
	}
	return record.Call{Type: o.typ, Text: o.short[:o.n]}
}

// callText is c as its record writes it.
func callText(c record.Call) string {
	return string(record.AppendCall(nil, c)[len(`"call":`):])
}
