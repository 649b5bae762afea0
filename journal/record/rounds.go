package record

import (
	"strconv"

	"github.com/valyala/fastjson"
)

// The parts of the format that record rounds and tasks (doc.go, "Rounds
// and tasks"): the bounded value and the bounded lists of peer-controlled
// keys that intents and outcomes carry, and the kinds protocol, task,
// server_request and client_answer.

// MaxListEntries is the most entries of a list a peer controls
// (input_requests, input_responses, a server_request's calls) that a
// record writes; the rest are counted in the "more" that follows the
// list. Part of the format.
const MaxListEntries = 32

// Bounded is a string a peer controls as a record holds it (doc.go,
// "Bounded values"): whole (Len 0: Text is the value, however long, and
// the encoder abbreviates it when it is longer than MaxValueBytes), or
// abbreviated (Len > 0: Text is its prefix, Len and Sum describe the
// whole value). A decoded Bounded's Text is the record's own, or aliases
// the line for a Record from Decoder.DecodeInto (Slot says how long).
type Bounded struct {
	Text []byte
	Len  int    // > 0: Text is abbreviated to its prefix; the value's length
	Sum  Digest // with Len > 0: the value's SHA-256
}

// BoundedOf returns s as a whole Bounded (aliasing s).
func BoundedOf(s []byte) Bounded { return Bounded{Text: s} }

// Abbreviated reports whether b holds only a prefix of its value.
func (b Bounded) Abbreviated() bool { return b.Len > 0 }

// String returns the value as text: whole, or its prefix followed by "…".
func (b Bounded) String() string {
	if b.Len > 0 {
		return string(b.Text) + "…"
	}
	return string(b.Text)
}

// Equal reports whether a and b record the same value: whole values by
// their bytes, abbreviated ones by length and digest. A value of more
// than MaxValueBytes held whole is abbreviated first, as the encoder
// writes it (it hashes then).
func (b Bounded) Equal(o Bounded) bool {
	x, y := b.Bound(), o.Bound()
	if x.Len > 0 || y.Len > 0 {
		return x.Len == y.Len && x.Sum == y.Sum
	}
	return string(x.Text) == string(y.Text)
}

// Bound returns b as a record holds it: b itself when it is recorded
// whole, else abbreviated (its prefix aliasing b.Text; a whole value
// longer than MaxValueBytes is hashed).
func (b Bounded) Bound() Bounded {
	if b.Len <= 0 && fitsWhole(b.Text) {
		return b
	}
	p, n, sum := abbreviate(b.Text, b.Len, b.Sum)
	return Bounded{Text: p, Len: n, Sum: sum}
}

// appendField appends `,"name":` and b (appendBounded).
func (b Bounded) appendField(dst []byte, name string) []byte {
	return appendBounded(appendKey(dst, name), b.Text, b.Len, b.Sum)
}

// boundedValue reads a field that appendBounded wrote, as a Bounded.
func (g *getter) boundedValue(name string) Bounded {
	s, n, sum := g.bounded(name)
	return Bounded{Text: s, Len: n, Sum: sum}
}

// Round is an intent's "round": the link of a retry (MRTR) to the
// input_required outcome it answers.
//
//	{"of":S|null,"by":"state"|"match"|"unknown_state"|"reused_state","n":K}
type Round struct {
	Of    uint64 // with HasOf: the seq of the outcome this round answers
	HasOf bool   // false: "of":null
	By    string // RoundByState, …; "" means the intent has no round
	N     int    // the round's number: 2 for the first retry; 0 when not linked
}

// How a round was linked (Round.By). Part of the format.
const (
	// RoundByState: the retry's requestState is the one the outcome issued.
	RoundByState = "state"
	// RoundByMatch: neither carries state; the same tool and arguments
	// from the same session within the relay's window.
	RoundByMatch = "match"
	// RoundUnknownState: the retry carries a requestState that no
	// recorded outcome issued: of null, n 0.
	RoundUnknownState = "unknown_state"
	// RoundReusedState: the retry presents a state an earlier round
	// already claimed: of null, n 0.
	RoundReusedState = "reused_state"
)

func (r Round) appendField(dst []byte) []byte {
	dst = append(appendKey(dst, "round"), '{')
	dst = appendKey(dst, "of")
	if r.HasOf {
		dst = appendUint(dst, r.Of)
	} else {
		dst = append(dst, "null"...)
	}
	dst = appendStringField(dst, "by", r.By)
	dst = appendIntField(dst, "n", int64(r.N))
	return append(dst, '}')
}

func (g *getter) round() Round {
	var r Round
	o := g.obj("round")
	if v := o.get("of"); v != nil && v.Type() != fastjson.TypeNull {
		r.Of, r.HasOf = o.uint("of"), true
	}
	r.By = string(o.str("by"))
	r.N = int(o.int("n"))
	g.merge(o)
	if g.err == nil && r.By == "" {
		g.fail("field \"round\" has an empty \"by\"")
	}
	return r
}

// InputRequest is one entry of an outcome's or a task's input_requests:
// a key of inputRequests and, when its value is an object with a string
// "method", that method.
//
//	{"key":<bounded>,"method":<bounded>|null}
type InputRequest struct {
	Key       Bounded
	Method    Bounded
	HasMethod bool // false: "method":null
}

// InputResponse is one entry of an intent's or a task's input_responses:
// a key of inputResponses and, when its value is an object whose
// "action" is accept, decline or cancel, that action.
//
//	{"key":<bounded>,"action":"accept"|"decline"|"cancel"|null}
type InputResponse struct {
	Key    Bounded
	Action string // "" means null
}

// The elicitation actions an input response or a client_answer records.
// Part of the format.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// listLen returns how many of n entries a list writes, and its "more":
// the entries past MaxListEntries plus extra (entries a caller counted
// without keeping).
func listLen(n, extra int) (written, more int) {
	written = min(n, MaxListEntries)
	return written, n - written + max(extra, 0)
}

// appendMore appends `,"more":N` when more > 0.
func appendMore(dst []byte, more int) []byte {
	if more > 0 {
		dst = appendIntField(dst, "more", int64(more))
	}
	return dst
}

func appendInputRequests(dst []byte, rs []InputRequest, extra int) []byte {
	n, more := listLen(len(rs), extra)
	dst = append(appendKey(dst, "input_requests"), '[')
	for i, r := range rs[:n] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = appendBounded(appendKey(dst, "key"), r.Key.Text, r.Key.Len, r.Key.Sum)
		dst = appendKey(dst, "method")
		if r.HasMethod {
			dst = appendBounded(dst, r.Method.Text, r.Method.Len, r.Method.Sum)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, '}')
	}
	return appendMore(append(dst, ']'), more)
}

func appendInputResponses(dst []byte, rs []InputResponse, extra int) []byte {
	n, more := listLen(len(rs), extra)
	dst = append(appendKey(dst, "input_responses"), '[')
	for i, r := range rs[:n] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = appendBounded(appendKey(dst, "key"), r.Key.Text, r.Key.Len, r.Key.Sum)
		dst = appendNullableString(dst, "action", r.Action)
		dst = append(dst, '}')
	}
	return appendMore(append(dst, ']'), more)
}

// objects returns the objects of the array field name (at most
// MaxListEntries: the encoder writes no more, and a longer list fails the
// canonical check anyway), each as a getter.
func (g *getter) objects(name string) []*fastjson.Object {
	a, ok := g.array(name, MaxListEntries)
	if !ok {
		return nil
	}
	out := make([]*fastjson.Object, 0, len(a))
	for _, e := range a {
		o, err := e.Object()
		if err != nil {
			g.fail("field %q holds a non-object", name)
			return nil
		}
		out = append(out, o)
	}
	return out
}

// array returns the array field name, and false when it is absent or g
// fails because it is not an array or holds more than max entries (the
// encoders write no more).
func (g *getter) array(name string, max int) ([]*fastjson.Value, bool) {
	v := g.get(name)
	if v == nil {
		return nil, false
	}
	a, err := v.Array()
	if err != nil {
		g.fail("field %q is not an array", name)
		return nil, false
	}
	if len(a) > max {
		g.fail("field %q holds %d entries, more than %d", name, len(a), max)
		return nil, false
	}
	return a, true
}

// more reads the "more" that may follow a list.
func (g *getter) more() int {
	if !g.has("more") {
		return 0
	}
	n := g.int("more")
	if g.err == nil && (n <= 0 || n > 1<<62) {
		g.fail("field \"more\" is %d", n)
	}
	return int(n)
}

func (g *getter) inputRequests() ([]InputRequest, int) {
	os := g.objects("input_requests")
	rs := make([]InputRequest, 0, len(os))
	for _, o := range os {
		e := getter{o: o}
		r := InputRequest{Key: e.boundedValue("key")}
		if v := e.get("method"); v != nil && v.Type() != fastjson.TypeNull {
			r.Method, r.HasMethod = e.boundedValue("method"), true
		}
		g.merge(&e)
		rs = append(rs, r)
	}
	return rs, g.more()
}

func (g *getter) inputResponses() ([]InputResponse, int) {
	os := g.objects("input_responses")
	rs := make([]InputResponse, 0, len(os))
	for _, o := range os {
		e := getter{o: o}
		rs = append(rs, InputResponse{Key: e.boundedValue("key"), Action: e.nstr("action")})
		g.merge(&e)
	}
	return rs, g.more()
}

// Protocol records the revision an initialize answer settled, as that
// answer passes the relay (session_start is written before the child
// runs and cannot know it):
//
//	"revision":<bounded>
type Protocol struct {
	Revision Bounded
}

func (*Protocol) Kind() Kind { return KindProtocol }

func (p *Protocol) AppendFields(dst []byte) []byte {
	return p.Revision.appendField(dst, "revision")
}

func (p *Protocol) decodeFields(g *getter) error {
	p.Revision = g.boundedValue("revision")
	return nil
}

// Task events (Task.Event). Part of the format.
const (
	TaskInputRequired = "input_required"
	TaskUpdate        = "update"
	TaskCancel        = "cancel"
	TaskEnd           = "end"
)

// Task vias that no message carried (Task.Via of an unfinished end).
const (
	ViaSessionEnd = "session_end"
	ViaEvicted    = "evicted"
)

// Task records an event in a task's life after its creation (the
// outcome of status task):
//
//	"task_id":<bounded>,"intent":S,"event":"input_required"|"update"|"cancel"|"end",
//	"via":"<method>","digest":"sha256:…"|null
//	 end:            ,"execution":{"status":…,"reason":…|null},"latency_ns":N
//	 input_required: ,"input_requests":[…][,"more":N]
//	 update:         ,"input_responses":[…][,"more":N]
//	 cancel:         (nothing more)
//
// S is the seq of the call's intent (the tools/call whose outcome had
// status task with this task_id). via is the method of the message that
// carried the event (tasks/get, notifications/tasks, tasks/result,
// notifications/tasks/status, tasks/update, tasks/cancel), or, for an
// unfinished end, session_end or evicted with digest null. digest is the
// SHA-256 of that message's line.
type Task struct {
	TaskID    Bounded
	Intent    uint64
	Event     string
	Via       string
	Digest    Digest
	HasDigest bool // false: "digest":null
	// Status, Reason and LatencyNS: an end's execution and the latency
	// from the call's release to the child to this end.
	Status    string
	Reason    string
	LatencyNS int64
	// InputRequests (input_required) and InputResponses (update), with
	// their uncounted extras, as in Outcome and Intent.
	InputRequests      []InputRequest
	InputRequestsMore  int
	InputResponses     []InputResponse
	InputResponsesMore int
}

func (*Task) Kind() Kind { return KindTask }

func (t *Task) AppendFields(dst []byte) []byte {
	dst = t.TaskID.appendField(dst, "task_id")
	dst = appendUintField(dst, "intent", t.Intent)
	dst = appendStringField(dst, "event", t.Event)
	dst = appendStringField(dst, "via", t.Via)
	dst = appendNullableDigest(dst, "digest", t.Digest, t.HasDigest)
	switch t.Event {
	case TaskEnd:
		dst = appendExecution(dst, t.Status, t.Reason)
		dst = appendIntField(dst, "latency_ns", t.LatencyNS)
	case TaskInputRequired:
		dst = appendInputRequests(dst, t.InputRequests, t.InputRequestsMore)
	case TaskUpdate:
		dst = appendInputResponses(dst, t.InputResponses, t.InputResponsesMore)
	}
	return dst
}

func (t *Task) decodeFields(g *getter) error {
	t.TaskID = g.boundedValue("task_id")
	t.Intent = g.uint("intent")
	t.Event = string(g.str("event"))
	t.Via = string(g.str("via"))
	t.Digest, t.HasDigest = g.nullableDigest("digest")
	switch t.Event {
	case TaskEnd:
		e := g.obj("execution")
		t.Status, t.Reason = string(e.str("status")), e.nstr("reason")
		g.merge(e)
		t.LatencyNS = g.int("latency_ns")
	case TaskInputRequired:
		t.InputRequests, t.InputRequestsMore = g.inputRequests()
	case TaskUpdate:
		t.InputResponses, t.InputResponsesMore = g.inputResponses()
	case TaskCancel:
	default:
		g.fail("task event %q", t.Event)
	}
	return nil
}

// ServerRequest records a request the child sent to the client while
// calls were in flight (elicitation/create, sampling/createMessage,
// roots/list, any method):
//
//	"call":<id>,"method":<bounded>,"response_digest":"sha256:…","calls":[S,…][,"more":N]
//
// call is the request's id (as AppendCall writes it); response_digest is
// the SHA-256 of its line (it came from the child's side); calls are the
// seqs of the intents then in flight, at most MaxListEntries of them.
type ServerRequest struct {
	Call           Call
	Method         Bounded
	ResponseDigest Digest
	Calls          []uint64
	CallsMore      int // in flight beyond Calls, counted without keeping
}

func (*ServerRequest) Kind() Kind { return KindServerRequest }

func (s *ServerRequest) AppendFields(dst []byte) []byte {
	dst = AppendCall(dst, s.Call)
	dst = s.Method.appendField(dst, "method")
	dst = AppendDigestField(dst, "response_digest", s.ResponseDigest)
	n, more := listLen(len(s.Calls), s.CallsMore)
	dst = append(appendKey(dst, "calls"), '[')
	for i, c := range s.Calls[:n] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendUint(dst, c)
	}
	return appendMore(append(dst, ']'), more)
}

func (s *ServerRequest) decodeFields(g *getter) error {
	s.Call = g.call()
	s.Method = g.boundedValue("method")
	s.ResponseDigest = g.digest("response_digest")
	if v := g.get("calls"); v != nil {
		a, err := v.Array()
		if err != nil || len(a) > MaxListEntries {
			g.fail("field \"calls\" is not an array of at most %d seqs", MaxListEntries)
			return nil
		}
		s.Calls = make([]uint64, 0, len(a))
		for _, e := range a {
			n, err := e.Uint64()
			if err != nil {
				g.fail("field \"calls\" holds a non-seq")
				return nil
			}
			s.Calls = append(s.Calls, n)
		}
	}
	s.CallsMore = g.more()
	return nil
}

// ClientAnswer records the client's answer to a server_request:
//
//	"call":<id>,"request":S,"request_digest":"sha256:…",
//	"execution":{"status":"ok"|"rpc_error"},"action":"accept"|"decline"|"cancel"|null
//
// request is the seq of the server_request answered; request_digest the
// SHA-256 of the answer's line (it came from the client's side); action
// is result.action when it is one of the three (an elicitation's).
type ClientAnswer struct {
	Call          Call
	Request       uint64
	RequestDigest Digest
	Status        string // StatusOK or StatusRPCError
	Action        string // "" means null
}

func (*ClientAnswer) Kind() Kind { return KindClientAnswer }

func (a *ClientAnswer) AppendFields(dst []byte) []byte {
	dst = AppendCall(dst, a.Call)
	dst = appendUintField(dst, "request", a.Request)
	dst = AppendDigestField(dst, "request_digest", a.RequestDigest)
	dst = append(appendKey(dst, "execution"), '{')
	dst = appendStringField(dst, "status", a.Status)
	dst = append(dst, '}')
	return appendNullableString(dst, "action", a.Action)
}

func (a *ClientAnswer) decodeFields(g *getter) error {
	a.Call = g.call()
	a.Request = g.uint("request")
	a.RequestDigest = g.digest("request_digest")
	e := g.obj("execution")
	a.Status = string(e.str("status"))
	g.merge(e)
	a.Action = g.nstr("action")
	return nil
}

// appendExecution appends `,"execution":{"status":…,"reason":…|null}`.
func appendExecution(dst []byte, status, reason string) []byte {
	dst = append(appendKey(dst, "execution"), '{')
	dst = appendStringField(dst, "status", status)
	dst = appendNullableString(dst, "reason", reason)
	return append(dst, '}')
}

// appendNullableDigest appends the digest, or null when !has.
func appendNullableDigest(dst []byte, name string, d Digest, has bool) []byte {
	if has {
		return AppendDigestField(dst, name, d)
	}
	return append(appendKey(dst, name), "null"...)
}

// nullableDigest reads a digest or null.
func (g *getter) nullableDigest(name string) (Digest, bool) {
	if v := g.get(name); v == nil || v.Type() == fastjson.TypeNull {
		return Digest{}, false
	}
	return g.digest(name), true
}

func appendUint(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 10) }

// ownInputRequests returns a copy of rs that aliases no line (Decode).
func ownInputRequests(rs []InputRequest) []InputRequest {
	if rs == nil {
		return nil
	}
	out := make([]InputRequest, len(rs))
	for i, r := range rs {
		r.Key.Text = append([]byte(nil), r.Key.Text...)
		r.Method.Text = append([]byte(nil), r.Method.Text...)
		out[i] = r
	}
	return out
}

// ownInputResponses returns a copy of rs that aliases no line (Decode).
func ownInputResponses(rs []InputResponse) []InputResponse {
	if rs == nil {
		return nil
	}
	out := make([]InputResponse, len(rs))
	for i, r := range rs {
		r.Key.Text = append([]byte(nil), r.Key.Text...)
		out[i] = r
	}
	return out
}
