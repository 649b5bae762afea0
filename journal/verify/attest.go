package verify

import (
	"slices"

	"github.com/aegisrelay/aegis/journal/calls"
	"github.com/aegisrelay/aegis/journal/record"
)

// The unattested tail. A record's own signature ("sig") covers it and,
// through the chain, every line before it; an attestation ("att": package
// record's doc, "Signatures"), which a later record carries, covers the
// line it names and every line before that. The lines after the last one
// covered are the unattested tail: what a writer has written and not yet
// signed, which a crash leaves behind. A writer leaves, before any
// record it does not sign itself, fewer than record.MaxUnattested bytes
// of such lines (at most one commit group), so a tail that holds more
// than that before its last line is no crash's: a finding. A shorter one
// is reported, with its session's missing end, as a gap: written, not
// forged, and not vouched for.

// tailLine is a line of the unattested tail: its seq and hash, where it
// ends (sessionBook.bytes), and the session it is counted in (nil for a
// recovery before the session_start after it is read).
type tailLine struct {
	seq      uint64
	hash     record.Digest
	end      uint64
	s        *calls.Session[*SessionReport, struct{}]
	recovery bool
}

// line counts the record r (decoded, n bytes without its '\n', entered
// in session s, nil for a recovery) in the unattested tail: its
// attestation, if any, covers the line it names; its signature, if any,
// covers every line; otherwise it joins the tail and its session's
// Unsigned.
func (b *sessionBook) line(r *record.Record, s *calls.Session[*SessionReport, struct{}], hash record.Digest, n int, out *findings) {
	if !b.read {
		b.read, b.first = true, r.Seq
	}
	b.bytes += uint64(n) + 1
	if r.AttSig != nil {
		b.attest(r, s, out)
	}
	switch {
	case r.Kind == record.KindRecovery:
		// The sessions it ends were closed, their tails judged (enter):
		// the next journal's tail begins with it, counted in the session
		// after it (sessionBook.pendingRecs).
		b.tail = append(b.tail[:0], tailLine{seq: r.Seq, hash: hash, end: b.bytes, recovery: true})
		b.coveredEnd = b.bytes - uint64(n) - 1
	case r.Sig != nil:
		b.tail, b.coveredEnd = b.tail[:0], b.bytes
		for _, l := range b.calls.Live() {
			l.Data.Unsigned = 0
		}
	default:
		if r.Kind == record.KindSessionStart {
			if k := len(b.tail) - 1; k >= 0 && b.tail[k].recovery && b.tail[k].s == nil {
				b.tail[k].s = s
			}
		}
		b.tail = append(b.tail, tailLine{seq: r.Seq, hash: hash, end: b.bytes, s: s})
		if s != nil && s.Data != nil {
			s.Data.Unsigned++
		}
	}
}

// attest judges r's attestation: it must name a line of the unattested
// tail before r, and its signature, by r's session key, is queued for
// checking; the lines up to the one it names leave the tail. An
// attestation of a line before the first one read (a segment read
// alone) cannot be checked, as a signature by an unknown key cannot.
func (b *sessionBook) attest(r *record.Record, s *calls.Session[*SessionReport, struct{}], out *findings) {
	k := r.AttSeq
	if r.Kind == record.KindRecovery {
		out.invalid(r, "attestation in a recovery: its key is named only by the session_start after it")
		return
	}
	i, found := slices.BinarySearchFunc(b.tail, k, func(l tailLine, seq uint64) int {
		switch {
		case l.seq < seq:
			return -1
		case l.seq > seq:
			return 1
		}
		return 0
	})
	switch {
	case found:
	case k >= r.Seq:
		out.invalid(r, "attestation of seq %d, which is not before it", k)
		return
	case k < b.first:
		return
	default:
		out.invalid(r, "attestation of seq %d, a line that is not in the unattested tail (covered already, or a recovery's)", k)
		return
	}
	if s != nil && s.Data != nil && s.Data.pub != nil {
		b.msg = record.AppendAttestMessage(b.msg[:0], k, b.tail[i].hash)
		b.sigs.addWhat(s.Data.pub, b.msg, r.AttSig, out.here(), out.file, out.line, r.Seq, "attestation does not verify")
	}
	b.coveredEnd = b.tail[i].end
	b.tail = b.tail[:copy(b.tail, b.tail[i+1:])]
	for _, l := range b.calls.Live() {
		l.Data.Unsigned = 0
	}
	for _, l := range b.tail {
		if l.s != nil && l.s.Data != nil {
			l.s.Data.Unsigned++
		}
	}
}

// unattested reports the unattested tail of the session rs, which ends
// at seq last without its session_end: a gap if it is what a crash
// leaves (fewer than record.MaxUnattested bytes before its last line),
// a problem if it is longer.
func (b *sessionBook) unattested(last uint64, rs *SessionReport, out *findings) {
	var before uint64
	if k := len(b.tail); k >= 2 {
		before = b.tail[k-2].end - b.coveredEnd
	}
	if before >= record.MaxUnattested {
		out.invalidSeq(last, "session %s: unattested tail of %d records, %d bytes before its last line: longer than one group (a writer signs within %d bytes); not trusted", rs.SID, rs.Unsigned, before, record.MaxUnattested)
		return
	}
	out.incomplete(last, true, "session %s: unattested tail of %d records (at most one group): written, and no signature covers them yet; not trusted", rs.SID, rs.Unsigned)
}
