package verify

import (
	"crypto/ed25519"
	"encoding/hex"

	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// sessionBook is what verify keeps of sessions beside the model of
// sessions and calls (package calls), in line order: each session's
// report, keys and unsigned tail. The rules of sessions and calls are
// the model's; its anomalies are findings here, a cut one a gap. It is
// used by the verifier's goroutine only.
//
// Sessions may interleave (aegis wrap --listen runs one per client on one
// log): a session is live from its session_start until its session_end,
// a recovery or the end of the log, and a stdio session_start does not
// end the sessions before it (calls.Options.Exclusive is unset), so that
// what such a session lacks is judged at the end of the log. A signature
// covers, through the chain, the records of every session before it.
type sessionBook struct {
	pinned ed25519.PublicKey // Options.Key
	rep    *Report           // Sessions is appended to as sessions open
	calls  *calls.Book[*SessionReport, struct{}]
	// After a recovery: the unsigned records (the recovery) that the
	// first signature of the session after it covers.
	pendingRecs uint64
	keys        certBook    // session keys and their certificates (certs.go)
	sigs        *sigChecker // checks the certificates' signatures with the records'

	// The unattested tail (attest.go): the lines after the last one a
	// signature covers, in line order; bytes is where the last line read
	// ends (each line with its '\n'), coveredEnd where the last line a
	// signature covers ends; first is the seq of the first record read.
	tail       []tailLine
	bytes      uint64
	coveredEnd uint64
	first      uint64
	read       bool
	msg        []byte // an attestation's message, reused
}

func newSessionBook(pinned ed25519.PublicKey, rep *Report, sigs *sigChecker, out *findings) *sessionBook {
	b := &sessionBook{pinned: pinned, rep: rep, calls: calls.New[*SessionReport, struct{}](calls.Options{}), sigs: sigs}
	b.calls.OnAnomaly = func(a calls.Anomaly) {
		if a.Cut {
			out.incomplete(a.Seq, a.HasSeq, "%s", a.Msg)
			return
		}
		out.invalid(a.Rec, "%s", a.Msg)
	}
	b.calls.OnClose = func(s *calls.Session[*SessionReport, struct{}], how calls.How) {
		noteUnclosed(rep, s, how)
		if rs := s.Data; rs.Unsigned > 0 {
			b.unattested(s.LastSeq, rs, out)
		}
	}
	return b
}

// enter moves to the session r belongs to (calls.Book.Enter): a recovery
// notes its place and must be unsigned; a session_start's session is
// reported and its keys checked (gapEnd > 0: records up to it are
// missing, reported); a session opened without its start, after missing
// records, is reported with its key unknown. It returns the session r is
// to be counted in, or nil.
func (b *sessionBook) enter(r *record.Record, gapEnd uint64, out *findings) *calls.Session[*SessionReport, struct{}] {
	s := b.calls.Enter(r)
	switch r.Kind {
	case record.KindRecovery:
		b.pendingRecs = 1
		b.keys.recovery(r)
		if r.Sig != nil {
			out.invalid(r, "signed recovery: its key is named only by the session_start after it")
		}
		return nil
	case record.KindSessionStart:
		st := r.Body.(*record.SessionStart)
		rs := &SessionReport{SID: hex.EncodeToString(r.SID[:]), Key: record.FormatPublicKey(st.Key), FirstSeq: r.Seq,
			pub: st.Key, Unsigned: b.pendingRecs, s: s}
		s.Data = rs
		b.rep.Sessions = append(b.rep.Sessions, rs)
		b.checkKey(r, rs, st, gapEnd, out) // certs.go
		b.pendingRecs = 0
		return s
	}
	if s != nil && s.Data == nil {
		// A session whose start is in missing records (reported): its
		// key is unknown, pinned or not (the pinned key is a root, which
		// may have certified a session key in the missing session_start),
		// so its signatures go unchecked rather than each be reported in
		// a set that is invalid already.
		s.Data = &SessionReport{SID: hex.EncodeToString(r.SID[:]), Key: "(unknown: its session_start is missing)", FirstSeq: r.Seq, s: s}
		b.rep.Sessions = append(b.rep.Sessions, s.Data)
	}
	return s
}

// count counts r in its session s (entered): its calls and end by the
// model, its signature or its lack here. It returns the session's key if
// r's signature is to be checked (nil when unknown: a session begun in
// missing records).
func (b *sessionBook) count(r *record.Record, s *calls.Session[*SessionReport, struct{}], out *findings) ed25519.PublicKey {
	b.calls.Count(r, struct{}{})
	rs := s.Data
	if r.Sig == nil && (r.Kind == record.KindSessionEnd || r.Kind == record.KindClose) {
		out.invalid(r, "%s is not signed", r.Kind)
	}
	b.calls.Settle()
	if r.Sig == nil {
		return nil
	}
	return rs.pub
}

// close ends the log: every live session is cut, and what each lacks,
// and a recovery with no session after it, is reported. The reports then
// take their sessions' counts.
func (b *sessionBook) close() {
	b.calls.Close()
	for _, rs := range b.rep.Sessions {
		s := rs.s
		rs.LastSeq, rs.Records, rs.Intents, rs.Outcomes = s.LastSeq, s.Records, s.Intents, s.Outcomes
		rs.Ended, rs.EndReason = s.Ended, s.EndReason
	}
}
