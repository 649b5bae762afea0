package relay

import (
	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/journal/record"
)

// decideFrame decides the calls of the frame in st.f under Config.Gate,
// into st.decs and st.fr (nil when the frame is not to be decided: no Gate,
// not one JSON value, or no call). Every call of the frame is decided under
// one rule set. Malformed calls and calls that name no tool are refused
// without asking the Gate: decoders may disagree about what they would
// run. It runs without r.mu (recordRequests).
func (r *Relay) decideFrame(st *upstream) {
	st.fr = nil
	st.decs = st.decs[:0]
	f := &st.f
	if r.cfg.Gate == nil || f.Anomaly != "" || f.Kind != frame.Single && f.Kind != frame.Batch {
		return
	}
	for i := range f.Msgs {
		m := &f.Msgs[i]
		if !isCall(m) {
			continue
		}
		if st.fr == nil {
			st.fr = r.cfg.Gate.Begin(r.cfg.Clock())
			// The decider sees each call's round, linked now (and
			// claimed: every call decided gets its intent, which records
			// the same round).
			if r.needsLink(st) {
				r.mu.Lock()
				r.linkFrame(st)
				r.mu.Unlock()
			} else {
				st.links = append(st.links[:0], make([]record.Round, len(f.Msgs))...)
			}
			st.linked = true
		}
		var d gate.Decision
		if m.Malformed != "" || !m.HasTool {
			d = refuseMalformed(st.fr.Set())
		} else {
			st.call = gate.Call{Tool: m.Tool, Args: m.Args, HasArgs: m.HasArgs, ArgsUnclear: m.ArgsText != "", Caller: &r.cfg.Caller, Round: 1,
				Revision: m.Revision, HasRevision: m.HasRevision}
			if st.linked && st.links[i].By != "" {
				st.call.Round = st.links[i].N
			}
			d = st.fr.Decide(&st.call)
			st.call = gate.Call{} // the decider must not keep it, nor st the line
		}
		st.decs = append(st.decs, d)
	}
}

// gateFrame records the calls of one frame (chunk[start:end] is line) as
// decideFrame decided them. If any is refused, the whole frame is: every
// call's intent says so, each call with an id gets a host_denied outcome,
// the line is dropped, and every request in it with an id is answered
// (refused calls with their own cause, the rest HOST_DENIED). r.mu is held.
func (r *Relay) gateFrame(line []byte, start, end int, st *upstream, last uint64, n int) (uint64, int, error) {
	fr := st.fr
	if fr == nil {
		return last, n, nil // no call: relayed as it is
	}
	if r.parks(st, line) {
		return r.park(line, start, end, st, last, n)
	}
	refused := false
	for k := range st.decs {
		refused = refused || st.decs[k].Refused()
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
		r.intent(st, i, dg)
		st.in.Verdict, st.in.Rule, st.in.Set, st.in.Refused = verdictOf(d.Verdict), d.Rule, d.Set, refused
		st.in.RuleLine, st.in.PolicyReason = d.Line, d.Reason
		seq, err := r.j.AppendHint(&st.in, awaits)
		if err != nil {
			return 0, 0, err
		}
		r.counts.Intents++
		last, n = seq, n+1
		if !refused {
			if last, err = r.track(m, st, seq, last, true, i); err != nil {
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
		seq, err := r.j.AppendHint(&o, answers(rc.seq))
		if err != nil {
			return 0, 0, err
		}
		r.counts.Outcomes++
		last, n = seq, n+1
	}
	st.refused, st.lineOut = true, true
	st.drop(start, end)
	st.answerFrame()
	return last, n, nil
}

// verdictOf is a verdict as the intent's policy.verdict records it. A
// verdict this relay does not know is recorded as the refusal it is
// (gate.Decision.Refused).
func verdictOf(v gate.Verdict) string {
	switch v {
	case gate.Allowed:
		return record.VerdictAllowed
	case gate.RateLimited:
		return record.VerdictRateLimited
	case gate.PendingApproval, gate.Parked:
		// Refused at once, or parked (approve.go): either way it waits
		// for an approval.
		return record.VerdictPendingApproval
	}
	return record.VerdictDenied
}

// codeOf is the refusal frame's data.aegis.code for a refused verdict.
func codeOf(v gate.Verdict) string {
	switch v {
	case gate.RateLimited:
		return CodeRateLimited
	case gate.PendingApproval, gate.Parked:
		return CodePendingApproval
	case gate.ToolChanged:
		return CodeToolChanged
	}
	return CodePolicyDenied
}
