package frame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a reference classifier built only on encoding/json
// (json.Valid for the "one JSON value" verdict, json.Decoder token walking to
// see every key, duplicates included, as decoded by Go) and compares the
// Classifier with it. The ambiguity rules are re-implemented here
// independently, with strings.EqualFold for case folding.

type refMsg struct {
	Type       MsgType
	Method     *string
	HasID      bool
	IDType     IDType
	IDRaw      string
	IDKey      string
	IsToolCall bool
	Tool       *string
	Args       *string // params.arguments as on the line
	ArgsText   bool    // some arguments text is read differently (refArgsUnclear)
	Malformed  bool
	IsError    bool
	ToolError  bool
}

type refFrame struct {
	Kind     Kind
	Msgs     []refMsg
	Overflow bool
	// Split: a bare CR splits the line into two or more pieces with
	// content (refSplit). Nested: an array inside the batch holds an
	// object.
	Split, Nested bool
}

func refClassify(line []byte) refFrame {
	trimmed := bytes.TrimLeft(line, " \t\r\n")
	if len(trimmed) == 0 {
		return refFrame{Kind: Empty}
	}
	if !json.Valid(line) {
		return refFrame{Kind: NotJSON}
	}
	split := 0
	for _, p := range refSplit(line) {
		if len(bytes.TrimLeft(p, " \t\n")) > 0 {
			split++
		}
	}
	switch trimmed[0] {
	case '{':
		return refFrame{Kind: Single, Msgs: []refMsg{refMessage(trimmed)}, Split: split > 1}
	case '[':
		fr := refFrame{Kind: Batch, Msgs: []refMsg{}, Split: split > 1}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.Token() // [
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				panic(err)
			}
			switch {
			case len(fr.Msgs) == MaxBatch:
				fr.Overflow = true
			case raw[0] == '{':
				fr.Msgs = append(fr.Msgs, refMessage(raw))
			case raw[0] == '[':
				fr.Nested = fr.Nested || len(refObjects(raw)) > 0
				fr.Msgs = append(fr.Msgs, refMsg{Type: Invalid})
			default:
				fr.Msgs = append(fr.Msgs, refMsg{Type: Invalid})
			}
		}
		return fr
	}
	return refFrame{Kind: Single, Msgs: []refMsg{}}
}

// dropSeparators removes what some decoders ignore in a key. It is built
// once: building a Replacer costs many times what one Replace does.
var dropSeparators = strings.NewReplacer("_", "", "-", "")

// refMatch returns which of names key binds to in some decoder, and whether
// exactly.
func refMatch(key string, names ...string) (string, bool) {
	stripped := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, key)
	for _, n := range names {
		if key == n {
			return n, true
		}
	}
	for _, n := range names {
		if strings.EqualFold(stripped, dropSeparators.Replace(n)) {
			return n, false
		}
	}
	return "", false
}

// refMembers calls fn for each member of the object raw, in order.
func refMembers(raw []byte, fn func(key string, v json.RawMessage)) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		panic(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			panic(err)
		}
		fn(tok.(string), v)
	}
}

type refCount struct{ exact, variant int }

func (n *refCount) add(exact bool) {
	if exact {
		n.exact++
	} else {
		n.variant++
	}
}
func (n refCount) present() bool   { return n.exact+n.variant > 0 }
func (n refCount) ambiguous() bool { return n.exact > 1 || n.variant > 0 }

func refBad(s string) bool {
	return strings.ContainsRune(s, 0) || strings.ContainsRune(s, utf8.RuneError)
}

// refEscape is a \u escape with the backslashes before it: an odd run is
// an escape, an even one escaped backslashes and then text.
var refEscape = regexp.MustCompile(`\\+u([0-9a-fA-F]{4})`)

// refArgsUnclear reports whether decoders read some text of the JSON value
// v differently: invalid UTF-8, an escaped U+0000, or a surrogate escape
// that is not a high one directly followed by a low one.
func refArgsUnclear(v []byte) bool {
	if !utf8.Valid(v) {
		return true
	}
	type escape struct {
		r          rune
		start, end int
	}
	var esc []escape
	for _, loc := range refEscape.FindAllSubmatchIndex(v, -1) {
		if (loc[2]-1-loc[0])%2 == 0 {
			continue
		}
		r, _ := strconv.ParseUint(string(v[loc[2]:loc[3]]), 16, 32)
		esc = append(esc, escape{rune(r), loc[2] - 2, loc[3]})
	}
	for k := 0; k < len(esc); k++ {
		e := esc[k]
		switch {
		case e.r == 0:
			return true
		case utf16.IsSurrogate(e.r):
			if e.r >= 0xdc00 || k+1 == len(esc) || esc[k+1].start != e.end || esc[k+1].r < 0xdc00 || esc[k+1].r > 0xdfff {
				return true
			}
			k++
		}
	}
	return false
}

func refMessage(raw []byte) refMsg {
	var (
		method, id, params, name, args, result, errf, isError refCount
		methodVal, nameVal, argsVal                           *string
		methodBad, nameBad, idBad, paramsBad, nameType        bool
		toolCall, isErrTrue                                   bool
		m                                                     refMsg
	)
	str := func(v json.RawMessage) *string {
		if v[0] != '"' {
			return nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			panic(err)
		}
		return &s
	}
	refMembers(raw, func(key string, v json.RawMessage) {
		f, exact := refMatch(key, "method", "id", "params", "result", "error")
		switch f {
		case "method":
			method.add(exact)
			s := str(v)
			if exact || method.exact == 0 {
				methodVal = s
			}
			if s == nil {
				methodBad = true
				return
			}
			if refBad(*s) {
				methodBad = true
				cut, _, _ := strings.Cut(*s, "\x00")
				if strings.ReplaceAll(cut, "\uFFFD", "") == "tools/call" {
					toolCall = true
				}
			}
			if *s == "tools/call" {
				toolCall = true
			}
		case "id":
			id.add(exact)
			if !(exact || id.exact == 0) {
				return
			}
			m.IDRaw = string(v)
			switch v[0] {
			case '"':
				m.IDType, m.IDKey = IDString, "s"+*str(v)
			case 'n':
				m.IDType, m.IDKey = IDNull, "N"
			case '{', '[', 't', 'f':
				m.IDType, m.IDKey = IDInvalid, ""
			default:
				m.IDType, m.IDKey = IDNumber, refNumberKey(string(v))
			}
		case "params":
			params.add(exact)
			if v[0] != '{' {
				paramsBad = true
				return
			}
			refMembers(v, func(key string, v json.RawMessage) {
				f, exact := refMatch(key, "name", "arguments")
				if f == "arguments" {
					args.add(exact)
					if refArgsUnclear(v) {
						m.ArgsText = true
					}
					if exact || args.exact == 0 {
						s := string(v)
						argsVal = &s
					}
					return
				}
				if f == "" {
					return
				}
				name.add(exact)
				s := str(v)
				if s == nil {
					nameType = true
				} else if refBad(*s) {
					nameBad = true
				}
				if exact || name.exact == 0 {
					nameVal = s
				}
			})
		case "result":
			result.add(exact)
			if v[0] != '{' {
				return
			}
			refMembers(v, func(key string, v json.RawMessage) {
				f, exact := refMatch(key, "isError")
				if f == "" {
					return
				}
				isError.add(exact)
				if string(v) == "true" {
					isErrTrue = true
				}
			})
		case "error":
			errf.add(exact)
		}
	})
	// id badness is only about the type of any id candidate; recompute by
	// walking again, since only the kept id's type is stored above.
	refMembers(raw, func(key string, v json.RawMessage) {
		if f, _ := refMatch(key, "method", "id", "params", "result", "error"); f == "id" {
			switch v[0] {
			case '{', '[', 't', 'f':
				idBad = true
			}
		}
	})
	m.Method = methodVal
	m.HasID = id.present()
	if !m.HasID {
		m.IDType, m.IDRaw, m.IDKey = IDNone, "", ""
	}
	m.IsToolCall = toolCall
	switch {
	case method.present() && m.HasID:
		m.Type = Request
	case method.present():
		m.Type = Notification
	case m.HasID && (result.present() || errf.present()):
		m.Type = Response
	default:
		m.Type = Invalid
	}
	if toolCall {
		m.Malformed = method.ambiguous() || methodBad || id.ambiguous() || idBad ||
			params.ambiguous() || paramsBad || name.ambiguous() || nameType || nameBad || args.ambiguous()
		if params.exact == 1 && params.variant == 0 && !paramsBad && name.exact == 1 && name.variant == 0 && !nameType && !nameBad {
			m.Tool = nameVal
		}
		if params.exact == 1 && params.variant == 0 && !paramsBad && args.exact == 1 && args.variant == 0 {
			m.Args = argsVal
		}
	} else {
		m.ArgsText = false
	}
	rr, recorded, _ := refRounds(raw)
	switch {
	case toolCall:
		m.Malformed = m.Malformed || rr.Malformed
	case recorded:
		m.Malformed = rr.Malformed
	}
	if m.Type == Response {
		m.Malformed = id.ambiguous() || idBad || result.ambiguous() || errf.ambiguous() ||
			(result.present() && errf.present()) || isError.ambiguous() || rr.Malformed
		m.IsError = errf.present()
		m.ToolError = isErrTrue
	}
	return m
}

func strp(b []byte, ok bool) *string {
	if !ok {
		return nil
	}
	s := string(b)
	return &s
}

func fmtp(p *string) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *p)
}

// diff returns "" if the frame matches the reference, else what differs.
func diff(f *Frame, want refFrame) string {
	if f.Kind != want.Kind {
		return fmt.Sprintf("kind %s (%q), reference %s", f.Kind, f.Anomaly, want.Kind)
	}
	wantAnomaly := ""
	switch {
	case want.Overflow:
		wantAnomaly = AnomalyBatch
	case want.Split:
		wantAnomaly = AnomalyCR
	case want.Nested:
		wantAnomaly = AnomalyNested
	}
	switch {
	case f.Kind == NotJSON && f.Anomaly == "":
		return "NotJSON without Anomaly"
	case f.Kind != NotJSON && f.Anomaly != wantAnomaly:
		return fmt.Sprintf("anomaly %q, reference %+v", f.Anomaly, want)
	}
	if len(f.Msgs) != len(want.Msgs) {
		return fmt.Sprintf("%d msgs, reference %d", len(f.Msgs), len(want.Msgs))
	}
	for i := range f.Msgs {
		g, w := &f.Msgs[i], &want.Msgs[i]
		got := refMsg{
			Type:       g.Type,
			Method:     strp(g.Method, g.Method != nil),
			HasID:      g.HasID,
			IDType:     g.ID.Type,
			IDRaw:      string(g.ID.Raw),
			IDKey:      string(g.ID.Key),
			IsToolCall: g.IsToolCall,
			Tool:       strp(g.Tool, g.HasTool),
			Args:       strp(g.Args, g.HasArgs),
			ArgsText:   g.ArgsText != "",
			Malformed:  g.Malformed != "",
			IsError:    g.IsError,
			ToolError:  g.ToolError,
		}
		if g.ID.Type == IDString && string(g.ID.Str) != strings.TrimPrefix(w.IDKey, "s") {
			return fmt.Sprintf("msg %d: id.Str %q, reference %q", i, g.ID.Str, w.IDKey[1:])
		}
		if fmtp(got.Method) != fmtp(w.Method) || fmtp(got.Tool) != fmtp(w.Tool) {
			return fmt.Sprintf("msg %d: method %s tool %s, reference method %s tool %s", i, fmtp(got.Method), fmtp(got.Tool), fmtp(w.Method), fmtp(w.Tool))
		}
		if fmtp(got.Args) != fmtp(w.Args) {
			return fmt.Sprintf("msg %d: arguments %s, reference %s", i, fmtp(got.Args), fmtp(w.Args))
		}
		got.Method, got.Tool, got.Args = w.Method, w.Tool, w.Args
		if got != *w {
			return fmt.Sprintf("msg %d: %+v (malformed %q), reference %+v", i, got, g.Malformed, *w)
		}
	}
	return ""
}

func checkDifferential(t *testing.T, c *Classifier, line []byte) Kind {
	t.Helper()
	orig := bytes.Clone(line)
	var f Frame
	c.Classify(line, &f)
	if !bytes.Equal(line, orig) {
		t.Fatalf("Classify(%q) modified its input", orig)
	}
	if d := diff(&f, refClassify(line)); d != "" {
		t.Fatalf("Classify(%q) = %s; differs from encoding/json reference: %s", line, describe(&f), d)
	}
	if d := diffRounds(&f, line); d != "" {
		t.Fatalf("Classify(%q) = %s; differs from encoding/json reference: %s", line, describe(&f), d)
	}
	if d := checkRoundsPremise(&f, line); d != "" {
		t.Fatalf("Classify(%q) = %s; but %s", line, describe(&f), d)
	}
	if d := checkPremise(&f, line); d != "" {
		t.Fatalf("Classify(%q) = %s; but %s", line, describe(&f), d)
	}
	if d := checkReadings(&f, line); d != "" {
		t.Fatalf("Classify(%q) = %s; but %s", line, describe(&f), d)
	}
	return f.Kind
}

// goStruct is how a Go peer decodes a message: encoding/json binds keys
// case-insensitively, the last one winning.
// (RawMessage, not *RawMessage: a pointer would be set to nil by a null.)
type goStruct struct {
	Method *string         `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
}

// decoded is what one decoder reads from a message.
type decoded struct{ method, id, name, args *string }

func (d decoded) String() string {
	return fmt.Sprintf("method %s id %s name %s arguments %s", fmtp(d.method), fmtp(d.id), fmtp(d.name), fmtp(d.args))
}

// readGo decodes obj as a Go peer does; ok is false if decoding fails.
func readGo(obj []byte) (d decoded, ok bool) {
	var m goStruct
	if json.Unmarshal(obj, &m) != nil {
		return d, false
	}
	d.method = m.Method
	if m.ID != nil {
		d.id = strp(m.ID, true)
	}
	if m.Params != nil {
		var p struct {
			Name      *string         `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return d, false
		}
		d.name = p.Name
		if p.Arguments != nil {
			d.args = strp(p.Arguments, true)
		}
	}
	return d, true
}

// readExact decodes obj as JSON.parse or Python's json do: exact names, the
// last duplicate winning.
func readExact(obj []byte) (d decoded, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return d, false
	}
	str := func(raw json.RawMessage) (*string, bool) {
		var s *string
		return s, json.Unmarshal(raw, &s) == nil
	}
	if raw, found := m["method"]; found {
		if d.method, ok = str(raw); !ok {
			return d, false
		}
	}
	if raw, found := m["id"]; found {
		d.id = strp(raw, true)
	}
	if raw, found := m["params"]; found {
		var p map[string]json.RawMessage
		if json.Unmarshal(raw, &p) != nil {
			return d, false
		}
		if raw, found := p["name"]; found {
			if d.name, ok = str(raw); !ok {
				return d, false
			}
		}
		if raw, found := p["arguments"]; found {
			d.args = strp(raw, true)
		}
	}
	return d, true
}

// checkPremise checks the ambiguity rules against real decoders: a message
// Classify says is no tool call is none for either decoder, and one it says
// is an unambiguous tool call reads the same in both.
func checkPremise(f *Frame, line []byte) string {
	if f.Kind != Single && f.Kind != Batch || f.Anomaly != "" {
		return ""
	}
	var objs []json.RawMessage
	if f.Kind == Batch {
		json.Unmarshal(line, &objs)
	} else if len(f.Msgs) == 1 {
		objs = []json.RawMessage{bytes.TrimSpace(line)}
	}
	for i, obj := range objs {
		if obj[0] != '{' {
			continue
		}
		m := &f.Msgs[i]
		g, gok := readGo(obj)
		e, eok := readExact(obj)
		isCall := func(d decoded) bool { return d.method != nil && *d.method == "tools/call" }
		if !m.IsToolCall && (gok && isCall(g) || eok && isCall(e)) {
			return fmt.Sprintf("msg %d: not a tool call, yet Go reads %v and JSON.parse reads %v", i, g, e)
		}
		if m.IsToolCall && m.Malformed == "" && gok && eok && g.String() != e.String() {
			return fmt.Sprintf("msg %d: unambiguous, yet Go reads %v and JSON.parse reads %v", i, g, e)
		}
		if m.IsToolCall && m.Malformed == "" && gok && fmtp(strp(m.Args, m.HasArgs)) != fmtp(g.args) {
			return fmt.Sprintf("msg %d: arguments %q, yet Go reads %v", i, m.Args, g)
		}
	}
	return ""
}

// differentialSeeds are lines that exercise the classifier's decisions; they
// also seed FuzzClassify.
var differentialSeeds = []string{
	call,
	`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a","arguments":{"q":[1,2,{"r":null}]}}}`,
	`[{"id":1,"method":"tools/call","params":{"name":"a"}},{"id":2,"result":{"isError":true}},3]`,
	`{"id":1,"method":"ping","Method":"tools/call"}`,
	`{"id":1,"method":"tools/call","paramſ":{"name":"x"},"params":{"name":"y"}}`,
	`{"id":1,"met\u0068od":"tools\/call","params":{"na\u006de":"\ud83d\ude00"}}`,
	`{"id":1.0e-0,"result":{},"error":{}}`,
	`{"id":-0,"error":{"code":1}}`,
	`{"id":123456789012345678901234567890e-20,"result":{"is_error":true}}`,
	`{"id":{"a":1},"method":"tools/call","params":{"name":1}}`,
	`{"id":"\ud800","method":"tools/call\u0000","params":{"name":"a\ufffd"}}`,
	"{\"id\":1,\"method\":\"tools/\xffcall\",\"params\":{\"name\":\"\xc3\"}}",
	"\xef\xbb\xbf{}",
	`{"a":1}{"b":2}`,
	`{"id":1,` + "\n",
	" \r\n",
	`[[[[[]]]]]`,
	`{"ID":1,"METHOD":"tools/call","PARAMS":{"NAME":"x"}}`,
	`{"i_d":1,"me-thod":"tools/call","params":{"n_a_m_e":"x","name":"y"}}`,
	`{"id":null,"method":"tools/call","params":{"name":null}}`,
	`{"id":1,"method":"tools/call","params":null}`,
	"{\"x\":\r{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}\r}",
	"[\r{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}\r,\r{\"id\":2,\"result\":{}}]\r\n",
	`[[{"id":1,"method":"tools/call","params":{"name":"a"}}],[[{"id":2,"error":{}}]]]`,
	`{"id":1,"method":"tools/call","params":{"name":"a"}} {"id":2,"method":"tools/call"} x`,
	`{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"p":"/tmp"},"Arguments":{"p":"/etc"}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","argum\u0065nts":{"p":"\ud800\\u0000"},"arguments":[]}}`,
	"{\"id\":1,\"method\":\"tools/call\",\"params\":{\"arguments\": { \"p\" : \"\\ud83d\\ude00\xff\" } ,\"name\":\"a\"}}",
	`{"id":1,"method":"tools/call","params":{"name":"a","argu_ments":null,"arguments":"\u0000"}}`,
	"{\"id\":3,\"id\":\"3\",\"ID\":4,\"result\":{}}",
	// rounds and tasks (Rounds)
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"requestState":"c3Q=","inputResponses":{"k1":{"action":"accept","content":{"x":1}},"k2":{"action":"decline"},"k3":5}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","IO.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","_meta":{},"_META":{"io.modelcontextprotocol/protocolVersion":1}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","requestState":"x","request_state":"y","inputResponses":{"k":{"action":"accept","Action":"decline"}}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","inputResponses":{"k":{"action":"acc\u0000ept"},"k":{}}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":1000}}}`,
	`{"id":2,"method":"tasks/get","params":{"taskId":"t1"}}`,
	`{"id":2,"method":"tasks/get","params":{"taskId":"t1","taskID":"t2"}}`,
	`{"id":2,"method":"tasks/result","params":{"taskId":"t\ud800"}}`,
	`{"id":2,"method":"tasks/update","params":{"taskId":"t1","inputResponses":{"e":{"action":"cancel"}}}}`,
	`{"id":2,"method":"tasks/cancel","params":{"taskId":7}}`,
	`{"id":2,"method":"tasks/cancel","method":"ping","params":{"taskId":"t"}}`,
	`{"method":"notifications/tasks","params":{"taskId":"t1","status":"completed","result":{"content":[],"isError":true}}}`,
	`{"method":"notifications/tasks","params":{"taskId":"t1","status":"failed","error":{"code":-1,"message":"x"}}}`,
	`{"method":"notifications/tasks","params":{"taskId":"t1","status":"input_required","inputRequests":{"a":{"method":"elicitation/create"}}}}`,
	`{"method":"notifications/tasks/status","params":{"taskId":"t1","status":"working","Status":"completed"}}`,
	`{"method":"notifications/cancelled","params":{"requestId":1.0,"reason":"x"}}`,
	`{"method":"notifications/cancelled","params":{"requestId":"1","requestid":1}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s","inputRequests":{"a":{"method":"elicitation/create","params":{}},"b":{"method":"sampling/createMessage"},"c":[]}}}`,
	`{"id":1,"result":{"resultType":"input_required","result_type":"complete"}}`,
	`{"id":1,"result":{"resultType":"comp\u0000lete","content":[]}}`,
	`{"id":1,"result":{"resultType":"task","taskId":"t1","status":"working"}}`,
	`{"id":1,"result":{"task":{"taskId":"t1","status":"working","TaskId":"t2"}}}`,
	`{"id":1,"result":{"task":{"taskId":"t1"},"taskId":"t2"}}`,
	`{"id":1,"result":{"resultType":"complete","taskId":"t1","status":"completed","result":{"isError":true,"is_error":false}}}`,
	`{"id":1,"result":{"resultType":"complete","taskId":"t1","status":"failed","error":{"code":1}}}`,
	`{"id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"protocolversion":"2026-07-28"}}`,
	`{"id":"e1","result":{"action":"accept","content":{"a":1}}}`,
	`{"id":"e1","result":{"action":"accept","act_ion":"decline"}}`,
	`{"id":1,"result":{"inputRequests":{"a":{"method":"x","METHOD":"y"}},"requestState":5}}`,
	`{"id":1,"result":{"inputRequests":{"a":{},"b":{},"a":{"method":"x"}}}}`,
	"{\"id\":1,\"result\":{\"taskId\":\"t\xff\",\"status\":\"working\"}}",
	`[{"id":1,"result":{"resultType":"task","taskId":"a"}},{"id":2,"method":"tasks/get","params":{"taskId":"a"}},{"method":"notifications/tasks","params":{"taskId":"a","status":"completed","result":{}}}]`,
}

func TestDifferential(t *testing.T) {
	var c Classifier
	for _, s := range differentialSeeds {
		checkDifferential(t, &c, []byte(s))
	}
	// Mutations of the seeds: deterministic, so a failure reproduces.
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("{}[]\":,\\ \n\tu0123456789abcdefnmthodisparmeIDMEPAR_-.eE+-trulfskTSR\x00\xff\xc5\xbf")
	inserts := []string{`"method"`, `"id"`, `"params"`, `"name"`, `"tools/call"`, `\u0000`, `\ud800`, `\u017f`, "ſ", `"Method"`, `{"name":"a"}`, `"arguments"`, `"Arguments"`, `\udc00`, `\\`, `1e5`, `-0`, `true`, `null`, `[`, `]`,
		`"taskId"`, `"status"`, `"resultType"`, `"requestState"`, `"inputRequests"`, `"inputResponses"`, `"action"`,
		`"task"`, `"_meta"`, `"result"`, `"error"`, `"isError"`, `"requestId"`, `"protocolVersion"`, `"TaskId"`, `"result_type"`,
		`{"a":{"method":"m"}}`, `{"k":{"action":"accept"}}`, `"tasks/get"`, `"notifications/tasks"`, `"notifications/cancelled"`}
	kinds := map[Kind]int{}
	for range 50000 {
		b := []byte(differentialSeeds[r.IntN(len(differentialSeeds))])
		for range 1 + r.IntN(4) {
			if len(b) == 0 {
				break
			}
			p := r.IntN(len(b) + 1)
			switch r.IntN(4) {
			case 0: // delete
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			case 1: // replace
				if p < len(b) {
					b[p] = alphabet[r.IntN(len(alphabet))]
				}
			case 2: // insert a byte
				b = append(b[:p], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[p:]...)...)
			case 3: // insert a token
				b = append(b[:p], append([]byte(inserts[r.IntN(len(inserts))]), b[p:]...)...)
			}
		}
		kinds[checkDifferential(t, &c, b)]++
	}
	t.Logf("mutations by kind: %v", kinds)
	if kinds[Single] < 1000 || kinds[NotJSON] < 1000 {
		t.Errorf("mutations by kind = %v; want at least 1000 single and 1000 not-json", kinds)
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range differentialSeeds {
		f.Add([]byte(s))
	}
	var c Classifier
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDifferential(t, &c, line)
	})
}
