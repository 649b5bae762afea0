package record

import "github.com/valyala/fastjson"

// MaxTools is the most tools a tools record lists, and the most names its
// removed list holds; the rest are counted in "more" and "removed_more".
// A tool is at most about 500 bytes as recorded (a bounded name twice,
// a digest), so a record of MaxTools tools fits in MaxLine. Part of the
// format.
const MaxTools = 1024

// Tools events (Tools.Event). Part of the format.
const (
	// ToolsList: one tools/list answer's definitions, as the child sent
	// them to the client.
	ToolsList = "list"
	// ToolsAccept: a person accepted a changed definition (aegis pin
	// accept), and calls to the tool are no longer refused for it.
	ToolsAccept = "accept"
)

// How a listed tool compares with its pin (ToolDigest.Pin). Part of the
// format.
const (
	PinFirst     = "first"     // no pin yet: pinned now (trust on first use)
	PinSame      = "same"      // the pinned definition
	PinChanged   = "changed"   // another definition than the pinned one
	PinRenamed   = "renamed"   // a pinned tool's definition under a new name ("from")
	PinAmbiguous = "ambiguous" // readers disagree about it: no digest
)

// ToolDigest is one tool of a tools/list answer as a tools record lists
// it:
//
//	{"name":<bounded>,"digest":"sha256:…"|null,"pin":"first"|"same"|"changed"|"renamed"|"ambiguous"[,"from":<bounded>]}
//
// digest is the SHA-256 of the tool's canonical definition (package pin:
// RFC 8785 of name, title, description, inputSchema, outputSchema and
// annotations), null for an ambiguous tool; from, for a rename only, is
// the pinned name whose definition it carries.
type ToolDigest struct {
	Name      Bounded
	Digest    Digest
	HasDigest bool
	Pin       string
	From      Bounded // with Pin == PinRenamed
}

// Tools records a tool list or an acceptance:
//
//	"event":"list","call":<id>,"response_digest":"sha256:…","tools":[…][,"more":N],
//	"next_cursor":b,"removed":[<bounded>…][,"removed_more":N]
//	"event":"accept","tool":<bounded>,"digest":"sha256:…","by":{"uid":N,"user":"…"}
//
// A list record follows one tools/list answer (each page of a paginated
// listing is one): call is the request's id, response_digest the answer
// line's, tools its tools in answer order (at most MaxTools), next_cursor
// whether it names a next page, and removed the pinned tools that a
// complete listing (a first page and every page after it, the last
// without a next cursor) did not list; empty on every other page.
//
// An accept record says that by (the uid and name of who ran aegis pin
// accept) accepted the definition digest of tool: calls to it pass again.
type Tools struct {
	Event string

	Call           Call
	ResponseDigest Digest
	Tools          []ToolDigest
	More           int // tools past MaxTools
	NextCursor     bool
	Removed        []Bounded
	RemovedMore    int

	Tool   Bounded
	Digest Digest
	UID    uint64
	User   string
}

func (*Tools) Kind() Kind { return KindTools }

func (t *Tools) AppendFields(dst []byte) []byte {
	dst = appendStringField(dst, "event", t.Event)
	if t.Event == ToolsAccept {
		dst = t.Tool.appendField(dst, "tool")
		dst = AppendDigestField(dst, "digest", t.Digest)
		dst = append(appendKey(dst, "by"), '{')
		dst = appendUintField(dst, "uid", t.UID)
		dst = appendStringField(dst, "user", t.User)
		return append(dst, '}')
	}
	dst = AppendCall(dst, t.Call)
	dst = AppendDigestField(dst, "response_digest", t.ResponseDigest)
	n := min(len(t.Tools), MaxTools)
	dst = append(appendKey(dst, "tools"), '[')
	for i, e := range t.Tools[:n] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = e.Name.appendField(dst, "name")
		dst = appendNullableDigest(dst, "digest", e.Digest, e.HasDigest)
		dst = appendStringField(dst, "pin", e.Pin)
		if e.Pin == PinRenamed {
			dst = e.From.appendField(dst, "from")
		}
		dst = append(dst, '}')
	}
	dst = appendMore(append(dst, ']'), len(t.Tools)-n+max(t.More, 0))
	dst = appendBoolField(dst, "next_cursor", t.NextCursor)
	n = min(len(t.Removed), MaxTools)
	dst = append(appendKey(dst, "removed"), '[')
	for i, b := range t.Removed[:n] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendBounded(dst, b.Text, b.Len, b.Sum)
	}
	dst = append(dst, ']')
	if more := len(t.Removed) - n + max(t.RemovedMore, 0); more > 0 {
		dst = appendIntField(dst, "removed_more", int64(more))
	}
	return dst
}

// decodeFields reads the kind fields of Tools from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (t *Tools) decodeFields(g *getter) error {
	t.Event = string(g.str("event"))
	switch t.Event {
	case ToolsAccept:
		t.Tool = g.boundedValue("tool")
		t.Digest = g.digest("digest")
		b := g.obj("by")
		t.UID, t.User = b.uint("uid"), string(b.str("user"))
		g.merge(b)
		return nil
	case ToolsList:
	default:
		if g.err == nil {
			g.fail("field \"event\" is %q", t.Event)
		}
		return nil
	}
	t.Call = g.call()
	t.ResponseDigest = g.digest("response_digest")
	toolsList, _ := g.array("tools", MaxTools)
	for _, v := range toolsList {
		o, err := v.Object()
		if err != nil {
			g.fail("field \"tools\" holds a non-object")
			return nil
		}
		e := getter{o: o}
		d := ToolDigest{Name: e.boundedValue("name"), Pin: string(e.str("pin"))}
		d.Digest, d.HasDigest = e.nullableDigest("digest")
		if d.Pin == PinRenamed {
			d.From = e.boundedValue("from")
		}
		g.merge(&e)
		t.Tools = append(t.Tools, d)
	}
	t.More = g.more()
	t.NextCursor = g.bool("next_cursor")
	removedList, _ := g.array("removed", MaxTools)
	for _, v := range removedList {
		if v.Type() == fastjson.TypeString {
			s, _ := v.StringBytes()
			t.Removed = append(t.Removed, Bounded{Text: append([]byte(nil), s...)})
			continue
		}
		o, err := v.Object()
		if err != nil {
			g.fail("field \"removed\" holds neither a string nor an object")
			return nil
		}
		e := getter{o: o}
		p, n, sum := e.abbrev()
		g.merge(&e)
		t.Removed = append(t.Removed, Bounded{Text: p, Len: n, Sum: sum})
	}
	if g.has("removed_more") {
		n := g.int("removed_more")
		if g.err == nil && (n <= 0 || n > 1<<62) {
			g.fail("field \"removed_more\" is %d", n)
		}
		t.RemovedMore = int(n)
	}
	return nil
}
