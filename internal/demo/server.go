package demo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// What Serve says about itself in its initialize answer.
const (
	ServerName    = "aegis-demo"
	ServerVersion = "1.0.0"
	// ProtocolVersion is the MCP revision Serve implements and answers with
	// when the client asks for one it does not know.
	ProtocolVersion = "2025-11-25"
)

// knownVersions are the MCP revisions whose wire is the same as
// ProtocolVersion's for everything Serve does (tools only), so Serve can
// answer a client that asks for one of them with that same revision.
var knownVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// JSON-RPC 2.0 error codes Serve answers with.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
)

// request is any incoming message. A nil ID means the id member is absent
// (a notification); a JSON null id is the 4 bytes "null" and is answered.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

var nullID = json.RawMessage("null")

func answer(id json.RawMessage, result any) *response {
	return &response{JSONRPC: "2.0", ID: id, Result: result}
}

func errorAnswer(id json.RawMessage, code int, format string, args ...any) *response {
	if id == nil {
		id = nullID
	}
	return &response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// Serve runs a minimal MCP server over stdio framing: it reads one JSON-RPC
// message or batch per '\n'-terminated line of r and writes each answer to w
// as one line, in a single Write, under a lock, so answers from concurrent
// handlers never interleave. Calls to the slow tool run in their own goroutine
// and are answered when they finish, after later calls if those are quicker.
//
// Serve returns nil when r hits EOF, once every call in flight has been
// answered; a read error or the first write error ends it with that error
// (after a write error nothing more is written).
func Serve(r io.Reader, w io.Writer) error {
	s := &server{w: w}
	br := bufio.NewReader(r)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.line(bytes.TrimSpace(line))
		}
		if rerr != nil || s.failed() {
			s.inflight.Wait()
			if werr := s.writeErr(); werr != nil {
				return werr
			}
			if rerr == io.EOF {
				return nil
			}
			return fmt.Errorf("demo: read: %w", rerr)
		}
	}
}

type server struct {
	inflight sync.WaitGroup // goroutines running slow calls

	mu  sync.Mutex // guards w and err: one whole line per Write
	w   io.Writer
	err error // first write error; sticky
}

func (s *server) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value written is built here from plain types.
		panic(fmt.Sprintf("demo: marshal own answer: %v", err))
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = fmt.Errorf("demo: write: %w", err)
	}
}

func (s *server) writeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *server) failed() bool { return s.writeErr() != nil }

// line handles one non-empty line: a message or a batch.
func (s *server) line(b []byte) {
	if !json.Valid(b) {
		s.write(errorAnswer(nil, CodeParseError, "parse error: not JSON"))
		return
	}
	if b[0] != '[' {
		req, bad := parse(b)
		switch {
		case bad != nil:
			s.write(bad)
		case isSlow(req):
			s.async(func() { s.writeAnswer(call(req)) })
		default:
			s.writeAnswer(call(req))
		}
		return
	}

	var elems []json.RawMessage
	if err := json.Unmarshal(b, &elems); err != nil {
		s.write(errorAnswer(nil, CodeParseError, "parse error: %v", err))
		return
	}
	if len(elems) == 0 {
		s.write(errorAnswer(nil, CodeInvalidRequest, "invalid request: empty batch"))
		return
	}
	// A batch is answered by one array, so a slow call anywhere in it holds
	// the whole array back; run such a batch off the read loop.
	run := func() {
		var out []*response
		for _, e := range elems {
			req, bad := parse(e)
			if bad == nil {
				bad = call(req)
			}
			if bad != nil {
				out = append(out, bad)
			}
		}
		if len(out) > 0 {
			s.write(out)
		}
	}
	for _, e := range elems {
		if req, bad := parse(e); bad == nil && isSlow(req) {
			s.async(run)
			return
		}
	}
	run()
}

func (s *server) writeAnswer(resp *response) {
	if resp != nil {
		s.write(resp)
	}
}

func (s *server) async(f func()) {
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		f()
	}()
}

// parse decodes one message. It returns the answer to send instead of
// handling the message when the message is not a valid request or
// notification.
func parse(b []byte) (request, *response) {
	var req request
	if err := json.Unmarshal(b, &req); err != nil {
		return req, errorAnswer(req.ID, CodeInvalidRequest, "invalid request: %v", err)
	}
	if req.JSONRPC != "2.0" {
		return req, errorAnswer(req.ID, CodeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	}
	return req, nil
}

// call handles one well-formed message and returns its answer, or nil when
// it gets none (notifications, and responses to requests Serve never sends).
func call(req request) *response {
	if req.Method == "" && (req.Result != nil || req.Error != nil) {
		return nil
	}
	if req.ID == nil {
		// notifications/initialized, notifications/cancelled and every other
		// notification: nothing to do and, by JSON-RPC, nothing to answer.
		return nil
	}
	switch req.Method {
	case "":
		return errorAnswer(req.ID, CodeInvalidRequest, "invalid request: no method")
	case "initialize":
		return initialize(req)
	case "ping":
		return answer(req.ID, struct{}{})
	case "tools/list":
		list := make([]toolDef, len(tools))
		for i, t := range tools {
			list[i] = t.toolDef
		}
		return answer(req.ID, map[string]any{"tools": list})
	case "tools/call":
		return callTool(req)
	default:
		return errorAnswer(req.ID, CodeMethodNotFound, "method not found: %s", req.Method)
	}
}

func initialize(req request) *response {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return errorAnswer(req.ID, CodeInvalidParams, "initialize: %v", err)
		}
	}
	version := ProtocolVersion
	for _, v := range knownVersions {
		if v == p.ProtocolVersion {
			version = v
		}
	}
	return answer(req.ID, map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": struct{}{}},
		"serverInfo":      map[string]string{"name": ServerName, "version": ServerVersion},
	})
}

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func isSlow(req request) bool {
	if req.Method != "tools/call" || req.ID == nil {
		return false
	}
	var p callParams
	return json.Unmarshal(req.Params, &p) == nil && p.Name == "slow"
}

func callTool(req request) *response {
	var p callParams
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Name == "" {
		return errorAnswer(req.ID, CodeInvalidParams, "tools/call: params must be an object with a name")
	}
	t := findTool(p.Name)
	if t == nil {
		return errorAnswer(req.ID, CodeInvalidParams, "unknown tool: %q", p.Name)
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	res, err := t.run(args)
	if err != nil {
		return errorAnswer(req.ID, CodeInvalidParams, "%s: %v", p.Name, err)
	}
	return answer(req.ID, res)
}
