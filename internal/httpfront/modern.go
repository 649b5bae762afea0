package httpfront

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aegisrelay/aegis/frame"
)

// Modern is the stateless revision: a POST whose MCP-Protocol-Version
// says it has no session (package documentation, "Stateless requests").
const Modern = "2026-07-28"

// JSON-RPC error codes of the 2026-07-28 revision that the front answers
// or maps to an HTTP status.
const (
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeHeaderMismatch     = -32020
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// Bounds of stateless requests.
const (
	// firstEventWait is how long a stateless request's answer is waited
	// for before its response is committed to an SSE stream: an answer
	// that comes within it is the response's JSON body, with the HTTP
	// status its error code calls for.
	firstEventWait = 3 * time.Second
	// cancelGrace is how long the id of a request cancelled by its
	// client's disconnection stays in flight, for the child's answer that
	// may already be on its way to be let go rather than reach a later
	// request with the same id.
	cancelGrace = time.Second
	// maxCancelID is the longest id token a stateless request keeps to
	// name it in the notifications/cancelled its disconnection writes;
	// a request with a longer id is not cancelled by its disconnection.
	maxCancelID = 4096
)

// firstEventTimers are stopped timers for the wait of firstEventWait,
// kept for the next request (a stopped timer's channel holds nothing).
var firstEventTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// errorStatus is the HTTP status of a stateless request's answer that is
// the whole response: for a JSON-RPC error, the status the transport
// gives its code (400 for a request the server refuses as it stands, 404
// for a method it does not serve); 200 otherwise.
func errorStatus(answer []byte) int {
	if !mayHoldError(answer) {
		return http.StatusOK
	}
	var m struct {
		Error *struct {
			Code json.Number `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &m) != nil || m.Error == nil {
		return http.StatusOK
	}
	switch code, _ := strconv.Atoi(string(m.Error.Code)); code {
	case codeMethodNotFound:
		return http.StatusNotFound
	case codeParseError, codeInvalidRequest, codeInvalidParams, codeHeaderMismatch, codeMissingCapability, codeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// mayHoldError reports whether encoding/json could read an "error"
// member in answer: it matches member names without case (and no letter
// outside ASCII folds to e, r or o), and only an escape spells a name
// otherwise. An answer without either is read as no error without being
// decoded, which most answers are.
func mayHoldError(answer []byte) bool {
	if bytes.IndexByte(answer, '\\') >= 0 {
		return true
	}
	for i := 0; i+5 <= len(answer); i++ {
		if answer[i]|0x20 == 'e' && answer[i+1]|0x20 == 'r' && answer[i+2]|0x20 == 'r' &&
			answer[i+3]|0x20 == 'o' && answer[i+4]|0x20 == 'r' {
			return true
		}
	}
	return false
}

// rpcErrorID answers status with a JSON-RPC error of code naming the
// request's id token as its client sent it (null when it has none).
func rpcErrorID(w http.ResponseWriter, status, code int, id []byte, msg string, data string) {
	if len(id) == 0 {
		id = []byte("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if data != "" {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q,"data":%s}}`, id, code, msg, data)
		return
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, msg)
}

// unsupportedVersion answers a request whose MCP-Protocol-Version the
// front does not serve: 400, -32022 naming the revision it serves without
// a handshake (the older ones are negotiated by initialize), with the
// request's id when a POST's body has one every decoder reads alike.
func (s *Server) unsupportedVersion(w http.ResponseWriter, r *http.Request, v string) {
	var id []byte
	if r.Method == http.MethodPost {
		if bd, err := s.readBody(w, r, nil); err == nil {
			if line, err := Line(bd.b); err == nil {
				cl := classifiers.Get().(*classifier)
				cl.c.Classify(line, &cl.f)
				if f := &cl.f; f.Kind == frame.Single && len(f.Msgs) == 1 && f.Msgs[0].Type == frame.Request {
					if m := &f.Msgs[0]; m.ID.Key != nil && len(m.AltIDs) == 0 && !strings.HasPrefix(m.Malformed, "id:") && len(m.ID.Raw) <= maxCancelID {
						id = append([]byte(nil), m.ID.Raw...)
					}
				}
				classifiers.Put(cl)
			}
			bd.release()
		}
	}
	data, _ := json.Marshal(struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}{[]string{Modern}, v})
	rpcErrorID(w, http.StatusBadRequest, codeUnsupportedVersion, id, "unsupported MCP-Protocol-Version "+strconv.Quote(v), string(data))
}

// headerValue returns the one value of header name, optional white space
// around it dropped (RFC 9110, 5.5), and whether it is present. A header
// given twice, or holding a character outside visible ASCII, space and
// tab, is an error: it cannot mirror one value.
func headerValue(r *http.Request, name string) (string, bool, error) {
	vs := r.Header.Values(name)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, fmt.Errorf("%s header given %d times", name, len(vs))
	}
	v := strings.Trim(vs[0], " \t")
	for i := 0; i < len(v); i++ {
		if c := v[i]; c != '\t' && (c < 0x20 || c > 0x7e) {
			return "", true, fmt.Errorf("%s header holds a character outside visible ASCII", name)
		}
	}
	return v, true, nil
}

// Base64 sentinel of a header value that is not plain ASCII.
const (
	sentinelPrefix = "=?base64?"
	sentinelSuffix = "?="
)

// decodeSentinel decodes a Mcp-Name or Mcp-Param-* value: one in the
// Base64 sentinel form is the UTF-8 text it encodes (canonical standard
// Base64, padded); any other is itself.
func decodeSentinel(v string) (string, error) {
	if !strings.HasPrefix(v, sentinelPrefix) || !strings.HasSuffix(v, sentinelSuffix) || len(v) < len(sentinelPrefix)+len(sentinelSuffix) {
		return v, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v[len(sentinelPrefix) : len(v)-len(sentinelSuffix)])
	if err != nil || !utf8.Valid(b) {
		return "", errors.New("not canonical Base64 of UTF-8 text")
	}
	return string(b), nil
}

// nameSource is the body member Mcp-Name mirrors for method, and whether
// the method has one.
func nameSource(method string, v *view) (what, val string, has, applies bool) {
	switch method {
	case "tools/call", "prompts/get":
		return "params.name", v.name, v.hasName, true
	case "resources/read":
		return "params.uri", v.uri, v.hasURI, true
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "params.taskId", v.taskID, v.hasTaskID, true
	}
	return "", "", false, false
}

// modernMismatch checks a 2026-07-28 message's headers against its body
// (v, read by readView): MCP-Protocol-Version against the revision the
// body declares in _meta, Mcp-Method (required on a request) against
// method, Mcp-Name (required where the body has its source value)
// against params.name, params.uri or params.taskId, and the Mcp-Param-*
// headers the session's tools declare (params.go). It returns why they
// disagree, or "".
func (ss *session) modernMismatch(r *http.Request, m *frame.Message, v *view) string {
	if v.hasRevision && v.revision != Modern {
		return fmt.Sprintf("Header mismatch: MCP-Protocol-Version %s but the body's _meta declares %q", Modern, v.revision)
	}
	method, has, err := headerValue(r, "Mcp-Method")
	switch {
	case err != nil:
		return "Header mismatch: " + err.Error()
	case !has && m.Type == frame.Request:
		return "Header mismatch: the Mcp-Method header is required"
	case has && (!v.hasMethod || method != v.method):
		return fmt.Sprintf("Header mismatch: Mcp-Method header value %q does not match the body's method %q", method, v.method)
	}
	name, hasName, err := headerValue(r, "Mcp-Name")
	if err != nil {
		return "Header mismatch: " + err.Error()
	}
	what, want, hasWant, applies := nameSource(v.method, v)
	if hasName {
		decoded, err := decodeSentinel(name)
		switch {
		case err != nil:
			return "Header mismatch: Mcp-Name header: " + err.Error()
		case !applies || !hasWant:
			return fmt.Sprintf("Header mismatch: Mcp-Name header given, but the body of %q has no value it mirrors", v.method)
		case decoded != want:
			return fmt.Sprintf("Header mismatch: Mcp-Name header value %q does not match the body's %s %q", decoded, what, want)
		}
	} else if applies && hasWant {
		return fmt.Sprintf("Header mismatch: the Mcp-Name header is required: the body carries %s", what)
	}
	if v.method == "tools/call" && v.hasName {
		return ss.paramMismatch(r, v)
	}
	return ""
}

// localAddr is the address the request reached: the endpoint served.
func localAddr(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return ""
}

// postModern serves a POST of the 2026-07-28 revision: stateless, no
// Mcp-Session-Id read or given, the message written to the child of its
// principal's stateless session (package documentation, "Stateless
// requests").
func (s *Server) postModern(w http.ResponseWriter, r *http.Request, sse, jsonOK bool) {
	principal := s.principal()
	s.mu.Lock()
	ss := s.stateless[principal]
	s.mu.Unlock()
	bd, line, cl := s.readMessage(w, r, ss, "the body must be one JSON-RPC request or notification")
	if cl == nil {
		return
	}
	defer classifiers.Put(cl)
	owned := true
	defer func() {
		if owned {
			bd.release()
		}
	}()
	m := &cl.f.Msgs[0]
	var id []byte
	if m.Type == frame.Request && m.ID.Key != nil && len(m.AltIDs) == 0 && !strings.HasPrefix(m.Malformed, "id:") {
		id = m.ID.Raw
	}
	if m.Answers || m.Type == frame.Response {
		rpcError(w, http.StatusBadRequest, codeInvalidRequest, "a client sends no responses on "+Modern+": the body must be a request or a notification")
		return
	}
	v := readView(line)
	if v.ambiguous != "" {
		rpcErrorID(w, http.StatusBadRequest, codeInvalidRequest, id, "decoders read the body differently: "+v.ambiguous, "")
		return
	}
	if msg := ss.modernMismatch(r, m, &v); msg != "" {
		rpcErrorID(w, http.StatusBadRequest, codeHeaderMismatch, id, msg, "")
		return
	}
	// The child reads nothing that is not of the revision: a stdio
	// server takes the first line it reads to say which revision its
	// connection speaks, and the session's child is every client's of the
	// principal. initialize, the older revisions' handshake, is no method
	// of this one; a message without the revision's _meta envelope is
	// refused as the revision's servers refuse it.
	if v.method == "initialize" {
		rpcErrorID(w, http.StatusNotFound, codeMethodNotFound, id, "Method not found: initialize is no method of "+Modern+", whose requests need no handshake", "")
		return
	}
	if !v.hasRevision || m.Type == frame.Request && !v.hasCaps {
		rpcErrorID(w, http.StatusBadRequest, codeInvalidParams, id, "the message lacks the "+Modern+" _meta envelope (params._meta with "+revisionKey+" and "+capsKey+")", "")
		return
	}
	if m.Type == frame.Request && m.ID.Key == nil {
		httpError(w, http.StatusBadRequest, "a request's id must be a string or a number")
		return
	}
	if ss == nil {
		if ss = s.beginStateless(w, r, principal); ss == nil {
			return
		}
	}
	ss.use(+1)
	defer ss.use(-1)
	if m.Type != frame.Request {
		owned = false
		err := ss.send(line, bd.release) // given back once the relay has read it
		if err != nil {
			httpError(w, http.StatusServiceUnavailable, "the server ended; retry")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if len(id) > maxCancelID {
		id = nil
	} else {
		id = append([]byte(nil), id...)
	}
	listen := v.method == "subscriptions/listen"
	keys := routeKeys(m)
	progress, _ := requestProgressKey(line)
	kind := streamKind{modern: true, listen: listen, toolsList: v.method == "tools/list"}
	o, err := ss.request(r.Context(), line, keys, true, progress, kind, bd.release)
	if err != nil {
		return
	}
	owned = false
	if err := ss.wait(r.Context(), o); errors.Is(err, errGone) {
		ss.cancel(o.st, id)
		return
	} else if err != nil {
		httpError(w, http.StatusServiceUnavailable, "the server ended; retry")
		return
	}
	st := o.st
	if !listen {
		// The answer that comes at once is the response's body, with the
		// status its error code calls for.
		// wait may have taken the first event's wake-up: the stream
		// itself says whether an event is in.
		ss.mu.Lock()
		ready := st.complete || len(st.events) > 0
		ss.mu.Unlock()
		if !ready {
			t := firstEventTimers.Get().(*time.Timer)
			t.Reset(firstEventWait)
			select {
			case <-o.first:
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
			firstEventTimers.Put(t)
		}
		ss.mu.Lock()
		whole := st.complete && len(st.events) == 1 && st.sent == 1
		ss.mu.Unlock()
		if whole && jsonOK {
			ss.serveJSON(w, r, st)
			return
		}
	}
	if sse {
		ss.serveStream(w, r, st, 1, false)
	} else {
		// A client that takes JSON alone waits for the whole answer.
		ss.serveJSON(w, r, st)
	}
	ss.cancel(st, id)
}

// cancel ends st, a stateless request's stream, when its client left
// before its answer: the notifications/cancelled the stdio transport
// cancels a request with is written to the child, naming the request's
// id token as its client sent it (none when id is nil), what the child
// still writes for it is dropped, and its id leaves the requests in
// flight once its answer comes or after cancelGrace.
func (ss *session) cancel(st *stream, id []byte) {
	ss.mu.Lock()
	if st.complete || st.cancelled {
		ss.mu.Unlock()
		return
	}
	st.cancelled, st.lost = true, true
	ss.free(st.letGo())
	st.endConn()
	delete(ss.streams, st.id)
	for i, p := range ss.order {
		if p == st {
			ss.order = append(ss.order[:i], ss.order[i+1:]...)
			break
		}
	}
	if st.progress != "" && ss.progress[st.progress] == st {
		delete(ss.progress, st.progress)
	}
	ss.mu.Unlock()
	if id != nil {
		line := make([]byte, 0, len(id)+128)
		line = append(line, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
		line = append(line, id...)
		line = append(line, `,"reason":"the client closed its response stream"}}`...)
		ss.send(line, nil)
	}
	time.AfterFunc(cancelGrace, func() {
		ss.mu.Lock()
		if !st.complete {
			ss.finish(st)
		}
		ss.mu.Unlock()
	})
}

// beginStateless starts the stateless session of principal, or answers
// why not: a session as begin's, counted against MaxSessions and ended on
// idleness alike, whose id no client is given.
func (s *Server) beginStateless(w http.ResponseWriter, r *http.Request, principal string) *session {
	s.mu.Lock()
	if ss := s.stateless[principal]; ss != nil {
		s.mu.Unlock()
		return ss
	}
	s.mu.Unlock()
	// The session serves every client of its principal: its peer is the
	// endpoint served, as the listener's own record names it.
	return s.start(w, &Conn{Peer: localAddr(r), Principal: principal, Stateless: true})
}
