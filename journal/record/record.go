package record

import (
	"crypto/ed25519"
	"fmt"
	"strconv"

	"github.com/valyala/fastjson"
)

// Kind is a record's kind. The names are part of the format.
type Kind uint8

// The record kinds. Their names (Kind.String) are part
// of the format.
const (
	KindSessionStart Kind = iota + 1
	KindEnforcement
	KindIntent
	KindOutcome
	KindAnomaly
	KindPolicyReload
	KindRecovery
	KindSessionEnd
	KindProtocol
	KindTask
	KindServerRequest
	KindClientAnswer
	KindApproval // approval.go
	KindClose    // attest.go
	KindTools    // tools.go
	KindEgress   // egress.go
)

var kindNames = [...]string{
	KindSessionStart:  "session_start",
	KindEnforcement:   "enforcement",
	KindIntent:        "intent",
	KindOutcome:       "outcome",
	KindAnomaly:       "anomaly",
	KindPolicyReload:  "policy_reload",
	KindRecovery:      "recovery",
	KindSessionEnd:    "session_end",
	KindProtocol:      "protocol",
	KindTask:          "task",
	KindServerRequest: "server_request",
	KindClientAnswer:  "client_answer",
	KindApproval:      "approval",
	KindClose:         "close",
	KindTools:         "tools",
	KindEgress:        "egress",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func parseKind(s []byte) (Kind, bool) {
	for k, name := range kindNames {
		if name != "" && name == string(s) {
			return Kind(k), true
		}
	}
	return 0, false
}

// Body is the kind-specific part of a record. AppendFields appends the kind
// fields in their fixed order, each preceded by a comma, as they follow
// "prev" on the line. Implementations are the types of this file; the
// journal calls AppendFields once per record, under its queue lock.
type Body interface {
	Kind() Kind
	AppendFields(dst []byte) []byte
}

// IDType says what a JSON-RPC id was.
type IDType uint8

// The id types a Call can hold.
const (
	IDNull   IDType = iota // null, or no id at all (a notification)
	IDNumber               // Text is the JSON number literal as the client wrote it
	IDString               // Text is the decoded string
)

// Call is a JSON-RPC id as recorded in "call". A number keeps its literal
// (already validated as a JSON number by the frame parser); a string is
// re-encoded by the journal, never copied.
//
// An id of more than MaxValueBytes bytes is recorded abbreviated (doc.go,
// "Bounded values"): its prefix, its length and its SHA-256. Such a Call
// is either whole (Len 0: Text is the id, however long, and the encoder
// abbreviates it) or abbreviated (Len > 0: Text is only the prefix, Len
// and Sum describe the whole id), and both encode the same: Bound turns
// the one into the other.
type Call struct {
	Type IDType
	Text []byte
	Len  int    // > 0: the id is abbreviated, and this is its length in bytes
	Sum  Digest // with Len > 0: the SHA-256 of the whole id
}

// Abbreviated reports whether c holds only a prefix of its id (Len > 0).
func (c Call) Abbreviated() bool { return c.Len > 0 && c.Type != IDNull }

// Bound returns a Call that encodes (as "call" of an intent or an
// outcome) byte for byte as c does, and holds no more of the id than the
// record does: c itself, Text aliased, when the id is recorded whole (at
// most MaxValueBytes as recorded; or null); otherwise the abbreviated id,
// whose Text, at most PrefixBytes bytes, is copied into dst[:0], so that
// the caller can keep the result beyond the memory c.Text is in and reuse
// dst for the next. Bound hashes a long id (SHA-256 of Text: about 1 ms
// per MiB), allocates only if cap(dst) is under PrefixBytes, and changes
// nothing c refers to. Two Calls of the same id bound to Calls that are
// equal field by field (Text compared as bytes).
func (c Call) Bound(dst []byte) Call {
	if c.Type == IDNull || c.Len <= 0 && c.fitsWhole() {
		return c
	}
	text, n, sum := abbreviate(c.Text, c.Len, c.Sum)
	return Call{Type: c.Type, Text: append(dst[:0], text...), Len: n, Sum: sum}
}

// fitsWhole reports whether the id is recorded whole: a number's literal,
// written as it is, or a string's canonical text (fitsWhole) of at most
// MaxValueBytes bytes.
func (c Call) fitsWhole() bool {
	if c.Type == IDNumber {
		return len(c.Text) <= MaxValueBytes
	}
	return fitsWhole(c.Text)
}

// AppendCall appends "call": null, the id whole, or the id abbreviated:
//
//	{"type":"number"|"string","prefix":"<text>","bytes":N,"sha256":"sha256:<hex>"}
func AppendCall(dst []byte, c Call) []byte {
	dst = appendKey(dst, "call")
	typ := `{"type":"number",`
	whole := c.Len <= 0 && c.fitsWhole()
	switch {
	case c.Type == IDNumber && whole:
		return append(dst, c.Text...)
	case c.Type == IDString && whole:
		return appendString(dst, c.Text)
	case c.Type == IDString:
		typ = `{"type":"string",`
	case c.Type != IDNumber:
		return append(dst, "null"...)
	}
	text, n, sum := abbreviate(c.Text, c.Len, c.Sum)
	return appendAbbrev(append(dst, typ...), text, n, sum)
}

// SessionStart opens a session:
//
//	"key":"ed25519:…"[,"cert":{…}],"aegis":"<version>","argv":[…][,"name":"<name>"][,"client":"<client>"],
//	"durability":"strict","policy_set":"sha256:…"|"pass-through","confine":null|{…}[,"env":[names]]
//	[,"transport":"http","peer":"<address>","principal":"token:<16 hex>"|"none"]
//
// name is the server's name, the one its default log is named for (wrap's
// --name, or the name derived from the command); client is the MCP client
// whose configuration runs the server (wrap's --client, such as
// claude-desktop). Each is absent when empty, so that a session_start
// without them encodes as it always has.
//
// transport, peer and principal are present, all three, in a session
// served over a network transport (wrap --listen), and absent in a stdio
// session. peer is the client's address as the server saw it (host:port,
// or the unix socket's path); principal is who it authenticated as: the
// bearer token's id (the first 16 hex digits of the token's SHA-256,
// never the token) or none (--auth none). The listener's own session, in
// whose records the sessions it serves interleave, has the address it
// serves as peer and the principal every request must present. Every
// record of a session (its intents among them) names that principal
// through its sid.
type SessionStart struct {
	Key ed25519.PublicKey // filled in by Journal.Append when nil
	// Cert is the root key's certificate of Key (cert.go): filled in by
	// Journal.Append with Key. Nil in a session signed by its root key
	// directly, as every session was before session keys (doc.go,
	// "Session keys").
	Cert       *SessionCert
	Aegis      string
	Argv       []string
	Name       string // "": field absent
	Client     string // "": field absent
	Durability string
	PolicySet  string
	Confine    *ConfineRequest
	Env        []string // names only, never values; nil: field absent
	// Transport, Peer and Principal: all three set, or Transport "" (a
	// stdio session) and the fields absent.
	Transport, Peer, Principal string
}

// TransportHTTP is session_start's transport for MCP Streamable HTTP
// (part of the format).
const TransportHTTP = "http"

// ConfineRequest is the confinement profile as requested on the command line:
//
//	{"read":[…],"write":[…],"net":[…],"exec_support":b,"udp":b,"best_effort":b}
type ConfineRequest struct {
	Read, Write, Net []string
	ExecSupport      bool
	UDP              bool
	BestEffort       bool
	// Egress are the --allow-egress grants (NAME:PORT); "egress" is
	// written after best_effort only when there are some.
	Egress []string
}

func (*SessionStart) Kind() Kind { return KindSessionStart }

func (s *SessionStart) AppendFields(dst []byte) []byte {
	dst = appendStringField(dst, "key", FormatPublicKey(s.Key))
	if s.Cert != nil {
		dst = appendCert(dst, s.Cert)
	}
	dst = appendStringField(dst, "aegis", s.Aegis)
	dst = appendStrings(dst, "argv", s.Argv)
	if s.Name != "" {
		dst = appendStringField(dst, "name", s.Name)
	}
	if s.Client != "" {
		dst = appendStringField(dst, "client", s.Client)
	}
	dst = appendStringField(dst, "durability", s.Durability)
	dst = appendStringField(dst, "policy_set", s.PolicySet)
	dst = appendKey(dst, "confine")
	if c := s.Confine; c == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '{')
		dst = appendStrings(dst, "read", c.Read)
		dst = appendStrings(dst, "write", c.Write)
		dst = appendStrings(dst, "net", c.Net)
		dst = appendBoolField(dst, "exec_support", c.ExecSupport)
		dst = appendBoolField(dst, "udp", c.UDP)
		dst = appendBoolField(dst, "best_effort", c.BestEffort)
		if len(c.Egress) > 0 {
			dst = appendStrings(dst, "egress", c.Egress)
		}
		dst = append(dst, '}')
	}
	if s.Env != nil {
		dst = appendStrings(dst, "env", s.Env)
	}
	if s.Transport != "" {
		dst = appendStringField(dst, "transport", s.Transport)
		dst = appendStringField(dst, "peer", s.Peer)
		dst = appendStringField(dst, "principal", s.Principal)
	}
	return dst
}

// decodeFields reads the kind fields of SessionStart from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (s *SessionStart) decodeFields(g *getter) error {
	s.Key = g.key("key", ed25519.PublicKeySize)
	if g.err == nil {
		if err := checkPublicKey(s.Key); err != nil {
			return fmt.Errorf("%w: session_start: %v", ErrRecord, err)
		}
	}
	if g.has("cert") {
		s.Cert = decodeCert(g)
	}
	s.Aegis = string(g.str("aegis"))
	s.Argv = g.strs("argv")
	if g.has("name") {
		s.Name = string(g.str("name"))
	}
	if g.has("client") {
		s.Client = string(g.str("client"))
	}
	s.Durability = string(g.str("durability"))
	s.PolicySet = string(g.str("policy_set"))
	if v := g.get("confine"); v != nil && v.Type() != fastjson.TypeNull {
		c := g.obj("confine")
		s.Confine = &ConfineRequest{
			Read: c.strs("read"), Write: c.strs("write"), Net: c.strs("net"),
			ExecSupport: c.bool("exec_support"), UDP: c.bool("udp"), BestEffort: c.bool("best_effort"),
		}
		if c.has("egress") {
			s.Confine.Egress = c.strs("egress")
		}
		g.merge(c)
	}
	if g.has("env") {
		s.Env = g.strs("env")
	}
	if g.has("transport") {
		s.Transport = string(g.str("transport"))
		s.Peer = string(g.str("peer"))
		s.Principal = string(g.str("principal"))
	}
	return nil
}

// Enforcement states what confinement was actually enforced:
//
//	"landlock_abi":N,"fs":[{"path":…,"access":[…]}],
//	"net":{"tcp":"denied"|"ports"|"open","ports":[…],"udp":"denied"|"open","hosts_enforced":false},
//	"scopes":[…],"seccomp_applied":b,"seccomp_network_denied":b,"io_uring_denied":b,
//	"best_effort":{"enabled":b,"dropped":[…]},"not_covered":[…]
//
// net.tcp and net.udp say what a socket of that kind can reach ("ports":
// TCP connect only to net.ports); not_covered names the known gaps no flag
// asked to close (confine.Enforced documents each field).
type Enforcement struct {
	LandlockABI          int
	FS                   []FSRule
	TCP                  string
	NetPorts             []int
	UDP                  string
	HostsEnforced        bool
	Scopes               []string
	SeccompApplied       bool
	SeccompNetworkDenied bool
	IOURingDenied        bool
	BestEffort           bool
	Dropped              []string
	NotCovered           []string
	// Egress, when set, is wrap --allow-egress's proxy: written in "net"
	// after hosts_enforced as
	// "egress":{"grants":[…],"proxy_port":N,"netns":b}; netns says the
	// child has a network namespace of its own whose one way out is the
	// proxy (then hosts_enforced is true).
	Egress *EgressEnforcement
}

// EgressEnforcement is what an enforcement record says of the egress
// proxy (Enforcement.Egress).
type EgressEnforcement struct {
	Grants    []string
	ProxyPort int
	NetNS     bool
}

// FSRule is one Landlock filesystem rule as applied.
type FSRule struct {
	Path   string
	Access []string
}

func (*Enforcement) Kind() Kind { return KindEnforcement }

func (e *Enforcement) AppendFields(dst []byte) []byte {
	dst = appendIntField(dst, "landlock_abi", int64(e.LandlockABI))
	dst = append(appendKey(dst, "fs"), '[')
	for i, r := range e.FS {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = appendStringField(dst, "path", r.Path)
		dst = appendStrings(dst, "access", r.Access)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	dst = append(appendKey(dst, "net"), '{')
	dst = appendStringField(dst, "tcp", e.TCP)
	dst = append(appendKey(dst, "ports"), '[')
	for i, p := range e.NetPorts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(p), 10)
	}
	dst = append(dst, ']')
	dst = appendStringField(dst, "udp", e.UDP)
	dst = appendBoolField(dst, "hosts_enforced", e.HostsEnforced)
	if x := e.Egress; x != nil {
		dst = append(appendKey(dst, "egress"), '{')
		dst = appendStrings(dst, "grants", x.Grants)
		dst = appendIntField(dst, "proxy_port", int64(x.ProxyPort))
		dst = appendBoolField(dst, "netns", x.NetNS)
		dst = append(dst, '}')
	}
	dst = append(dst, '}')
	dst = appendStrings(dst, "scopes", e.Scopes)
	dst = appendBoolField(dst, "seccomp_applied", e.SeccompApplied)
	dst = appendBoolField(dst, "seccomp_network_denied", e.SeccompNetworkDenied)
	dst = appendBoolField(dst, "io_uring_denied", e.IOURingDenied)
	dst = append(appendKey(dst, "best_effort"), '{')
	dst = appendBoolField(dst, "enabled", e.BestEffort)
	dst = appendStrings(dst, "dropped", e.Dropped)
	dst = append(dst, '}')
	return appendStrings(dst, "not_covered", e.NotCovered)
}

// decodeFields reads the kind fields of Enforcement from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (e *Enforcement) decodeFields(g *getter) error {
	e.LandlockABI = int(g.int("landlock_abi"))
	if v := g.get("fs"); v != nil {
		a, err := v.Array()
		if err != nil {
			g.fail("field \"fs\" is not an array")
		}
		for _, r := range a {
			o, err := r.Object()
			if err != nil {
				g.fail("field \"fs\" holds a non-object")
				break
			}
			rg := getter{o: o}
			e.FS = append(e.FS, FSRule{Path: string(rg.str("path")), Access: rg.strs("access")})
			g.merge(&rg)
		}
	}
	n := g.obj("net")
	e.TCP = string(n.str("tcp"))
	if v := n.get("ports"); v != nil {
		a, err := v.Array()
		if err != nil {
			n.fail("field \"ports\" is not an array")
		}
		for _, p := range a {
			port, err := p.Int()
			if err != nil {
				n.fail("field \"ports\" holds a non-integer")
			}
			e.NetPorts = append(e.NetPorts, port)
		}
	}
	e.UDP = string(n.str("udp"))
	e.HostsEnforced = n.bool("hosts_enforced")
	if n.has("egress") {
		x := n.obj("egress")
		e.Egress = &EgressEnforcement{Grants: x.strs("grants"), ProxyPort: int(x.int("proxy_port")), NetNS: x.bool("netns")}
		n.merge(x)
	}
	g.merge(n)
	e.Scopes = g.strs("scopes")
	e.SeccompApplied = g.bool("seccomp_applied")
	e.SeccompNetworkDenied = g.bool("seccomp_network_denied")
	e.IOURingDenied = g.bool("io_uring_denied")
	be := g.obj("best_effort")
	e.BestEffort = be.bool("enabled")
	e.Dropped = be.strs("dropped")
	g.merge(be)
	e.NotCovered = g.strs("not_covered")
	return nil
}

// Policy verdicts, as written in an intent's "policy".
const (
	VerdictPassThrough     = "pass-through"
	VerdictAllowed         = "allowed"
	VerdictDenied          = "denied"
	VerdictRateLimited     = "rate_limited"
	VerdictPendingApproval = "pending_approval"
	// PassThroughSet is the stand-in policy set of a session without --policy.
	PassThroughSet = "pass-through"
)

// Intent records a tools/call before its frame moves on:
//
//	"call":<id>,"tool":"name"|{…}|null,"request_digest":"sha256:…"[,"batch":{"index":i,"size":n}]
//	[,"malformed":"reason"][,"revision":<bounded>][,"principal":"…"]
//	[,"round":{"of":S|null,"by":"state"|"match"|"unknown_state"|"reused_state","n":K}]
//	[,"request_state":"sha256:…"][,"input_responses":[{"key":<bounded>,"action":"accept"|"decline"|"cancel"|null},…][,"more":N]]
//	[,"trace":{"traceparent":"00-…"[,"tracestate":"…"]}]
//	,"policy":{"verdict":…,"rule":…|{…}|null,"set":…[,"line":N][,"reason":"…"]}
//	[,"approval":{"id":"…","server":"…","caller":"…","timeout_ms":N}],
//	"capability":{"grant":"deny_all"[,"status":"denied","reason":"policy blocked before capability"]}
//
// approval is absent unless the call is parked (doc.go, "Capability").
// revision, principal, round, request_state, input_responses and trace are
// absent unless set (doc.go, "Rounds and tasks"); an intent without them
// is the bytes it always was.
// A call id, tool name or rule of more than MaxValueBytes bytes is
// written abbreviated, as an object (AppendCall, appendBounded; doc.go,
// "Bounded values"). The encoder abbreviates Tool and Rule itself: a
// caller passes them whole (ToolLen and RuleLen 0). A decoded intent holds
// them as recorded: an abbreviated value's prefix in Tool or Rule, and
// its length and digest in ToolLen and ToolSum, or RuleLen and RuleSum.
type Intent struct {
	Call          Call
	Tool          []byte
	HasTool       bool
	ToolLen       int    // > 0: Tool is abbreviated to its prefix; the name's length
	ToolSum       Digest // with ToolLen > 0: the name's SHA-256
	RequestDigest Digest
	BatchIndex    int
	BatchSize     int // 0: not in a batch
	Malformed     string
	Verdict       string // "" means VerdictPassThrough
	Rule          string
	RuleLen       int    // > 0: Rule is abbreviated to its prefix; the rule's length
	RuleSum       Digest // with RuleLen > 0: the rule's SHA-256
	Set           string // "" means PassThroughSet
	Refused       bool   // the call was refused before it reached the child
	// RuleLine is the line of the deciding rule (or default) in the
	// policy file Set names; written as the policy's "line" when > 0.
	RuleLine int
	// PolicyReason says why the policy refused the call other than by
	// its rule's action: a condition that could not be evaluated, or
	// arguments that decoders read differently. aegis's own text, at most
	// a few hundred bytes; written as the policy's "reason" when not "".
	PolicyReason string

	// Revision is the protocol revision the request declares in
	// params._meta["io.modelcontextprotocol/protocolVersion"]; written
	// when HasRevision.
	Revision    Bounded
	HasRevision bool
	// Principal is the HTTP front's per-request principal; "" is absent.
	Principal string
	// Round links a retry to the input_required outcome it answers;
	// written when Round.By is not "".
	Round Round
	// RequestState is the digest of params.requestState's decoded
	// string; written when HasRequestState.
	RequestState    Digest
	HasRequestState bool
	// InputResponses are the keys of params.inputResponses in line order;
	// nil: absent. At most MaxListEntries are written; the rest, and
	// InputResponsesMore, are counted in "more".
	InputResponses     []InputResponse
	InputResponsesMore int
	// Trace is the W3C trace context of params._meta (trace.go); written
	// when Trace.Parent is not nil.
	Trace Trace
	// Approval, when not nil, says the call is parked awaiting an
	// approval under these terms (approval.go); written after "policy".
	Approval *ApprovalTerms
}

func (*Intent) Kind() Kind { return KindIntent }

func (in *Intent) AppendFields(dst []byte) []byte {
	dst = AppendCall(dst, in.Call)
	dst = appendKey(dst, "tool")
	if in.HasTool {
		dst = appendBounded(dst, in.Tool, in.ToolLen, in.ToolSum)
	} else {
		dst = append(dst, "null"...)
	}
	dst = AppendDigestField(dst, "request_digest", in.RequestDigest)
	if in.BatchSize > 0 {
		dst = append(appendKey(dst, "batch"), '{')
		dst = appendIntField(dst, "index", int64(in.BatchIndex))
		dst = appendIntField(dst, "size", int64(in.BatchSize))
		dst = append(dst, '}')
	}
	if in.Malformed != "" {
		dst = appendStringField(dst, "malformed", in.Malformed)
	}
	if in.HasRevision {
		dst = in.Revision.appendField(dst, "revision")
	}
	if in.Principal != "" {
		dst = appendStringField(dst, "principal", in.Principal)
	}
	if in.Round.By != "" {
		dst = in.Round.appendField(dst)
	}
	if in.HasRequestState {
		dst = AppendDigestField(dst, "request_state", in.RequestState)
	}
	if in.InputResponses != nil || in.InputResponsesMore > 0 {
		dst = appendInputResponses(dst, in.InputResponses, in.InputResponsesMore)
	}
	if in.Trace.Parent != nil {
		dst = in.Trace.appendField(dst)
	}
	verdict, set := in.Verdict, in.Set
	if verdict == "" {
		verdict = VerdictPassThrough
	}
	if set == "" {
		set = PassThroughSet
	}
	dst = append(appendKey(dst, "policy"), '{')
	dst = appendStringField(dst, "verdict", verdict)
	dst = appendKey(dst, "rule")
	if in.Rule == "" && in.RuleLen <= 0 {
		dst = append(dst, "null"...)
	} else {
		dst = appendBounded(dst, in.Rule, in.RuleLen, in.RuleSum)
	}
	dst = appendStringField(dst, "set", set)
	if in.RuleLine > 0 {
		dst = appendIntField(dst, "line", int64(in.RuleLine))
	}
	if in.PolicyReason != "" {
		dst = appendStringField(dst, "reason", in.PolicyReason)
	}
	dst = append(dst, '}')
	if in.Approval != nil {
		dst = in.Approval.appendField(dst)
	}
	dst = append(appendKey(dst, "capability"), '{')
	dst = appendStringField(dst, "grant", "deny_all")
	if in.Refused {
		dst = appendStringField(dst, "status", "denied")
		dst = appendStringField(dst, "reason", "policy blocked before capability")
	}
	return append(dst, '}')
}

// decodeFields reads the kind fields of Intent from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (in *Intent) decodeFields(g *getter) error {
	in.Call = g.call()
	if v := g.get("tool"); v != nil && v.Type() != fastjson.TypeNull {
		in.Tool, in.ToolLen, in.ToolSum = g.bounded("tool")
		in.HasTool = true
	}
	in.RequestDigest = g.digest("request_digest")
	if g.has("batch") {
		bt := g.obj("batch")
		in.BatchIndex, in.BatchSize = int(bt.int("index")), int(bt.int("size"))
		g.merge(bt)
		if g.err == nil && in.BatchSize <= 0 {
			g.fail("batch size %d", in.BatchSize)
		}
	}
	if g.has("malformed") {
		in.Malformed = string(g.str("malformed"))
	}
	if g.has("revision") {
		in.Revision, in.HasRevision = g.boundedValue("revision"), true
	}
	if g.has("principal") {
		in.Principal = string(g.str("principal"))
	}
	if g.has("round") {
		in.Round = g.round()
	}
	if g.has("request_state") {
		in.RequestState, in.HasRequestState = g.digest("request_state"), true
	}
	if g.has("input_responses") {
		in.InputResponses, in.InputResponsesMore = g.inputResponses()
	}
	if g.has("trace") {
		in.Trace = g.trace()
	}
	p := g.obj("policy")
	in.Verdict = string(p.str("verdict"))
	if v := p.get("rule"); v != nil && v.Type() == fastjson.TypeObject {
		var rule []byte
		rule, in.RuleLen, in.RuleSum = p.bounded("rule")
		in.Rule = string(rule)
	} else {
		in.Rule = p.nstr("rule")
	}
	in.Set = string(p.str("set"))
	if p.has("line") {
		if in.RuleLine = int(p.int("line")); p.err == nil && in.RuleLine <= 0 {
			p.fail("policy line %d", in.RuleLine)
		}
	}
	if p.has("reason") {
		if in.PolicyReason = string(p.str("reason")); p.err == nil && in.PolicyReason == "" {
			p.fail("empty policy reason")
		}
	}
	g.merge(p)
	if g.has("approval") {
		in.Approval = g.approvalTerms()
	}
	c := g.obj("capability")
	if c.str("grant"); c.has("status") {
		in.Refused = true
		c.str("status")
		c.str("reason")
	}
	g.merge(c)
	return nil
}

// Execution statuses, as written in an outcome's "execution". Part of the
// format.
const (
	StatusOK            = "ok"
	StatusToolError     = "tool_error"
	StatusRPCError      = "rpc_error"
	StatusHostDenied    = "host_denied"
	StatusUnanswered    = "unanswered"
	StatusSeccompKilled = "seccomp_killed"
	// StatusTimeout: the child had not answered within wrap's
	// --call-timeout, and aegis answered the client itself (an error with
	// the call's id); response_digest is null. An answer the child sends
	// later is recorded as an anomaly with its response_digest (doc.go).
	StatusTimeout = "timeout"
	// StatusInputRequired: the result's resultType is "input_required":
	// the tool has not finished, and the client may retry the call (a
	// round, Intent.Round).
	StatusInputRequired = "input_required"
	// StatusTask: the call became a task (resultType "task", or a
	// 2025-11-25 CreateTaskResult); its end is a task record.
	StatusTask = "task"
	// StatusOther: a resultType other than complete, input_required and
	// task, named in the outcome's result_type. Never ok.
	StatusOther = "other"
	// StatusCancelled: the client cancelled the call (or, in a task end,
	// the task was cancelled); response_digest null in an outcome.
	StatusCancelled = "cancelled"
	// StatusFailed: a task end whose task status is failed.
	StatusFailed = "failed"
	// StatusUnfinished: a task end written for a task still open when its
	// session ended or its entry was evicted; its digest is null.
	StatusUnfinished = "unfinished"
)

// Outcome records the answer to an intent, before the answer moves on:
//
//	"call":<id>,"intent":seq,"response_digest":"sha256:…"|null,
//	"execution":{"status":…,"reason":…|null},"latency_ns":N
//	[,"result_type":<bounded>][,"task_id":<bounded>]
//	[,"input_requests":[{"key":<bounded>,"method":<bounded>|null},…][,"more":N]]
//	[,"request_state":"sha256:…"]
//
// The fields after latency_ns are absent unless set (doc.go, "Rounds and
// tasks"); an outcome without them is the bytes it always was.
type Outcome struct {
	Call           Call
	Intent         uint64
	ResponseDigest Digest
	HasResponse    bool // false: "response_digest":null (nothing came back)
	Status         string
	Reason         string
	LatencyNS      int64

	// ResultType is the result's resultType member, any value; written
	// when HasResultType.
	ResultType    Bounded
	HasResultType bool
	// TaskID is the task the call became (StatusTask); written when
	// HasTaskID.
	TaskID    Bounded
	HasTaskID bool
	// InputRequests are the keys of result.inputRequests in line order
	// (StatusInputRequired); nil: absent. At most MaxListEntries are
	// written; the rest, and InputRequestsMore, are counted in "more".
	InputRequests     []InputRequest
	InputRequestsMore int
	// RequestState is the digest of result.requestState's decoded
	// string; written when HasRequestState.
	RequestState    Digest
	HasRequestState bool
}

func (*Outcome) Kind() Kind { return KindOutcome }

func (o *Outcome) AppendFields(dst []byte) []byte {
	dst = AppendCall(dst, o.Call)
	dst = appendUintField(dst, "intent", o.Intent)
	if o.HasResponse {
		dst = AppendDigestField(dst, "response_digest", o.ResponseDigest)
	} else {
		dst = append(appendKey(dst, "response_digest"), "null"...)
	}
	dst = append(appendKey(dst, "execution"), '{')
	dst = appendStringField(dst, "status", o.Status)
	dst = appendNullableString(dst, "reason", o.Reason)
	dst = append(dst, '}')
	dst = appendIntField(dst, "latency_ns", o.LatencyNS)
	if o.HasResultType {
		dst = o.ResultType.appendField(dst, "result_type")
	}
	if o.HasTaskID {
		dst = o.TaskID.appendField(dst, "task_id")
	}
	if o.InputRequests != nil || o.InputRequestsMore > 0 {
		dst = appendInputRequests(dst, o.InputRequests, o.InputRequestsMore)
	}
	if o.HasRequestState {
		dst = AppendDigestField(dst, "request_state", o.RequestState)
	}
	return dst
}

// decodeFields reads the kind fields of Outcome from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (o *Outcome) decodeFields(g *getter) error {
	o.Call = g.call()
	o.Intent = g.uint("intent")
	if v := g.get("response_digest"); v != nil && v.Type() != fastjson.TypeNull {
		o.ResponseDigest, o.HasResponse = g.digest("response_digest"), true
	}
	e := g.obj("execution")
	o.Status, o.Reason = string(e.str("status")), e.nstr("reason")
	g.merge(e)
	o.LatencyNS = g.int("latency_ns")
	if g.has("result_type") {
		o.ResultType, o.HasResultType = g.boundedValue("result_type"), true
	}
	if g.has("task_id") {
		o.TaskID, o.HasTaskID = g.boundedValue("task_id"), true
	}
	if g.has("input_requests") {
		o.InputRequests, o.InputRequestsMore = g.inputRequests()
	}
	if g.has("request_state") {
		o.RequestState, o.HasRequestState = g.digest("request_state"), true
	}
	return nil
}

// Anomaly records a line that the readers on the other side may read
// differently from aegis: from the client, a line that is not exactly one
// JSON value or that some reader splits or reads otherwise; from the child
// (Response), a line that some client could take as the answer to a call
// in flight but that is not a clean answer to it:
//
//	"request_digest":"sha256:…","bytes":N,"reason":"…","forwarded":b
//	"response_digest":"sha256:…","bytes":N,"reason":"…","forwarded":true
//
// The digest is of the line without its '\n', as in intents and outcomes.
type Anomaly struct {
	Digest    Digest
	Response  bool // the line came from the child: its digest is response_digest
	Bytes     int
	Reason    string
	Forwarded bool
}

func (*Anomaly) Kind() Kind { return KindAnomaly }

func (a *Anomaly) AppendFields(dst []byte) []byte {
	name := "request_digest"
	if a.Response {
		name = "response_digest"
	}
	dst = AppendDigestField(dst, name, a.Digest)
	dst = appendIntField(dst, "bytes", int64(a.Bytes))
	dst = appendStringField(dst, "reason", a.Reason)
	return appendBoolField(dst, "forwarded", a.Forwarded)
}

// decodeFields reads the kind fields of Anomaly from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (a *Anomaly) decodeFields(g *getter) error {
	if g.has("response_digest") {
		a.Digest, a.Response = g.digest("response_digest"), true
	} else {
		a.Digest = g.digest("request_digest")
	}
	a.Bytes, a.Reason, a.Forwarded = int(g.int("bytes")), string(g.str("reason")), g.bool("forwarded")
	return nil
}

// PolicyReload records a policy reload: "set":"sha256:…","status":"applied"|"rejected: …"
type PolicyReload struct {
	Set    string
	Status string
}

func (*PolicyReload) Kind() Kind { return KindPolicyReload }

func (p *PolicyReload) AppendFields(dst []byte) []byte {
	dst = appendStringField(dst, "set", p.Set)
	return appendStringField(dst, "status", p.Status)
}

// decodeFields reads the kind fields of PolicyReload from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (p *PolicyReload) decodeFields(g *getter) error {
	p.Set, p.Status = string(g.str("set")), string(g.str("status"))
	return nil
}

// Recovery records a torn last line left by an earlier session:
//
//	"torn_bytes":N,"torn_digest":"sha256:…"
type Recovery struct {
	TornBytes  int
	TornDigest Digest
}

func (*Recovery) Kind() Kind { return KindRecovery }

func (r *Recovery) AppendFields(dst []byte) []byte {
	dst = appendIntField(dst, "torn_bytes", int64(r.TornBytes))
	return AppendDigestField(dst, "torn_digest", r.TornDigest)
}

// decodeFields reads the kind fields of Recovery from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (r *Recovery) decodeFields(g *getter) error {
	r.TornBytes, r.TornDigest = int(g.int("torn_bytes")), g.digest("torn_digest")
	return nil
}

// Session end reasons.
const (
	EndClientEOF          = "client_eof"
	EndChildExit          = "child_exit"
	EndSignal             = "signal"
	EndFrameTooLarge      = "frame_too_large"
	EndAuditIOError       = "audit_io_error"
	EndConfinementRefused = "confinement_refused"
	EndChildStartFailed   = "child_start_failed"
	// EndIdle: the HTTP front ended the session because no request used
	// it for its idle timeout (a client that never sends DELETE); the
	// child's input was closed as a client's EOF closes it.
	EndIdle = "idle"
)

// SessionEnd closes a session; the journal always signs it:
//
//	"reason":…[,"detail":"…"],"exit":{"code":n}|{"signal":"SIGSYS"},"seccomp_killed":b,
//	"counts":{"frames_in":…,"frames_out":…,"intents":…,"outcomes":…,"unanswered":…,"refused":…,"anomalies":…}
//
// reason is one of the session end reasons above (EndClientEOF, …,
// EndIdle). seccomp_killed is true only when the child died of SIGSYS with aegis's
// seccomp filter applied (the session's enforcement record has
// seccomp_applied); detail then says that the signal may also have been
// sent (kill(2): the exit status looks the same). A SIGSYS without a
// filter is an ordinary signal: seccomp_killed false, and a detail that
// says so.
type SessionEnd struct {
	Reason        string
	Detail        string
	ExitCode      int
	ExitSignal    string // non-empty: the child died of this signal
	SeccompKilled bool
	Counts        Counts
}

// Counts are a session's totals. frames_in are client→child frames,
// frames_out child→client. unanswered counts the outcomes of calls the
// child did not answer: unanswered, seccomp_killed and timeout.
type Counts struct {
	FramesIn, FramesOut, Intents, Outcomes, Unanswered, Refused, Anomalies uint64
}

func (*SessionEnd) Kind() Kind { return KindSessionEnd }

func (e *SessionEnd) AppendFields(dst []byte) []byte {
	dst = appendStringField(dst, "reason", e.Reason)
	if e.Detail != "" {
		dst = appendStringField(dst, "detail", e.Detail)
	}
	dst = append(appendKey(dst, "exit"), '{')
	if e.ExitSignal != "" {
		dst = appendStringField(dst, "signal", e.ExitSignal)
	} else {
		dst = appendIntField(dst, "code", int64(e.ExitCode))
	}
	dst = append(dst, '}')
	dst = appendBoolField(dst, "seccomp_killed", e.SeccompKilled)
	c := &e.Counts
	dst = append(appendKey(dst, "counts"), '{')
	dst = appendUintField(dst, "frames_in", c.FramesIn)
	dst = appendUintField(dst, "frames_out", c.FramesOut)
	dst = appendUintField(dst, "intents", c.Intents)
	dst = appendUintField(dst, "outcomes", c.Outcomes)
	dst = appendUintField(dst, "unanswered", c.Unanswered)
	dst = appendUintField(dst, "refused", c.Refused)
	dst = appendUintField(dst, "anomalies", c.Anomalies)
	return append(dst, '}')
}

// decodeFields reads the kind fields of SessionEnd from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (e *SessionEnd) decodeFields(g *getter) error {
	e.Reason = string(g.str("reason"))
	if g.has("detail") {
		e.Detail = string(g.str("detail"))
	}
	x := g.obj("exit")
	if x.has("signal") {
		e.ExitSignal = string(x.str("signal"))
	} else {
		e.ExitCode = int(x.int("code"))
	}
	g.merge(x)
	e.SeccompKilled = g.bool("seccomp_killed")
	c := g.obj("counts")
	e.Counts = Counts{FramesIn: c.uint("frames_in"), FramesOut: c.uint("frames_out"),
		Intents: c.uint("intents"), Outcomes: c.uint("outcomes"), Unanswered: c.uint("unanswered"),
		Refused: c.uint("refused"), Anomalies: c.uint("anomalies")}
	g.merge(c)
	return nil
}
