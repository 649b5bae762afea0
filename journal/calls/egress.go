package calls

import (
	"fmt"
	"slices"

	"github.com/aegisrelay/aegis/journal/record"
)

// egress is what a session keeps of its egress connections (wrap
// --allow-egress, record.Egress), made when first needed: the opening
// records of the connections opened and not yet closed, and which
// connection numbers are finished (a refused connection's one record, an
// allowed one's closing record), as every number up to low and the
// finished ones above it; and, in a session whose session_start grants
// egress, the seqs of its intents of calls, ascending, which its egress
// records' in_flight must name.
type egress struct {
	open    map[uint64]*record.Egress
	done    map[uint64]struct{}
	low     uint64
	intents []uint64
	granted bool // its session_start grants egress: intents is kept
}

// grantEgress notes a session_start's egress grants: its session keeps
// the seqs of its intents of calls from here, for its egress records'
// in_flight.
func (s *Session[S, C]) grantEgress(st *record.SessionStart) {
	if st.Confine != nil && len(st.Confine.Egress) > 0 {
		s.egress = &egress{granted: true}
	}
}

// noteIntent keeps the seq of an intent of a call in a session whose
// egress records may name it as in flight.
func (s *Session[S, C]) noteIntent(seq uint64) {
	if s.egress != nil && s.egress.granted {
		s.egress.intents = append(s.egress.intents, seq)
	}
}

// finish marks connection n finished.
func (e *egress) finish(n uint64) {
	if n != e.low+1 {
		if e.done == nil {
			e.done = map[uint64]struct{}{}
		}
		e.done[n] = struct{}{}
		return
	}
	e.low++
	for {
		if _, ok := e.done[e.low+1]; !ok {
			return
		}
		delete(e.done, e.low+1)
		e.low++
	}
}

// finished reports whether connection n is finished.
func (e *egress) finished(n uint64) bool {
	_, ok := e.done[n]
	return n <= e.low || ok
}

// connect judges an egress record: an opening record opens its conn,
// once; a closing record (allowed, with its conn) closes a connection
// its session opened and did not close, with the opening record's host,
// port, method, address, grant, server name and in_flight; a refused
// connection's record takes a conn no other record took. Its in_flight
// names intents of calls of its session, before it. A session that does
// not grant egress holds no egress record.
func (b *Book[S, C]) connect(s *Session[S, C], r *record.Record, e *record.Egress) {
	if s.closed {
		return // after its end, an anomaly already
	}
	if s.egress == nil {
		if s.Started && !s.gapped {
			b.anomaly(Anomaly{Kind: EgressUngranted, Rec: r, Msg: "egress record in a session whose session_start grants no egress"})
		}
		s.egress = &egress{}
	}
	g := s.egress
	b.inFlight(s, r, e)
	if e.Conn == 0 {
		// A record of a log before opening records: one per connection.
		return
	}
	n := e.Conn
	switch {
	case e.Open:
		if g.open[n] != nil || g.finished(n) {
			b.anomaly(Anomaly{Kind: EgressReused, Rec: r, Msg: fmt.Sprintf("egress connection %d opened again: an earlier record of this session has its number", n)})
			return
		}
		if g.open == nil {
			g.open = map[uint64]*record.Egress{}
		}
		o := *e
		o.InFlight = slices.Clone(e.InFlight)
		g.open[n] = &o
	case g.open[n] != nil:
		o := g.open[n]
		delete(g.open, n)
		g.finish(n)
		if e.Decision != record.EgressAllowed {
			b.anomaly(Anomaly{Kind: EgressMismatch, Rec: r, Msg: fmt.Sprintf("egress connection %d, opened as allowed, ends %s", n, e.Decision)})
			return
		}
		if d := egressDiff(o, e); d != "" {
			b.anomaly(Anomaly{Kind: EgressMismatch, Rec: r, Msg: fmt.Sprintf("egress connection %d ends with %s; its opening record has another", n, d)})
		}
	case g.finished(n):
		b.anomaly(Anomaly{Kind: EgressReused, Rec: r, Msg: fmt.Sprintf("egress connection %d recorded again: an earlier record of this session ended it", n)})
	case e.Decision == record.EgressAllowed:
		g.finish(n)
		if !s.gapped {
			b.anomaly(Anomaly{Kind: EgressUnopened, Rec: r, Msg: fmt.Sprintf("egress connection %d ends allowed, but no opening record of this session opened it", n)})
		}
	default:
		g.finish(n)
	}
}

// egressDiff names the first field a closing record c does not share
// with its opening record o ("" if none).
func egressDiff(o, c *record.Egress) string {
	switch {
	case o.Host != c.Host:
		return fmt.Sprintf("host %q (opened to %q)", c.Host, o.Host)
	case o.Port != c.Port:
		return fmt.Sprintf("port %d (opened to %d)", c.Port, o.Port)
	case o.Method != c.Method:
		return fmt.Sprintf("method %q (opened by %q)", c.Method, o.Method)
	case o.Addr != c.Addr:
		return fmt.Sprintf("address %q (opened to %q)", c.Addr, o.Addr)
	case o.Grant != c.Grant:
		return fmt.Sprintf("grant %q (opened by %q)", c.Grant, o.Grant)
	case o.SNI != c.SNI:
		return fmt.Sprintf("sni %q (opened with %q)", c.SNI, o.SNI)
	case !slices.Equal(o.InFlight, c.InFlight):
		return fmt.Sprintf("in_flight %v (opened with %v)", c.InFlight, o.InFlight)
	}
	return ""
}

// inFlight judges an egress record's in_flight: at most
// record.MaxEgressInFlight seqs, each of an intent of a call of its
// session (one in missing records is not held against it).
func (b *Book[S, C]) inFlight(s *Session[S, C], r *record.Record, e *record.Egress) {
	if len(e.InFlight) > record.MaxEgressInFlight {
		b.anomaly(Anomaly{Kind: EgressInFlight, Rec: r, Msg: fmt.Sprintf("egress record names %d calls in flight; at most %d are named", len(e.InFlight), record.MaxEgressInFlight)})
		return
	}
	g := s.egress
	if !g.granted {
		return
	}
	for _, seq := range e.InFlight {
		if _, ok := slices.BinarySearch(g.intents, seq); ok || s.gapped && seq < b.gapEnd {
			continue
		}
		b.anomaly(Anomaly{Kind: EgressInFlight, Rec: r, Msg: fmt.Sprintf("egress record names intent seq %d as in flight, which is no intent of a call of this session before it", seq)})
		return
	}
}

// endEgress judges a session's egress connections at its session_end:
// aegis ends every connection, and records its end, before it.
func (b *Book[S, C]) endEgress(s *Session[S, C], r *record.Record) {
	for _, n := range s.Unclosed() {
		b.anomaly(Anomaly{Kind: EgressUnclosed, Rec: r, Msg: fmt.Sprintf("egress connection %d opened, not closed, in a session that ended", n)})
	}
}

// Unclosed returns the numbers of s's egress connections opened and not
// closed, ascending: at its close by session_end an anomaly, at a cut
// what the crash left (the opening record is written first).
func (s *Session[S, C]) Unclosed() []uint64 {
	if s.egress == nil || len(s.egress.open) == 0 {
		return nil
	}
	ns := make([]uint64, 0, len(s.egress.open))
	for n := range s.egress.open {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}
