package verify

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/aegisrelay/aegis/journal/record"
)

// Session keys (record.SessionCert). A session_start with a "cert" names
// two keys: its "key", the session key that signs its records, and the
// certificate's root, the log's key, which the certificate says
// vouches for it. The root is what a session is pinned to (Options.Key)
// and what SessionReport.Key shows; the session key is what its
// signatures are checked against. A session_start without a certificate
// is signed by its "key" directly, which is then its root, as every
// session was before session keys: such a log verifies exactly as it
// did.
//
// A certificate is checked once per session key: its signature by its
// root over record.CertMessage, queued with the records' signatures
// (sigs.go: checked in their batches, and reported at its session_start's
// line if it does not verify), and the place it names (seq and prev) as
// the first record of the first session that carries it, its
// session_start or the recovery just before; a v2 certificate also names
// that session (its sid) and was made no later than its session_start's
// ts, so that it serves one session of one log: a copy in another log
// names a session that is not that log's, or claims the same session as
// the log it was taken from. A v1 certificate, written before, names
// only the place, which is the same (seq 0 after 64 zeros) for every new
// log; it is checked as it always was. A later session carrying
// the same key (sessions of one journal share it) must carry the same
// certificate, and may begin only while that journal is the log's
// latest: not after a session of another key, nor after a recovery (a
// journal's sessions begin before the next journal opens the log). So a
// session key that got out of its process cannot start sessions after
// the process that held it ended.

// certBook is what the sessionBook keeps of session keys; it is used by
// the verifier's goroutine only.
type certBook struct {
	seen map[string]*record.SessionCert // by session key, certificates checked and good
	// latest is the session key of the last session_start read, ""
	// after a recovery: the only key a later session may carry again.
	latest string
	// The place of the last recovery: the first record of the session
	// that follows it.
	recSeq  uint64
	recPrev record.Digest
	msg     []byte // a certificate's message, queued (sigChecker copies it)
}

// recovery notes the place of a recovery record.
func (c *certBook) recovery(r *record.Record) {
	c.recSeq, c.recPrev, c.latest = r.Seq, r.Prev, ""
}

// checkKey judges the keys of the session the session_start r (body st)
// has just opened, reported as s: without a certificate, its key against the
// pinned one; with one, the certificate's root against the pinned key
// and the certificate itself. gapEnd > 0 means records up to it are
// missing (reported), and a certificate may name a place among them.
func (b *sessionBook) checkKey(r *record.Record, s *SessionReport, st *record.SessionStart, gapEnd uint64, out *findings) {
	c := st.Cert
	latest := b.keys.latest
	b.keys.latest = string(st.Key)
	if c == nil {
		s.root = st.Key
		if b.pinned != nil && !b.pinned.Equal(st.Key) {
			out.invalid(r, "session %s is signed by %s, not the pinned key", s.SID, s.Key)
		}
		return
	}
	s.root = c.Root
	s.Key, s.SessionKey = record.FormatPublicKey(c.Root), record.FormatPublicKey(st.Key)
	if b.pinned != nil && !b.pinned.Equal(c.Root) {
		out.invalid(r, "session %s is certified by %s, not the pinned key", s.SID, s.Key)
	}
	if prior, ok := b.keys.seen[string(st.Key)]; ok {
		switch {
		case !sameCert(prior, c):
			out.invalid(r, "session %s: its session key %s carries another certificate than the earlier session with that key", s.SID, s.SessionKey)
		case latest != string(st.Key):
			out.invalid(r, "session %s: its session key %s is an earlier journal's, whose sessions began before another key's or a recovery", s.SID, s.SessionKey)
		}
		return
	}
	seq, prev := r.Seq, r.Prev
	if b.pendingRecs > 0 {
		seq, prev = b.keys.recSeq, b.keys.recPrev
	}
	bad := fmt.Sprintf("session %s: its key's certificate does not verify against its root %s", s.SID, s.Key)
	switch {
	case (c.Seq != seq || c.Prev != prev) && !(gapEnd > 0 && c.Seq < gapEnd):
		out.invalid(r, "session %s: its key's certificate is for sessions beginning at seq %d after %s; this one begins at seq %d after %s",
			s.SID, c.Seq, c.Prev, seq, prev)
	case !c.V1 && (c.Seq == seq && c.Prev == prev) && c.SID != r.SID:
		// The place is this session's, so the certificate is its own: a
		// v2 certificate names the session it was made for. Where the
		// place is among missing records, this may be a later session of
		// the journal, with a sid of its own, and only the place is
		// judged.
		out.invalid(r, "session %s: its key's certificate is for session %x; this one is %s", s.SID, c.SID, s.SID)
	case !c.V1 && (c.Seq == seq && c.Prev == prev) && r.TS.Before(c.TS):
		out.invalid(r, "session %s: its key's certificate was made at %s, after the session began at %s",
			s.SID, c.TS.Format(record.TimeLayout), r.TS.Format(record.TimeLayout))
	case len(c.Root) != ed25519.PublicKeySize || len(c.Sig) != ed25519.SignatureSize:
		// A decoded record's never is (record.decodeCert); SessionCert.Verify
		// rejects it.
		out.invalid(r, "%s", bad)
	default:
		// Queued: the verdict is the batch's. seen holds the certificate
		// as if good, and a later session carrying the same bytes is
		// judged by this one check.
		b.keys.msg = c.AppendMessage(b.keys.msg[:0], st.Key)
		b.sigs.addWhat(c.Root, b.keys.msg, c.Sig, out.here(), out.file, out.line, r.Seq, bad)
		if b.keys.seen == nil {
			b.keys.seen = map[string]*record.SessionCert{}
		}
		b.keys.seen[string(st.Key)] = c
	}
}

// sameCert reports whether two certificates are the same bytes.
func sameCert(a, b *record.SessionCert) bool {
	return a.Root.Equal(b.Root) && a.V1 == b.V1 && a.SID == b.SID && a.Seq == b.Seq && a.Prev == b.Prev && a.TS.Equal(b.TS) && bytes.Equal(a.Sig, b.Sig)
}
