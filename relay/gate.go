package relay

import (
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// Gate is the tool-identity policy the relay enforces. A nil Gate
// is pass-through: every line is relayed, every intent says "pass-through",
// and the relay behaves byte for byte as one without policy code.
//
// The relay calls Begin from the client→child pump only, under its lock,
// once for each frame that carries a tools/call, and decides every call of
// that frame with the FrameDecider it returns: a reload between two frames never
// splits one frame (a batch) between two rule sets, and a call keeps the
// rule set it was decided under. Begin must be cheap: it is on the path of
// every recorded call.
type Gate interface {
	Begin(now time.Time) FrameDecider
}

// FrameDecider decides the tools/calls of one frame, in order, under one
// rule set. It is valid until the next Begin on the same Gate and is used
// by one goroutine.
type FrameDecider interface {
	// Set names the rule set: "sha256:<hex>" of the policy file's bytes.
	Set() string
	// Decide decides one call by its tool name (decoded params.name). It
	// takes no rate tokens: a rate-limited rule counts the calls of this
	// frame decided before, so the k-th call to a rule is allowed only if k
	// tokens are there. It must not retain tool.
	Decide(tool []byte) Decision
	// Commit takes the rate tokens of every call decided in this frame. The
	// relay calls it once the frame is to be relayed; a refused frame takes
	// none, since none of its calls runs.
	Commit()
}

// Decision is a verdict as the intent's "policy" records it, and, for a
// refusal, what the refusal frame says.
type Decision struct {
	Verdict string // journal.Verdict*
	Rule    string // the rule that decided, "" for none (null)
	Set     string // the rule set, "sha256:…"
	// Code is the refusal's data.aegis.code (Code* below), "" if allowed.
	Code string
	// RetryAfter is when a RATE_LIMITED call could next be allowed.
	RetryAfter time.Duration
}

// Refused reports whether the decision keeps the call from the child.
func (d *Decision) Refused() bool { return d.Code != "" }

// gateFrame decides and records the calls of one frame (chunk[start:end]
// is line) under the Gate. Every call of the frame is decided under one rule
// set before anything is recorded; if any is refused, the whole frame is:
// every call's intent says so, each call with an id gets a host_denied
// outcome, the line is dropped, and every request in it with an id is
// answered (refused calls with their own cause, the rest HOST_DENIED).
// Malformed calls and calls that name no tool are refused without asking
// the Gate: decoders may disagree about what they would run.
func (r *Relay) gateFrame(line []byte, start, end int, st *upstream, last uint64, n int) (uint64, int, error) {
	var fr FrameDecider
	refused := false
	st.decs = st.decs[:0]
	for i := range st.f.Msgs {
		m := &st.f.Msgs[i]
		if !isCall(m) {
			continue
		}
		if fr == nil {
			fr = r.cfg.Gate.Begin(r.cfg.Clock())
		}
		var d Decision
		if m.Malformed != "" || !m.HasTool {
			d = refuseMalformed(fr.Set())
		} else {
			d = fr.Decide(m.Tool)
		}
		refused = refused || d.Refused()
		st.decs = append(st.decs, d)
	}
	if fr == nil {
		return last, n, nil // no call: relayed as it is
	}
	dg := digest(line)
	st.refs = st.refs[:0]
	k := 0
	for i := range st.f.Msgs {
		m := &st.f.Msgs[i]
		if !isCall(m) {
			continue
		}
		d := &st.decs[k]
		k++
		st.intent(i, dg)
		st.in.Verdict, st.in.Rule, st.in.Set, st.in.Refused = d.Verdict, d.Rule, d.Set, refused
		seq, err := r.j.Append(&st.in)
		if err != nil {
			return 0, 0, err
		}
		r.counts.Intents++
		last, n = seq, n+1
		if !refused {
			if last, err = r.track(m, st, seq, last); err != nil {
				return 0, 0, err
			}
			continue
		}
		r.counts.Refused++
		// An outcome needs an id to name: verify matches outcomes to
		// intents with one. A refused notification is its intent alone.
		if st.in.Call.Type != record.IDNull {
			st.refs = append(st.refs, refusal{seq: seq, call: st.in.Call, own: d.Refused()})
		}
	}
	if !refused {
		fr.Commit()
		return last, n, nil
	}
	for _, rc := range st.refs {
		o := record.Outcome{Call: rc.call, Intent: rc.seq, Status: record.StatusHostDenied, Reason: ReasonSibling}
		if rc.own {
			o.Reason = ReasonNotExecuted
		}
		seq, err := r.j.Append(&o)
		if err != nil {
			return 0, 0, err
		}
		r.counts.Outcomes++
		last, n = seq, n+1
	}
	st.refused = true
	st.drop(start, end)
	st.answerFrame()
	return last, n, nil
}
