package relay

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/journal/record"
)

// Approvals inside the protocol (Config.ApprovalURL; package
// documentation, "Approvals"). A 2026-07-28 request that parks is
// answered at once, resultType "input_required", with one input request
// keyed record.ElicitKeyPrefix+id: a URL-mode elicitation of the
// approvals page's row for the call. The answer is the parked intent's
// outcome, and it issues a match (rounds.go): the client's retry, the
// same tool with the same arguments from the same principal, carrying
// that key in params.inputResponses, under the same rule set, is linked
// to it, parks under the same approval id, and is released or refused by
// the approval's decision, made before it came or after. No requestState
// is sent, so the retry reaches the child as the client wrote it. A retry
// that fails any of these is a call of its own, which parks (and is
// asked) under a new id.
//
// A retry that comes before the decision waits parked, as the 2026-07-28
// URL-mode flow has a server block until the interaction completes:
// answering it input_required again would have the client loop, spending
// its rounds, until someone decides.

// asked is an approval asked inside the protocol.
type asked struct {
	seq      uint64        // the first intent parked under the id
	digest   record.Digest // its request_digest, which the approval names
	outcome  uint64        // aegis's input_required outcome of it
	match    [32]byte      // its match digest, which the retry's must equal
	linked   bool          // a retry is linked to outcome
	claimed  bool          // a retry is parked under the id
	decided  bool          // the approval record is appended
	decision approval.Decision
}

// elicitRevision is the first protocol revision whose clients are asked
// inside the protocol: 2026-07-28 has input_required results. Revisions
// are dates, so that later ones compare greater.
const elicitRevision = "2026-07-28"

// elicitURL is the address the elicitation of approval id points to, or
// "" when the call in st (its line, one request) is not asked inside the
// protocol: no Config.ApprovalURL, or a request that declares no
// revision from elicitRevision on (a 2025-11-25 client is never sent
// one), or whose client capabilities do not declare URL-mode
// elicitation (urlElicitation), or one with no match digest for its
// retry to present. Such a call waits for the approver. r.mu is held.
func (r *Relay) elicitURL(st *upstream, line []byte, id string) string {
	m := &st.f.Msgs[0]
	if r.cfg.ApprovalURL == nil || !m.HasRevision || string(m.Revision) < elicitRevision ||
		len(m.Revision) != len(elicitRevision) || len(st.sums.match) == 0 || st.sums.match[0] == ([32]byte{}) ||
		!urlElicitation(line) {
		return ""
	}
	return r.cfg.ApprovalURL(id)
}

// clientCapabilities is the params._meta key under which a 2026-07-28
// request declares its client's capabilities.
const clientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// urlElicitation reports whether the request line declares URL-mode
// elicitation: params._meta[clientCapabilities].elicitation.url is an
// object (a server must not send a mode the client does not declare; an
// elicitation without url declares form mode only). Each of those keys
// must be present once and in no other case, as readers that keep the
// first or last duplicate, or fold case, would read another answer; any
// doubt is "not declared", which costs the client nothing but the
// option. The line is parsed only here, as a call parks.
func urlElicitation(line []byte) bool {
	var p fastjson.Parser
	v, err := p.ParseBytes(line)
	if err != nil {
		return false
	}
	url := only(only(only(only(only(v, "params"), "_meta"), clientCapabilities), "elicitation"), "url")
	return url != nil && url.Type() == fastjson.TypeObject
}

// elicit answers the parked call p (its intent just appended) with the
// approval's elicitation of url: its outcome is appended, its match
// issued, and its answer added to the run's answers, written to the
// client once the outcome passes journal.BeforeResponse. It returns the
// outcome's seq. r.mu is held.
func (r *Relay) elicit(p *parkedCall, url string, m *frame.Message, st *upstream) (uint64, error) {
	key := record.ElicitKeyPrefix + p.id
	answer := appendElicitation(nil, p.answerID, key, url, string(m.Tool))
	o := record.Outcome{Call: p.call, Intent: p.seq, Status: record.StatusInputRequired,
		ResponseDigest: digest(answer), HasResponse: true,
		ResultType: record.BoundedOf([]byte("input_required")), HasResultType: true,
		InputRequests: []record.InputRequest{{Key: record.BoundedOf([]byte(key)), Method: record.BoundedOf([]byte("elicitation/create")), HasMethod: true}}}
	seq, err := r.j.AppendHint(&o, answers(p.seq))
	if err != nil {
		return 0, err
	}
	r.counts.Outcomes++
	p.asked = &asked{seq: p.seq, digest: p.digest, outcome: seq, match: st.sums.match[0]}
	r.asking.Store(true)
	p.line = nil
	st.answer = append(st.answer, answer...)
	st.refused = true // its answer waits for journal.BeforeResponse
	return seq, nil
}

// appendElicitation appends the input_required answer, with its '\n',
// to the request whose id token is id, asking for the approval keyed key
// at url.
func appendElicitation(dst, id []byte, key, url, tool string) []byte {
	type params struct {
		Mode    string `json:"mode"`
		Message string `json:"message"`
		URL     string `json:"url"`
	}
	type request struct {
		Method string `json:"method"`
		Params params `json:"params"`
	}
	type result struct {
		ResultType    string             `json:"resultType"`
		InputRequests map[string]request `json:"inputRequests"`
	}
	msg := "aegis holds this call of " + tool + " for an approver: the approvals page shows it; once approved there it runs, denied it is refused"
	res, err := json.Marshal(result{ResultType: "input_required",
		InputRequests: map[string]request{key: {Method: "elicitation/create", Params: params{Mode: "url", Message: msg, URL: url}}}})
	if err != nil {
		panic(err) // strings and maps of strings always encode
	}
	if id == nil {
		id = []byte("null")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, res...)
	return append(dst, '}', '\n')
}

// linkAsked links a call that carries no requestState, whose match
// digest is match, to the outcome of the asked call whose key its
// params.inputResponses present, unless a retry is linked to it already:
// a round by match of that outcome, which the table of rounds never
// holds, so that only a retry presenting the key links to it, and an
// identical call asked meanwhile does not take its place. r.mu is held.
func (r *Relay) linkAsked(m *frame.Message, match *[32]byte) (record.Round, bool) {
	if match == nil || m.HasRequestState || !m.HasInputResponses || len(r.parked) == 0 {
		return record.Round{}, false
	}
	for _, in := range m.InputResponses {
		id, ok := strings.CutPrefix(string(in.Key), record.ElicitKeyPrefix)
		if !ok {
			continue
		}
		if p := r.parked[id]; p != nil && p.asked != nil && !p.asked.linked && p.asked.match == *match {
			p.asked.linked = true
			return record.Round{Of: p.asked.outcome, HasOf: true, By: record.RoundByMatch, N: max(p.round, 1) + 1}, true
		}
	}
	return record.Round{}, false
}

// retryOf is the asked call that the call in st (one request, its
// intent filled, decided to park) retries, or nil: linked by match to
// that call's input_required outcome, decided under the same rule set,
// presenting its key in params.inputResponses (whatever its answer's
// action: the approver decides, not the client), and no retry parked
// under it before. r.mu is held.
func (r *Relay) retryOf(st *upstream) *parkedCall {
	m := &st.f.Msgs[0]
	if len(r.parked) == 0 || !m.HasInputResponses || st.in.Round.By != record.RoundByMatch {
		return nil
	}
	for _, in := range m.InputResponses {
		id, ok := strings.CutPrefix(string(in.Key), record.ElicitKeyPrefix)
		if !ok {
			continue
		}
		p := r.parked[id]
		if p != nil && p.asked != nil && p.line == nil && !p.asked.claimed && p.asked.outcome == st.in.Round.Of && p.set == st.decs[0].Set {
			return p
		}
	}
	return nil
}

// parkRetry parks the call in st (chunk[start:end] is line, its digest
// dg) as the retry of the asked call p: its intent carries p's terms,
// and, when p's approval is decided already, the decision is carried out
// as soon as the intent is durable. r.mu is held.
func (r *Relay) parkRetry(p *parkedCall, line []byte, start, end int, st *upstream, dg record.Digest, n int) (uint64, int, error) {
	d, m := &st.decs[0], &st.f.Msgs[0]
	tab := r.cfg.Approvals
	terms := record.ApprovalTerms{ID: p.id, Server: r.cfg.Server, Caller: r.cfg.Caller.Principal,
		TimeoutMS: int64((tab.Timeout() + time.Millisecond - 1) / time.Millisecond), Elicit: true}
	st.in.Verdict, st.in.Rule, st.in.Set, st.in.Refused = record.VerdictPendingApproval, d.Rule, d.Set, false
	st.in.RuleLine, st.in.PolicyReason, st.in.Approval = d.Line, d.Reason, &terms
	seq, err := r.j.Append(&st.in)
	st.in.Approval = nil
	if err != nil {
		return 0, 0, err
	}
	r.counts.Intents++
	p.asked.claimed = true
	p.seq, p.call, p.digest, p.rule, p.round = seq, st.in.Call, dg, d.Rule, st.in.Round.N
	p.call.Text = append([]byte(nil), st.in.Call.Text...)
	p.line, p.answerID = append([]byte(nil), line...), append([]byte(nil), answerID(m)...)
	r.parkedBytes += len(p.line)
	st.drop(start, end)
	st.lineOut = true
	if p.asked.decided {
		go r.settleRetry(p)
	}
	return seq, n + 1, nil
}

// settleRetry carries out the decision made before the retry p came,
// once the pump that parked it has released r.mu. A journal failure it
// meets is the journal's: the pumps fail at their next line.
func (r *Relay) settleRetry(p *parkedCall) {
	r.mu.Lock()
	if r.parked[p.id] != p || r.ended || r.live() != nil {
		r.mu.Unlock()
		return
	}
	delete(r.parked, p.id)
	r.parkedBytes -= len(p.line)
	r.settle(p, p.asked.decision, p.seq)
}
