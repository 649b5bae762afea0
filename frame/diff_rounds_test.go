package frame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// This file extends the encoding/json reference (diff_test.go) to the
// members read for rounds and tasks (Rounds), re-implementing their rules
// independently on json.Decoder token walks.

// refField tallies one member as the reference reads it.
type refField struct {
	refCount
	badType, badChars bool
	val               *string // the last exact key's string, else the last variant's
}

func (n *refField) amb() bool  { return n.ambiguous() || n.badType || n.badChars }
func (n *refField) one() bool  { return n.exact == 1 && n.variant == 0 }
func (n *refField) ok() bool   { return n.one() && !n.badType && !n.badChars }
func (n *refField) keep() bool { return n.exact > 0 || n.variant > 0 }

// str reads a string member: wrong type unless a string; chars checks
// U+0000 and U+FFFD.
func (n *refField) str(v json.RawMessage, exact, chars bool) {
	n.add(exact)
	var s *string
	if v[0] == '"' {
		s = new(string)
		if err := json.Unmarshal(v, s); err != nil {
			panic(err)
		}
		if chars && refBad(*s) {
			n.badChars = true
		}
	} else {
		n.badType = true
	}
	if exact || n.exact == 0 {
		n.val = s
	}
}

// obj counts an object member and walks it with fn.
func (n *refField) obj(v json.RawMessage, exact bool, fn func(key string, v json.RawMessage)) {
	n.add(exact)
	if v[0] != '{' {
		n.badType = true
		return
	}
	refMembers(v, fn)
}

type refInput struct {
	key string
	val *string
}

// refInputs tallies one inputRequests or inputResponses member.
type refInputs struct {
	refField
	all    []refInput
	dupKey bool
	values refField // dup within a value, variant, U+0000/U+FFFD
}

func (l *refInputs) read(v json.RawMessage, exact bool, entry string) {
	l.obj(v, exact, func(key string, v json.RawMessage) {
		// A repeated key is an ambiguity when one of its occurrences is
		// among the first MaxInputs (doc.go).
		for k, in := range l.all {
			if in.key == key && k < MaxInputs {
				l.dupKey = true
			}
		}
		var e refField
		if v[0] == '{' {
			refMembers(v, func(k string, v json.RawMessage) {
				if f, exact := refMatch(k, entry); f != "" {
					e.add(exact)
					var s *string
					if v[0] == '"' {
						s = new(string)
						json.Unmarshal(v, s)
						if refBad(*s) {
							e.badChars = true
						}
					}
					if exact || e.exact == 0 {
						e.val = s
					}
				}
			})
		}
		if e.exact > 1 {
			l.values.exact = 2
		}
		l.values.variant += e.variant
		l.values.badChars = l.values.badChars || e.badChars
		l.all = append(l.all, refInput{key, e.val})
	})
}

func (l *refInputs) clear() bool {
	return l.ok() && !l.dupKey && !l.values.ambiguous() && !l.values.badChars
}

// refRoundsMsg is the reference reading of a message's Rounds, comparable.
type refRoundsMsg struct {
	Op                                                  Op
	Revision, TaskID, Status, RequestState              string
	InputResponses, InputRequests                       string
	TaskAugmented                                       bool
	CancelID                                            string
	ResultType, ResultTaskID, ResultStatus, ResultState string
	ResultTaskNested                                    bool
	ProtocolVersion, ResultAction                       string
	TaskResultIsError, TaskHasError                     bool
	// Malformed is the part of Malformed that these members decide:
	// for recorded requests other than tools/call, the whole of it.
	Malformed bool
}

var refRecorded = []string{"tools/call", "tasks/get", "tasks/result", "tasks/update", "tasks/cancel",
	"notifications/tasks", "notifications/tasks/status", "notifications/cancelled"}

var refOps = map[string]Op{"tools/call": OpToolsCall, "initialize": OpInitialize, "tasks/get": OpTasksGet,
	"tasks/result": OpTasksResult, "tasks/update": OpTasksUpdate, "tasks/cancel": OpTasksCancel,
	"notifications/tasks": OpTasksNotify, "notifications/tasks/status": OpTaskStatus,
	"notifications/cancelled": OpCancelled, "elicitation/create": OpElicit,
	"sampling/createMessage": OpSample, "roots/list": OpRoots}

func refOpt(n *refField, given bool) string {
	if !given || n.val == nil {
		return "-"
	}
	return fmt.Sprintf("%q", *n.val)
}

func refList(l *refInputs, given bool) string {
	if !given {
		return "-"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", len(l.all))
	for k, in := range l.all {
		if k == MaxInputs {
			break
		}
		fmt.Fprintf(&b, "%q=%s,", in.key, fmtp(in.val))
	}
	return b.String()
}

// refRounds reads raw, a message object, for Rounds. r.Malformed is
// whether a recorded request (method, id, params and the members here) or
// a response (the members here) is malformed.
func refRounds(raw []byte) (r refRoundsMsg, recorded, response bool) {
	var (
		method, id, params, result, errf                              refField
		meta, revision, pTaskID, pStatus, pState, task, reqID         refField
		pResult, pError, innerIsError                                 refField
		resultType, rTaskID, rTask, tTaskID, tStatus, rStatus, rState refField
		protoVer, rResult, rError, rAction                            refField
		inResp, inReq                                                 refInputs
		methodBad, innerTrue                                          bool
		reqIDKey                                                      string
	)
	inner := func(key string, v json.RawMessage) {
		if f, exact := refMatch(key, "isError"); f != "" {
			innerIsError.add(exact)
			innerTrue = innerTrue || string(v) == "true"
		}
	}
	refMembers(raw, func(key string, v json.RawMessage) {
		f, exact := refMatch(key, "method", "id", "params", "result", "error")
		switch f {
		case "method":
			method.str(v, exact, true)
			if v[0] != '"' {
				methodBad = true
				return
			}
			var s string
			json.Unmarshal(v, &s)
			cut, _, _ := strings.Cut(s, "\x00")
			cut = strings.ReplaceAll(cut, "\uFFFD", "")
			for _, m := range refRecorded {
				if cut == m || s == m {
					recorded = true
				}
			}
		case "id":
			id.add(exact)
			switch v[0] {
			case '{', '[', 't', 'f':
				id.badType = true
			}
		case "params":
			params.obj(v, exact, func(key string, v json.RawMessage) {
				f, exact := refMatch(key, "_meta", "taskId", "status", "requestState", "inputResponses",
					"inputRequests", "task", "requestId", "result", "error")
				switch f {
				case "_meta":
					meta.obj(v, exact, func(key string, v json.RawMessage) {
						if f, exact := refMatch(key, revisionKey); f != "" {
							revision.str(v, exact, false)
						}
					})
				case "taskId":
					pTaskID.str(v, exact, true)
				case "status":
					pStatus.str(v, exact, true)
				case "requestState":
					pState.str(v, exact, true)
				case "inputResponses":
					inResp.read(v, exact, "action")
				case "inputRequests":
					inReq.read(v, exact, "method")
				case "task":
					task.add(exact)
				case "requestId":
					reqID.add(exact)
					switch v[0] {
					case '{', '[', 't', 'f':
						reqID.badType = true
					case '"':
						var s string
						json.Unmarshal(v, &s)
						if exact || reqID.exact == 0 {
							reqIDKey = "s" + s
						}
					case 'n':
						if exact || reqID.exact == 0 {
							reqIDKey = "N"
						}
					default:
						if exact || reqID.exact == 0 {
							reqIDKey = refNumberKey(string(v))
						}
					}
				case "result":
					pResult.obj(v, exact, inner)
				case "error":
					pError.add(exact)
				}
			})
		case "result":
			result.add(exact)
			if v[0] != '{' {
				return
			}
			refMembers(v, func(key string, v json.RawMessage) {
				f, exact := refMatch(key, "resultType", "taskId", "task", "status", "requestState",
					"inputRequests", "protocolVersion", "result", "error", "action")
				switch f {
				case "resultType":
					resultType.str(v, exact, true)
				case "taskId":
					rTaskID.str(v, exact, true)
				case "task":
					rTask.obj(v, exact, func(key string, v json.RawMessage) {
						switch f, exact := refMatch(key, "taskId", "status"); f {
						case "taskId":
							tTaskID.str(v, exact, true)
						case "status":
							tStatus.str(v, exact, true)
						}
					})
				case "status":
					rStatus.str(v, exact, true)
				case "requestState":
					rState.str(v, exact, true)
				case "inputRequests":
					inReq.read(v, exact, "method")
				case "protocolVersion":
					protoVer.str(v, exact, false)
				case "result":
					rResult.obj(v, exact, inner)
				case "error":
					rError.add(exact)
				case "action":
					rAction.str(v, exact, true)
				}
			})
		case "error":
			errf.add(exact)
		}
	})
	if method.keep() && method.val != nil {
		r.Op = refOps[*method.val]
	}
	hasID := id.keep()
	response = !method.keep() && hasID && (result.keep() || errf.keep())
	p := params.one() && !params.badType
	res := result.one()
	r.Revision = refOpt(&revision, p && meta.ok() && revision.ok())
	r.TaskID = refOpt(&pTaskID, p && pTaskID.ok())
	r.Status = refOpt(&pStatus, p && pStatus.ok())
	r.RequestState = refOpt(&pState, p && pState.ok())
	r.InputResponses = refList(&inResp, p && inResp.keep() && inResp.clear())
	r.TaskAugmented = p && task.one()
	r.CancelID = "-"
	if p && reqID.ok() {
		r.CancelID = reqIDKey
	}
	r.TaskResultIsError = p && pResult.ok() && innerIsError.one() && innerTrue ||
		res && rResult.ok() && innerIsError.one() && innerTrue
	r.TaskHasError = p && pError.one() || res && rError.one()
	r.ResultType = refOpt(&resultType, res && resultType.ok())
	r.ResultTaskID, r.ResultStatus = "-", "-"
	switch {
	case res && rTaskID.ok() && !rTask.keep():
		r.ResultTaskID = refOpt(&rTaskID, true)
	case res && rTask.ok() && tTaskID.ok() && !rTaskID.keep() && !rStatus.keep():
		r.ResultTaskID, r.ResultTaskNested = refOpt(&tTaskID, true), true
	}
	switch {
	case res && rStatus.ok() && !rTask.keep():
		r.ResultStatus = refOpt(&rStatus, true)
	case res && rTask.ok() && tStatus.ok() && !rStatus.keep() && !rTaskID.keep():
		r.ResultStatus = refOpt(&tStatus, true)
	}
	r.ResultState = refOpt(&rState, res && rState.ok())
	r.ProtocolVersion = refOpt(&protoVer, res && protoVer.ok())
	r.ResultAction = refOpt(&rAction, res && rAction.ok())
	r.InputRequests = refList(&inReq, inReq.keep() && (p || !params.keep()) && (res || !result.keep()) && inReq.clear())

	paramsBad := meta.amb() || revision.amb() || pTaskID.amb() || pStatus.amb() || pState.amb() ||
		inResp.amb() || inResp.dupKey || inResp.values.ambiguous() || inResp.values.badChars ||
		task.ambiguous() || reqID.amb() || pResult.amb() || pError.ambiguous() ||
		inReq.amb() || inReq.dupKey || inReq.values.ambiguous() || inReq.values.badChars || innerIsError.ambiguous()
	resultBad := resultType.amb() || rTaskID.amb() || rTask.amb() || tTaskID.amb() || tStatus.amb() ||
		rStatus.amb() || rState.amb() || inReq.amb() || inReq.dupKey || inReq.values.ambiguous() || inReq.values.badChars ||
		protoVer.amb() || rResult.amb() || innerIsError.ambiguous() || rError.ambiguous() || rAction.amb() ||
		rTaskID.keep() && rTask.keep() || rStatus.keep() && rTask.keep()
	switch {
	case response:
		r.Malformed = resultBad
	case recorded:
		r.Malformed = paramsBad || method.amb() || methodBad || id.amb() || params.amb()
	}
	return r, recorded, response
}

// gotRounds is the Classifier's reading in the reference's shape.
func gotRounds(m *Message) refRoundsMsg {
	o := func(v []byte, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%q", v)
	}
	l := func(in []Input, n int, ok bool) string {
		if !ok {
			return "-"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d:", n)
		for _, x := range in {
			fmt.Fprintf(&b, "%q=%s,", x.Key, fmtp(strp(x.Value, x.HasValue)))
		}
		return b.String()
	}
	r := refRoundsMsg{
		Op:                m.Op,
		Revision:          o(m.Revision, m.HasRevision),
		TaskID:            o(m.TaskID, m.HasTaskID),
		Status:            o(m.Status, m.HasStatus),
		RequestState:      o(m.RequestState, m.HasRequestState),
		InputResponses:    l(m.InputResponses, m.InputResponsesN, m.HasInputResponses),
		InputRequests:     l(m.InputRequests, m.InputRequestsN, m.HasInputRequests),
		TaskAugmented:     m.TaskAugmented,
		CancelID:          "-",
		ResultType:        o(m.ResultType, m.HasResultType),
		ResultTaskID:      o(m.ResultTaskID, m.HasResultTaskID),
		ResultTaskNested:  m.ResultTaskNested,
		ResultStatus:      o(m.ResultStatus, m.HasResultStatus),
		ResultState:       o(m.ResultState, m.HasResultState),
		ProtocolVersion:   o(m.ProtocolVersion, m.HasProtocolVersion),
		ResultAction:      o(m.ResultAction, m.HasResultAction),
		TaskResultIsError: m.TaskResultIsError,
		TaskHasError:      m.TaskHasError,
	}
	if m.HasCancelID {
		r.CancelID = string(m.CancelID.Key)
	}
	return r
}

// diffRounds compares the Rounds of the frame's messages with the
// reference's; "" if they agree.
func diffRounds(f *Frame, line []byte) string {
	if f.Kind != Single && f.Kind != Batch || f.Anomaly != "" {
		return ""
	}
	objs := refObjectsOf(f, line)
	for i, obj := range objs {
		if obj == nil {
			continue
		}
		m := &f.Msgs[i]
		if m.Rounds == nil {
			return fmt.Sprintf("msg %d: Rounds is nil", i)
		}
		want, _, _ := refRounds(obj)
		got := gotRounds(m)
		// Malformed is compared whole, by diff (refMessage).
		want.Malformed = false
		if got != want {
			return fmt.Sprintf("msg %d: rounds\n\t%+v (malformed %q)\nreference\n\t%+v", i, got, m.Malformed, want)
		}
	}
	return ""
}

// refObjectsOf returns, for each of f.Msgs, its object's bytes (nil for a
// non-object element).
func refObjectsOf(f *Frame, line []byte) []json.RawMessage {
	var objs []json.RawMessage
	if f.Kind == Batch {
		json.Unmarshal(line, &objs)
		if len(objs) > len(f.Msgs) {
			objs = objs[:len(f.Msgs)]
		}
	} else if len(f.Msgs) == 1 {
		objs = []json.RawMessage{bytes.TrimSpace(line)}
	}
	for i, o := range objs {
		if len(o) == 0 || o[0] != '{' {
			objs[i] = nil
		}
	}
	return objs
}

// roundsRead is what one decoder reads of the Rounds string members.
type roundsRead struct {
	revision, taskID, status, state, resultType, resultTaskID, resultStatus, resultState, protocol *string
}

func (r roundsRead) String() string {
	return fmt.Sprintf("revision %s taskId %s status %s requestState %s resultType %s result.taskId %s result.status %s result.requestState %s protocolVersion %s",
		fmtp(r.revision), fmtp(r.taskID), fmtp(r.status), fmtp(r.state), fmtp(r.resultType), fmtp(r.resultTaskID), fmtp(r.resultStatus), fmtp(r.resultState), fmtp(r.protocol))
}

// readRoundsGo decodes obj as a Go peer does (case-insensitive names, the
// last winning); ok is false if decoding fails.
func readRoundsGo(obj []byte) (r roundsRead, ok bool) {
	type task struct {
		TaskID *string `json:"taskId"`
		Status *string `json:"status"`
	}
	var m struct {
		Params *struct {
			Meta         map[string]json.RawMessage `json:"_meta"`
			TaskID       *string                    `json:"taskId"`
			Status       *string                    `json:"status"`
			RequestState *string                    `json:"requestState"`
		} `json:"params"`
		Result *struct {
			ResultType      *string `json:"resultType"`
			TaskID          *string `json:"taskId"`
			Task            *task   `json:"task"`
			Status          *string `json:"status"`
			RequestState    *string `json:"requestState"`
			ProtocolVersion *string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(obj, &m) != nil {
		return r, false
	}
	if p := m.Params; p != nil {
		if v, found := p.Meta[revisionKey]; found {
			if json.Unmarshal(v, &r.revision) != nil {
				return r, false
			}
		}
		r.taskID, r.status, r.state = p.TaskID, p.Status, p.RequestState
	}
	if res := m.Result; res != nil {
		r.resultType, r.resultTaskID, r.resultStatus, r.resultState, r.protocol = res.ResultType, res.TaskID, res.Status, res.RequestState, res.ProtocolVersion
		if res.Task != nil {
			r.resultTaskID, r.resultStatus = res.Task.TaskID, res.Task.Status
		}
	}
	return r, true
}

// readRoundsExact decodes obj with exact names, the last duplicate
// winning (JSON.parse, Python's json), or the first (first-wins decoders).
func readRoundsExact(obj []byte, first bool) (r roundsRead, ok bool) {
	get := func(raw []byte, key string) []byte {
		var v []byte
		if len(raw) == 0 || raw[0] != '{' {
			return nil
		}
		refMembers(raw, func(k string, val json.RawMessage) {
			if k == key && (v == nil || !first) {
				v = val
			}
		})
		return v
	}
	str := func(raw []byte) *string {
		if raw == nil {
			return nil
		}
		var s *string
		if json.Unmarshal(raw, &s) != nil {
			ok = false
		}
		return s
	}
	ok = true
	if p := get(obj, "params"); p != nil {
		r.revision = str(get(get(p, "_meta"), revisionKey))
		r.taskID, r.status, r.state = str(get(p, "taskId")), str(get(p, "status")), str(get(p, "requestState"))
	}
	if res := get(obj, "result"); res != nil {
		r.resultType, r.resultTaskID, r.resultStatus = str(get(res, "resultType")), str(get(res, "taskId")), str(get(res, "status"))
		r.resultState, r.protocol = str(get(res, "requestState")), str(get(res, "protocolVersion"))
		if t := get(res, "task"); t != nil {
			r.resultTaskID, r.resultStatus = str(get(t, "taskId")), str(get(t, "status"))
		}
	}
	return r, ok
}

// checkRoundsPremise checks the rules against real readings: for a
// message the relay records that Classify finds not Malformed, Go's
// encoding/json, a last-wins and a first-wins exact decoder read the
// same Rounds strings, and the ones Classify gives.
func checkRoundsPremise(f *Frame, line []byte) string {
	if f.Kind != Single && f.Kind != Batch || f.Anomaly != "" {
		return ""
	}
	for i, obj := range refObjectsOf(f, line) {
		m := &f.Msgs[i]
		if obj == nil || m.Malformed != "" || !(m.Type == Response || m.IsToolCall || m.Op != OpOther && m.Op < opRecordedEnd) {
			continue
		}
		given := roundsRead{
			revision: strp(m.Revision, m.HasRevision), taskID: strp(m.TaskID, m.HasTaskID),
			status: strp(m.Status, m.HasStatus), state: strp(m.RequestState, m.HasRequestState),
			resultType: strp(m.ResultType, m.HasResultType), resultTaskID: strp(m.ResultTaskID, m.HasResultTaskID),
			resultStatus: strp(m.ResultStatus, m.HasResultStatus), resultState: strp(m.ResultState, m.HasResultState),
			protocol: strp(m.ProtocolVersion, m.HasProtocolVersion),
		}
		for _, rd := range []struct {
			name string
			read func() (roundsRead, bool)
		}{
			{"Go", func() (roundsRead, bool) { return readRoundsGo(obj) }},
			{"JSON.parse", func() (roundsRead, bool) { return readRoundsExact(obj, false) }},
			{"first-wins", func() (roundsRead, bool) { return readRoundsExact(obj, true) }},
		} {
			got, ok := rd.read()
			if ok && got.String() != given.String() {
				return fmt.Sprintf("msg %d: not Malformed, Classify gives %v, yet %s reads %v", i, given, rd.name, got)
			}
		}
	}
	return ""
}
