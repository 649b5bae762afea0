package relay

import (
	"crypto/sha256"
	"hash"
	"sync/atomic"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal/record"
)

// Rounds (MCP 2026-07-28 multi round-trip requests). A tools/call answered
// resultType "input_required" has not run: the client retries it, with a
// new id, the server's requestState (when there was one) and its
// inputResponses. The relay links each retry's intent to the outcome that
// issued what it presents:
//
//   - by "state": the retry's params.requestState is the exact state an
//     input_required outcome of this session carried (the SHA-256 of the
//     decoded string, so a client's re-escaping does not matter);
//   - by "match": neither carries a state, and the retry names the same
//     tool with the same params.arguments bytes (their SHA-256, with the
//     session's principal) as a tools/call answered input_required
//     without state in this session within matchWindow;
//   - "unknown_state": the retry carries a state no outcome the relay
//     remembers issued (of null, n 0);
//   - "reused_state": the retry presents a state an earlier round already
//     claimed (of null, n 0): an outcome is claimed by at most one round.
//
// A request linked to nothing carries no "round": it is round 1 of its
// call. The table of what outcomes issued holds at most Config.MaxPending
// entries of about 100 bytes; beyond it the oldest is forgotten, and a
// retry presenting its state is then unknown_state (or, for a match, a
// first round).
type issued struct {
	sum     [32]byte // the state's digest, or the match digest
	byState bool     // sum is a requestState's digest
	seq     uint64   // the input_required outcome's seq
	n       int      // the round number of the call it answered
	at      time.Time
	claimed bool
	prev    *issued // the table's order, oldest first
	next    *issued
}

// matchWindow is how long an input_required outcome without state can be
// claimed by a retry linked by match.
const matchWindow = 10 * time.Minute

// roundTable holds what input_required outcomes issued. Under Relay.mu,
// but for live, which the client→child pump reads without it.
type roundTable struct {
	byKey      map[[32]byte]*issued
	head, tail *issued
	n, max     int
	live       atomic.Bool // n > 0
}

func newRoundTable(max int) *roundTable {
	return &roundTable{byKey: map[[32]byte]*issued{}, max: max}
}

// add remembers that the outcome at seq, which answered round n, issued
// sum (a state's digest when byState, else a match digest). A later
// outcome issuing the same sum takes its place.
func (t *roundTable) add(sum [32]byte, byState bool, seq uint64, n int, at time.Time) {
	if old := t.byKey[sum]; old != nil {
		t.unlink(old)
	}
	if t.n >= t.max && t.head != nil {
		t.unlink(t.head)
	}
	e := &issued{sum: sum, byState: byState, seq: seq, n: n, at: at}
	t.byKey[sum] = e
	e.prev = t.tail
	if t.tail != nil {
		t.tail.next = e
	} else {
		t.head = e
	}
	t.tail = e
	t.n++
	t.live.Store(true)
}

func (t *roundTable) unlink(e *issued) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.tail = e.prev
	}
	e.prev, e.next = nil, nil
	delete(t.byKey, e.sum)
	t.n--
	t.live.Store(t.n > 0)
}

// link returns the round of a tools/call that carries a requestState
// (state, its digest) or not, whose match digest is match (hasMatch), and
// claims the outcome it links to. The zero Round (By "") is a first round.
func (t *roundTable) link(state *[32]byte, match *[32]byte, clock func() time.Time) record.Round {
	if t.n == 0 {
		if state != nil {
			return record.Round{By: record.RoundUnknownState}
		}
		return record.Round{}
	}
	if state != nil {
		e := t.byKey[*state]
		switch {
		case e == nil || !e.byState:
			return record.Round{By: record.RoundUnknownState}
		case e.claimed:
			return record.Round{By: record.RoundReusedState}
		}
		e.claimed = true
		return record.Round{Of: e.seq, HasOf: true, By: record.RoundByState, N: e.n + 1}
	}
	if match == nil {
		return record.Round{}
	}
	e := t.byKey[*match]
	if e == nil || e.byState || e.claimed || clock().Sub(e.at) > matchWindow {
		return record.Round{}
	}
	e.claimed = true
	return record.Round{Of: e.seq, HasOf: true, By: record.RoundByMatch, N: e.n + 1}
}

// linkFrame links each call of the frame in st.f, read as one value
// every reader reads alike, to the round it is (st.links, by message),
// claiming what it links to: every such call gets an intent. Called with
// r.mu held.
func (r *Relay) linkFrame(st *upstream) {
	st.links = st.links[:0]
	f := &st.f
	for i := range f.Msgs {
		var round record.Round
		m := &f.Msgs[i]
		if f.Anomaly == "" && isCall(m) && m.Malformed == "" && i < len(st.sums.match) {
			var state, match *[32]byte
			if m.HasRequestState {
				state = &st.sums.state[i]
			} else if st.sums.match[i] != ([32]byte{}) {
				match = &st.sums.match[i]
			}
			if a, ok := r.linkAsked(m, match); ok {
				round = a // approve_elicit.go
			} else if state != nil || r.rounds.n > 0 {
				round = r.rounds.link(state, match, r.cfg.Clock)
			}
		}
		st.links = append(st.links, round)
	}
}

// needsLink reports whether a call of the frame in st.f may be a linked
// round: it carries a state, or outcomes have issued rounds. Read without
// r.mu.
func (r *Relay) needsLink(st *upstream) bool {
	if r.rounds.live.Load() || r.asking.Load() {
		return true
	}
	for i := range st.f.Msgs {
		if st.f.Msgs[i].HasRequestState {
			return true
		}
	}
	return false
}

// callSums is what the client→child pump works out of a frame's calls
// before it takes the relay's lock: each call's match digest and its
// requestState's digest (hashing a long line under the lock would stall
// the other pump).
type callSums struct {
	h     hash.Hash
	sum   [sha256.Size]byte
	match [][32]byte // per message of Frame.Msgs; zero for none
	state [][32]byte
}

// matchSep separates the parts hashed into a match digest.
var matchSep = []byte{0}

// prepare fills s for the calls of f, read for caller (the principal).
func (s *callSums) prepare(f *frame.Frame, principal []byte) {
	s.match, s.state = s.match[:0], s.state[:0]
	if f.Anomaly != "" {
		return
	}
	for i := range f.Msgs {
		m := &f.Msgs[i]
		var match, state [32]byte
		if isCall(m) && m.Malformed == "" {
			if s.h == nil {
				s.h = sha256.New()
			}
			if m.HasRequestState {
				state = sha256.Sum256(m.RequestState)
			}
			// Its own answer may issue a match whatever it presented.
			if m.HasTool {
				s.h.Reset()
				s.h.Write(principal)
				s.h.Write(matchSep)
				s.h.Write(m.Tool)
				s.h.Write(matchSep)
				if m.HasArgs {
					s.h.Write(m.Args)
				}
				s.h.Sum(s.sum[:0]) // a field: a local array would escape
				match = s.sum
			}
		}
		s.match = append(s.match, match)
		s.state = append(s.state, state)
	}
}
