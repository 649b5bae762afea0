package record

import "strconv"

// Egress decisions, as an egress record's "decision" writes them. Part of
// the format.
const (
	EgressAllowed = "allowed"
	EgressRefused = "refused"
)

// MaxEgressInFlight bounds the calls an egress record names as in flight:
// a session with more names the first (oldest intents) this many.
const MaxEgressInFlight = 64

// Egress records one connection a confined child opened through aegis's
// egress proxy (wrap --allow-egress):
//
//	"host":"<name>","port":N,"method":"CONNECT"|"GET"|…,"addr":"<ip:port>"|null,
//	"decision":"allowed"|"refused","grant":"<grant>"|null,"reason":"…"|null,
//	"sni":"<name>"|null,"bytes_up":N,"bytes_down":N,"duration_ms":N,"in_flight":[S,…]
//	[,"conn":N[,"open":true]]
//
// A connection the proxy refuses is one record, written when it ends. A
// connection it allows is two: one written when the checked address has
// answered and before any byte is carried ("open":true: bytes 0,
// duration_ms the time to that point, reason null), and one when it
// ends, with the totals; both carry its conn, the connection's number
// among the session's (1, 2, …), and every other field the opening one
// has. A crash of aegis mid-connection so loses only the totals: the
// opening record is written, and waited for, first. Logs written before
// opening records hold one record per connection, at its end, without
// conn or open; they read and verify as they did.
//
// host and port are what the child asked for (a CONNECT's authority, a
// plain request's URL; host "" when the request named none that could
// be read), method the request's method. addr is the address dialled,
// the one the proxy checked (null when nothing was dialled). grant is
// the --allow-egress grant that allowed it, in its canonical NAME:PORT
// form (null when refused), reason why a connection was refused or how
// an allowed one ended abnormally. sni is the server name a CONNECT's
// TLS ClientHello named (null when none was read). bytes_up are the
// bytes carried from the child to the server, bytes_down back;
// duration_ms runs from accept to close. in_flight are the seqs of the
// intents of the tools/calls in flight when the connection was accepted
// (at most MaxEgressInFlight, oldest first).
type Egress struct {
	Host       string
	Port       int
	Method     string
	Addr       string
	Decision   string
	Grant      string
	Reason     string
	SNI        string
	BytesUp    int64
	BytesDown  int64
	DurationMS int64
	InFlight   []uint64
	Conn       uint64 // 0: a record of a log before opening records
	Open       bool
}

func (*Egress) Kind() Kind { return KindEgress }

func (e *Egress) AppendFields(dst []byte) []byte {
	dst = appendStringField(dst, "host", e.Host)
	dst = appendIntField(dst, "port", int64(e.Port))
	dst = appendStringField(dst, "method", e.Method)
	dst = appendNullableString(dst, "addr", e.Addr)
	dst = appendStringField(dst, "decision", e.Decision)
	dst = appendNullableString(dst, "grant", e.Grant)
	dst = appendNullableString(dst, "reason", e.Reason)
	dst = appendNullableString(dst, "sni", e.SNI)
	dst = appendIntField(dst, "bytes_up", e.BytesUp)
	dst = appendIntField(dst, "bytes_down", e.BytesDown)
	dst = appendIntField(dst, "duration_ms", e.DurationMS)
	dst = append(appendKey(dst, "in_flight"), '[')
	for i, s := range e.InFlight {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, s, 10)
	}
	dst = append(dst, ']')
	if e.Conn > 0 {
		dst = appendUintField(dst, "conn", e.Conn)
		if e.Open {
			dst = appendBoolField(dst, "open", true)
		}
	}
	return dst
}

// decodeFields reads the kind fields of Egress from g, as AppendFields
// writes them; g.err holds what is wrong with them.
func (e *Egress) decodeFields(g *getter) error {
	e.Host = string(g.str("host"))
	e.Port = int(g.int("port"))
	e.Method = string(g.str("method"))
	e.Addr = g.nstr("addr")
	e.Decision = string(g.str("decision"))
	e.Grant = g.nstr("grant")
	e.Reason = g.nstr("reason")
	e.SNI = g.nstr("sni")
	e.BytesUp, e.BytesDown, e.DurationMS = g.int("bytes_up"), g.int("bytes_down"), g.int("duration_ms")
	if v := g.get("in_flight"); v != nil {
		a, err := v.Array()
		if err != nil {
			g.fail("field \"in_flight\" is not an array")
			return nil
		}
		for _, s := range a {
			n, err := s.Uint64()
			if err != nil {
				g.fail("field \"in_flight\" holds a non-integer")
				return nil
			}
			e.InFlight = append(e.InFlight, n)
		}
	}
	if g.has("conn") {
		if e.Conn = g.uint("conn"); g.err == nil && e.Conn == 0 {
			g.fail("field \"conn\" is 0")
		}
	}
	if g.has("open") {
		if e.Open = g.bool("open"); g.err == nil && (!e.Open || e.Conn == 0 || e.Decision != EgressAllowed) {
			g.fail("an egress record's \"open\" is true, of an allowed connection with its conn, or absent")
		}
	}
	if g.err == nil && e.Decision != EgressAllowed && e.Decision != EgressRefused {
		g.fail("egress decision %q is neither allowed nor refused", e.Decision)
	}
	return nil
}
