package record

import "bytes"

// Trace is the W3C trace context a call's request carried in
// params._meta (traceparent, tracestate), recorded so that a span built
// from the log continues the client's trace. Parent is a traceparent of
// version 00 (ValidTraceparent); nil is absent, and then State is nil
// too. State is a tracestate (ValidTracestate); nil is absent. Both are
// bounded by their grammar: at most TraceparentLen and MaxTracestate
// bytes.
type Trace struct {
	Parent []byte
	State  []byte
}

// TraceparentLen is the length of a traceparent of version 00:
// "00-" 32 hex "-" 16 hex "-" 2 hex.
const TraceparentLen = 55

// MaxTracestate is the longest tracestate recorded: the length W3C Trace
// Context asks every vendor to carry on. A longer one is not recorded.
const MaxTracestate = 512

// maxTraceMembers is the most list-members a tracestate holds.
const maxTraceMembers = 32

// ValidTraceparent reports whether s is a W3C traceparent of version 00:
// lower-case hex fields, a trace-id and a parent-id not all zeros.
// Other versions are not recorded: their format is not fixed yet.
func ValidTraceparent(s []byte) bool {
	if len(s) != TraceparentLen || s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	return traceHex(s[3:35], true) && traceHex(s[36:52], true) && traceHex(s[53:55], false)
}

// traceHex reports whether s is lower-case hex digits, and, when nonZero,
// not all zeros.
func traceHex(s []byte, nonZero bool) bool {
	zero := true
	for _, c := range s {
		switch {
		case c == '0':
		case '1' <= c && c <= '9', 'a' <= c && c <= 'f':
			zero = false
		default:
			return false
		}
	}
	return !nonZero || !zero
}

// ValidTracestate reports whether s is a W3C tracestate of at most
// MaxTracestate bytes: at most 32 list-members (empty ones allowed),
// separated by commas with optional spaces and tabs, each key=value
// with a key of the grammar's simple or multi-tenant form, no key twice.
func ValidTracestate(s []byte) bool {
	if len(s) > MaxTracestate {
		return false
	}
	var keys [maxTraceMembers][]byte
	n := 0
	for m := range bytes.SplitSeq(s, []byte{','}) {
		m = bytes.Trim(m, " \t")
		if len(m) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(m, []byte{'='})
		if !ok || !traceKey(k) || !traceValue(v) || n == maxTraceMembers {
			return false
		}
		for _, seen := range keys[:n] {
			if bytes.Equal(seen, k) {
				return false
			}
		}
		keys[n] = k
		n++
	}
	return true
}

// traceKey: simple-key = lcalpha 0*255(lcalpha / DIGIT / "_" / "-" / "*" / "/"),
// or multi-tenant-key = tenant-id "@" system-id, tenant-id = (lcalpha /
// DIGIT) 0*240(…), system-id = lcalpha 0*13(…).
func traceKey(k []byte) bool {
	tenant, system, multi := bytes.Cut(k, []byte{'@'})
	if !multi {
		return len(k) >= 1 && len(k) <= 256 && isLower(k[0]) && keyChars(k[1:])
	}
	return len(tenant) >= 1 && len(tenant) <= 241 && (isLower(tenant[0]) || isDigit(tenant[0])) && keyChars(tenant[1:]) &&
		len(system) >= 1 && len(system) <= 14 && isLower(system[0]) && keyChars(system[1:])
}

func keyChars(s []byte) bool {
	for _, c := range s {
		if !isLower(c) && !isDigit(c) && c != '_' && c != '-' && c != '*' && c != '/' {
			return false
		}
	}
	return true
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// traceValue: value = 0*255(chr) nblk-chr, chr = %x20 / nblk-chr,
// nblk-chr = %x21-2B / %x2D-3C / %x3E-7E.
func traceValue(v []byte) bool {
	if len(v) == 0 || len(v) > 256 || v[len(v)-1] == ' ' {
		return false
	}
	for _, c := range v {
		if c < 0x20 || c > 0x7e || c == ',' || c == '=' {
			return false
		}
	}
	return true
}

// appendField writes ,"trace":{"traceparent":…[,"tracestate":…]}.
func (t Trace) appendField(dst []byte) []byte {
	dst = append(appendKey(dst, "trace"), '{')
	dst = appendStringField(dst, "traceparent", string(t.Parent))
	if t.State != nil {
		dst = appendStringField(dst, "tracestate", string(t.State))
	}
	return append(dst, '}')
}

// trace reads what appendField writes, each member held to its grammar.
func (g *getter) trace() Trace {
	o := g.obj("trace")
	t := Trace{Parent: bytes.Clone(o.str("traceparent"))}
	if o.err == nil && !ValidTraceparent(t.Parent) {
		o.fail("trace: traceparent is not a W3C traceparent of version 00")
	}
	if o.has("tracestate") {
		if t.State = bytes.Clone(o.str("tracestate")); o.err == nil && !ValidTracestate(t.State) {
			o.fail("trace: tracestate is not a W3C tracestate of at most %d bytes", MaxTracestate)
		}
	}
	g.merge(o)
	return t
}
