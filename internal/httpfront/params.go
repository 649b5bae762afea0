package httpfront

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// A tool may declare, with x-mcp-header in its inputSchema, arguments
// that a 2026-07-28 client mirrors in Mcp-Param-{Name} headers. The front
// learns the declarations from the answers to a stateless session's
// tools/list requests as they pass, and checks a tools/call's headers
// against its arguments as the transport requires: a value present in the
// body must be in its header, equal once decoded.

// paramDecl is one x-mcp-header declaration: the header's name part, the
// chain of properties keys that leads to the argument, and whether the
// argument is an integer (compared as a number).
type paramDecl struct {
	header  string
	path    []string
	integer bool
}

// Bounds of the declarations a session keeps.
const (
	maxDeclTools = 1024 // tools with declarations
	maxDecls     = 64   // declarations of one tool
	maxDeclDepth = 16   // properties keys on a declaration's path
)

// learnTools keeps the x-mcp-header declarations of the tools a
// tools/list answer lists, replacing what the session knew of each.
// Called without mu.
func (ss *session) learnTools(answer []byte) {
	var m struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(answer, &m) != nil {
		return
	}
	learned := map[string][]paramDecl{}
	for _, t := range m.Result.Tools {
		var decls []paramDecl
		collectDecls(t.InputSchema, nil, &decls)
		learned[t.Name] = decls
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.decls == nil {
		ss.decls = map[string][]paramDecl{}
	}
	for name, decls := range learned {
		if len(decls) == 0 {
			delete(ss.decls, name)
			continue
		}
		if _, ok := ss.decls[name]; ok || len(ss.decls) < maxDeclTools {
			ss.decls[name] = decls
		}
	}
}

// collectDecls appends the declarations of schema, whose instance is at
// path, reached through properties keys only, as the transport allows.
func collectDecls(schema json.RawMessage, path []string, out *[]paramDecl) {
	if len(path) > maxDeclDepth || len(*out) >= maxDecls {
		return
	}
	var s map[string]json.RawMessage
	if json.Unmarshal(schema, &s) != nil {
		return
	}
	if h, ok := s["x-mcp-header"]; ok && len(path) > 0 {
		var name, typ string
		json.Unmarshal(h, &name)
		json.Unmarshal(s["type"], &typ)
		if name != "" {
			*out = append(*out, paramDecl{header: name, path: append([]string(nil), path...), integer: typ == "integer"})
		}
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(s["properties"], &props) != nil {
		return
	}
	for k, sub := range props {
		collectDecls(sub, append(path, k), out)
	}
}

// paramMismatch checks the Mcp-Param-* headers of a tools/call (v) against
// its arguments, for the declarations the session knows of its tool; it
// returns why they disagree, or "". ss may be nil: no session yet, no
// declarations known.
func (ss *session) paramMismatch(r *http.Request, v *view) string {
	if ss == nil {
		return ""
	}
	ss.mu.Lock()
	decls := ss.decls[v.name]
	ss.mu.Unlock()
	for _, d := range decls {
		val, ok, clear := valueAt(v.args, d.path)
		if !clear {
			return fmt.Sprintf("Header mismatch: decoders read the body's %s differently (a duplicate or case-variant key)", strings.Join(d.path, "."))
		}
		if !ok {
			continue
		}
		body, isNum, ok := primitive(val)
		if !ok {
			continue
		}
		name := "Mcp-Param-" + d.header
		h, has, err := headerValue(r, name)
		switch {
		case err != nil:
			return "Header mismatch: " + err.Error()
		case !has:
			return fmt.Sprintf("Header mismatch: the %s header is required: the body carries %s", name, strings.Join(d.path, "."))
		}
		decoded, err := decodeSentinel(h)
		if err != nil {
			return fmt.Sprintf("Header mismatch: %s header: %s", name, err)
		}
		if !(decoded == body || isNum && sameNumber(decoded, body)) {
			return fmt.Sprintf("Header mismatch: %s header value %q does not match the body's %s %s", name, decoded, strings.Join(d.path, "."), body)
		}
	}
	return ""
}

// valueAt is the value at path in args (an object); ok false when absent
// or null. clear false when decoders read the path differently: a key on
// it given twice, or a key a decoder binds to it by case folding or by
// ignoring '_' and '-'.
func valueAt(args json.RawMessage, path []string) (val json.RawMessage, ok, clear bool) {
	cur := args
	for _, k := range path {
		if len(cur) == 0 || cur[0] != '{' {
			return nil, false, true
		}
		m, err := members(cur, []string{k})
		if err != nil {
			return nil, false, false
		}
		if cur = m[k]; cur == nil {
			return nil, false, true
		}
	}
	if len(cur) == 0 || bytes.Equal(cur, []byte("null")) {
		return nil, false, true
	}
	return cur, true, true
}

// primitive is the text a client puts in a header for val: a string as
// it is, a number as written, a boolean as true or false; ok false for
// any other type (no header is expected).
func primitive(val json.RawMessage) (text string, isNum, ok bool) {
	switch c := val[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(val, &s) != nil {
			return "", false, false
		}
		return s, false, true
	case c == 't' || c == 'f':
		return string(val), false, true
	case c == '-' || c >= '0' && c <= '9':
		return string(val), true, true
	}
	return "", false, false
}

// sameNumber reports whether a and b are numbers of one value (42 and
// 42.0 are one), as the transport compares integers; declared integers
// are within float64's exact range.
func sameNumber(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}
