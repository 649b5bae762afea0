package record

import "github.com/valyala/fastjson"

// Approval decisions, as an approval record's "decision" writes them. Part
// of the format.
const (
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// GrantDenyAll is the grant of every call no approval released: nothing is
// minted (doc.go, "Capability").
const GrantDenyAll = "deny_all"

// GrantPrefix begins the grant an approval mints: "approval:<id>", valid
// for the one call whose intent named that id, once.
const GrantPrefix = "approval:"

// ApprovalTerms are what a parked call waits under, as its intent records
// them after "policy":
//
//	,"approval":{"id":"<id>","server":"<name>","caller":"<principal>","timeout_ms":N}
//
// The approval id is bound to the intent's request_digest (the exact
// frame), its policy set, the server (wrap's --name) and the caller that
// sent it; the approval expires timeout_ms after the intent's ts.
//
// With Elicit, written as ,"elicitation":true after timeout_ms, the
// approval travels inside the protocol (wrap --approval-elicitation, MCP
// 2026-07-28): aegis answers the first intent parked under the id
// input_required, with the one input request "aegis-approval-<id>", and
// the client's retry of that call, a round linked to that outcome,
// parks under the same id (a second intent with these terms) and is
// released or refused by the one approval.
type ApprovalTerms struct {
	ID        string
	Server    string
	Caller    string
	TimeoutMS int64
	Elicit    bool
}

// ElicitKeyPrefix begins the inputRequests key of aegis's approval
// elicitation: "aegis-approval-<id>". Part of the wire format.
const ElicitKeyPrefix = "aegis-approval-"

func (t *ApprovalTerms) appendField(dst []byte) []byte {
	dst = append(appendKey(dst, "approval"), '{')
	dst = appendStringField(dst, "id", t.ID)
	dst = appendStringField(dst, "server", t.Server)
	dst = appendStringField(dst, "caller", t.Caller)
	dst = appendIntField(dst, "timeout_ms", t.TimeoutMS)
	if t.Elicit {
		dst = append(appendKey(dst, "elicitation"), "true"...)
	}
	return append(dst, '}')
}

func (g *getter) approvalTerms() *ApprovalTerms {
	a := g.obj("approval")
	t := &ApprovalTerms{ID: string(a.str("id")), Server: string(a.str("server")), Caller: string(a.str("caller")), TimeoutMS: a.int("timeout_ms")}
	if a.has("elicitation") {
		if t.Elicit = a.bool("elicitation"); !t.Elicit {
			a.fail("approval elicitation is written only when true")
		}
	}
	if a.err == nil && (t.ID == "" || t.TimeoutMS <= 0) {
		a.fail("approval without an id or a positive timeout_ms")
	}
	g.merge(a)
	return t
}

// Approval records the decision on a parked call, before the call moves
// on (released to the child, or refused to the client):
//
//	"approval":"<id>","intent":S,"request_digest":"sha256:…","decision":"approved"|"denied"|"expired",
//	"by":{"uid":N,"user":"<name>"}|{"principal":"<principal>"}|null,"reason":"…"|null,"grant":"approval:<id>"|"deny_all"
//
// S is the seq of the intent that parked the call under this id, and
// request_digest repeats its digest: the frame released is that frame,
// byte for byte. by is the approver, as the approvals socket's peer
// credentials name it, or, for a decision made over the HTTP front's
// approver endpoints, the principal its approver token proved
// ("token:<id>"); null for an expiry. reason the approver's own
// text (at most 512 bytes), or aegis's for an expiry. grant is the
// capability minted: "approval:<id>" for an approved call, that call
// alone, once; deny_all for every other decision.
type Approval struct {
	ID            string
	Intent        uint64
	RequestDigest Digest
	Decision      string
	HasBy         bool
	UID           uint64
	User          string
	// Principal, when set, names the approver in place of UID and User:
	// who an HTTP approver token proved to be.
	Principal string
	Reason    string
	Grant     string
}

func (*Approval) Kind() Kind { return KindApproval }

func (a *Approval) AppendFields(dst []byte) []byte {
	dst = appendStringField(dst, "approval", a.ID)
	dst = appendUintField(dst, "intent", a.Intent)
	dst = AppendDigestField(dst, "request_digest", a.RequestDigest)
	dst = appendStringField(dst, "decision", a.Decision)
	dst = appendKey(dst, "by")
	if a.HasBy && a.Principal != "" {
		dst = append(dst, '{')
		dst = appendStringField(dst, "principal", a.Principal)
		dst = append(dst, '}')
	} else if a.HasBy {
		dst = append(dst, '{')
		dst = appendUintField(dst, "uid", a.UID)
		dst = appendStringField(dst, "user", a.User)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = appendNullableString(dst, "reason", a.Reason)
	return appendStringField(dst, "grant", a.Grant)
}

// decodeFields reads the kind fields of Approval from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (a *Approval) decodeFields(g *getter) error {
	a.ID = string(g.str("approval"))
	a.Intent = g.uint("intent")
	a.RequestDigest = g.digest("request_digest")
	a.Decision = string(g.str("decision"))
	if v := g.get("by"); v != nil && v.Type() != fastjson.TypeNull {
		b := g.obj("by")
		a.HasBy = true
		if b.has("principal") {
			a.Principal = string(b.str("principal"))
		} else {
			a.UID, a.User = b.uint("uid"), string(b.str("user"))
		}
		g.merge(b)
	}
	a.Reason = g.nstr("reason")
	a.Grant = string(g.str("grant"))
	return nil
}
