package httpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// view is what the front reads of a 2026-07-28 request's body to check
// its headers against: the members a header mirrors, each read as every
// decoder reads it or not at all. A member some decoder reads differently
// (a duplicate key, a case-variant key as Go's encoding/json binds it, a
// key equal but for '_' or '-' as encoding/json/v2 may bind it, a string
// with invalid UTF-8, U+0000 or U+FFFD) makes the body ambiguous, and it
// is refused before any header is compared.
type view struct {
	method                                             string
	name, uri                                          string // params.name, params.uri
	taskID                                             string // params.taskId
	revision                                           string // params._meta["io.modelcontextprotocol/protocolVersion"]
	hasMethod, hasName, hasURI, hasTaskID, hasRevision bool
	// hasCaps: params._meta["io.modelcontextprotocol/clientCapabilities"]
	// is an object.
	hasCaps bool
	// args is params.arguments as on the line (nil when absent).
	args json.RawMessage
	// ambiguous is why some decoder reads the body differently, or "".
	ambiguous string
}

// The _meta keys of the revision a request declares and of the client's
// capabilities, which every 2026-07-28 request carries.
const (
	revisionKey = "io.modelcontextprotocol/protocolVersion"
	capsKey     = "io.modelcontextprotocol/clientCapabilities"
)

// readView reads the members of line (one JSON object, as the frame
// classifier found) that headers mirror, in one pass over its bytes and
// without allocating but for the strings it gives. Its verdicts are those
// of reading the top level, params and params._meta each with
// encoding/json's Decoder (members): the first of its member errors at
// the top level, then method's text, then params' first member error,
// then the text of name, uri and taskId, then _meta's first member error,
// then the revision's text. A line that is not one JSON object (trailing
// data included) is ambiguous.
func readView(line []byte) view {
	var r viewReader
	r.b = line
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return view{ambiguous: "not an object"}
	}
	if i = r.object(i, 1, lvTop); i < 0 {
		return view{ambiguous: r.syntax}
	}
	if r.err[lvTop] == 0 && skipWS(line, i) != len(line) {
		return view{ambiguous: "data after the object"}
	}
	var v view
	var err error
	if e := r.err[lvTop]; e != 0 {
		v.ambiguous = dupError(e - 1)
		return v
	}
	if raw := r.val[wMethod]; raw != nil {
		if v.method, v.hasMethod, err = str(raw, "method"); err != nil {
			v.ambiguous = err.Error()
			return v
		}
	}
	if params := r.val[wParams]; params == nil || params[0] != '{' {
		return v
	}
	if e := r.err[lvParams]; e != 0 {
		v.ambiguous = "params: " + dupError(e-1)
		return v
	}
	for _, f := range [...]struct {
		w    int
		what string
		s    *string
		has  *bool
	}{{wName, "params.name", &v.name, &v.hasName}, {wURI, "params.uri", &v.uri, &v.hasURI}, {wTaskID, "params.taskId", &v.taskID, &v.hasTaskID}} {
		if raw := r.val[f.w]; raw != nil {
			if *f.s, *f.has, err = str(raw, f.what); err != nil {
				v.ambiguous = err.Error()
				return v
			}
		}
	}
	v.args = r.val[wArguments]
	if meta := r.val[wMeta]; meta != nil && meta[0] == '{' {
		if e := r.err[lvMeta]; e != 0 {
			v.ambiguous = "params._meta: " + dupError(e-1)
			return v
		}
		if raw := r.val[wRevision]; raw != nil {
			if v.revision, v.hasRevision, err = str(raw, "params._meta.protocolVersion"); err != nil {
				v.ambiguous = err.Error()
				return v
			}
		}
		caps := r.val[wCaps]
		v.hasCaps = len(caps) > 0 && caps[0] == '{'
	}
	return v
}

// members returns the values of obj's members named by keys, or an error
// naming the first of keys that some decoder binds to more than one
// member, or to a member whose key is not exactly it. valueAt reads a
// tool's arguments with it; readView's one pass (view_scan.go) gives the
// verdicts it gives.
func members(obj []byte, keys []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	found := map[string]json.RawMessage{}
	seen := map[string]bool{}
	// Each name is folded once: the keys wanted here, and each key read.
	folded := make([]string, len(keys))
	for i, want := range keys {
		folded[i] = fold(want)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		fk := fold(k)
		for i, want := range keys {
			if fk != folded[i] {
				continue
			}
			if k != want || seen[want] || !utf8.ValidString(k) {
				return nil, errors.New(want + ": a duplicate or case-variant key")
			}
			seen[want] = true
			found[want] = raw
		}
	}
	return found, nil
}

// fold is a key as decoders may bind it: a decoder may bind key to the
// member want when fold(key) == fold(want), equal under Unicode simple
// case folding, '_' and '-' ignored, or once a C decoder has cut it at
// U+0000 or a decoder has dropped U+FFFD (which invalid UTF-8 decodes
// to).
func fold(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == utf8.RuneError {
			return -1
		}
		// The smallest rune of r's folding orbit: one for every case.
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, s)
}

// str decodes raw (a validated JSON value) as a string that every
// decoder reads alike: ok false when raw is not a string (null
// included); an error when its text is read differently (invalid UTF-8,
// which decoders replace, keep or refuse; U+0000, where C decoders cut;
// U+FFFD, which a replacement makes).
func str(raw []byte, what string) (string, bool, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false, nil
	}
	if !utf8.Valid(raw) {
		return "", false, errors.New(what + ": invalid UTF-8")
	}
	in := raw[1 : len(raw)-1]
	var s string
	if bytes.IndexByte(in, '\\') < 0 {
		s = string(in)
	} else {
		var buf [64]byte
		d := buf[:0]
		for i := 0; i < len(in); {
			var r rune
			r, i = nextRune(in, i)
			d = utf8.AppendRune(d, r)
		}
		s = string(d)
	}
	if strings.ContainsRune(s, 0) || strings.ContainsRune(s, utf8.RuneError) {
		return "", false, errors.New(what + ": U+0000 or U+FFFD")
	}
	return s, true, nil
}
