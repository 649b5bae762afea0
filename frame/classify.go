package frame

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is what a line holds as a whole.
type Kind uint8

const (
	_       Kind = iota
	Empty        // nothing but JSON white space (" \t\r\n"), or nothing
	NotJSON      // not exactly one JSON value; Frame.Anomaly says why
	Single       // one JSON value that is not an array
	Batch        // one JSON array: a JSON-RPC batch
)

var kindNames = [...]string{"Kind(0)", "empty", "not-json", "single", "batch"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// MsgType is the JSON-RPC role of one message.
type MsgType uint8

const (
	_            MsgType = iota
	Request              // has a method and an id
	Notification         // has a method and no id
	Response             // no method; an id and a result or an error
	Invalid              // JSON, but none of the above
)

var msgTypeNames = [...]string{"MsgType(0)", "request", "notification", "response", "invalid"}

func (t MsgType) String() string {
	if int(t) < len(msgTypeNames) {
		return msgTypeNames[t]
	}
	return "MsgType(" + strconv.Itoa(int(t)) + ")"
}

// Anomaly reasons (Frame.Anomaly). They are stable: the relay writes them
// into audit records.
const (
	AnomalyInvalid   = "not one JSON value: invalid JSON"
	AnomalyTruncated = "not one JSON value: truncated value"
	AnomalyTail      = "not one JSON value: unexpected tail"
	AnomalyBOM       = "not one JSON value: byte order mark"
	AnomalyDepth     = "not one JSON value: nested deeper than 10000"
	// AnomalyBatch is set on a Batch with more than MaxBatch elements. The
	// frame is valid JSON, but Msgs describes only its first MaxBatch
	// elements, so it must be treated as an anomaly, not as calls.
	AnomalyBatch = "batch: more than 4096 elements"
	// AnomalyCR is set on a line that a reader ending lines at a bare CR
	// (readings.go) reads as two or more lines with content: the line is
	// one thing to some peers and several to others.
	AnomalyCR = "ambiguous line: a bare CR splits it for readers that end lines there"
	// AnomalyNested is set on a Batch with an array among its elements
	// that holds a message: not a valid batch, but a handler that takes
	// arrays recursively finds the message (Frame.Hidden).
	AnomalyNested = "batch: an array inside the batch holds a message"
)

// MaxBatch is the largest batch described element by element. It bounds the
// memory a Classifier holds (about 200 bytes per Message) whatever the line.
const MaxBatch = 4096

// Frame is the classification of one line. Fill it with Classifier.Classify.
type Frame struct {
	Kind Kind
	// Anomaly is a short constant reason (one of the Anomaly constants) for
	// a NotJSON frame or an oversized Batch; "" otherwise. A frame with a
	// non-empty Anomaly is relayed as an anomaly, never as calls.
	Anomaly string
	// Msgs has, for Single, one entry if the value is an object and none
	// otherwise; for Batch, one per array element in order (non-objects are
	// Invalid), at most MaxBatch; nil for Empty and NotJSON. It is the
	// Classifier's storage, valid until its next Classify.
	Msgs []Message
	// Hidden has the messages that other readings of the line find and Msgs
	// does not (readings.go): in the pieces a bare CR separates, in the
	// values a stream decoder reads from a line that is not one value, in
	// arrays nested inside a batch. Ordered by Off, each object once, at
	// most MaxBatch. Empty unless Anomaly is set: a line whose readings all
	// agree has nothing hidden. The Classifier's storage, as Msgs.
	Hidden []Message
}

// Message is one JSON-RPC message of a frame. Byte slices alias the line or
// the Classifier's buffers: valid until the next Classify on the same
// Classifier, and only while the line's bytes are unchanged.
//
// Where a member is ambiguous (see Malformed), Method and ID hold what a
// case-sensitive, last-duplicate-wins decoder (JSON.parse, Python's json)
// reads, falling back to a case-variant key when there is no exact one.
type Message struct {
	Type MsgType
	// Op is what Method names, among the methods the relay tracks
	// (OpOther for any other, and for messages without a string method).
	Op Op
	// Off is the offset in the line of the object's '{': the same object
	// found by two readings has one Off.
	Off int
	// Method is the decoded method ("tools\/call" is tools/call), nil if no
	// method is a string.
	Method []byte
	ID     ID
	HasID  bool // an id member (exact or case-variant key) is present
	// IsToolCall is true when any method member — any duplicate, exact or
	// case-variant key — decodes to "tools/call", or would after a decoder
	// cut it at U+0000 or dropped U+FFFD: some peer may execute it, so the
	// relay must record it.
	IsToolCall bool
	// Tool is params.name decoded; HasTool reports it. Set only for tool
	// calls whose params and name are unambiguous and name is a string
	// without U+0000 or U+FFFD.
	Tool []byte
	// Args is params.arguments as it is on the line: the raw JSON value,
	// white space inside it included, aliasing the line. HasArgs reports
	// it. Set only for tool calls whose params and arguments members are
	// unambiguous (one exact key, no case variant), as Tool is; a
	// duplicate or variant key is Malformed. Any JSON type: every decoder
	// agrees on a value's type, so a wrong one is the tool's to reject.
	Args    []byte
	HasTool bool
	HasArgs bool
	// ArgsText is ArgsUnclear when the text of some arguments value is
	// read differently by some decoder (invalid UTF-8 replaced, kept or
	// rejected; an unpaired surrogate escape the same; U+0000, where a C
	// decoder may cut), "" otherwise. It is reported, not Malformed:
	// clients send such text in arguments (a NUL in a message), the
	// tool's name and the call's shape are unaffected, and only a reader
	// of the values (a rule on arguments) is misled by it, so such a
	// reader must refuse what it cannot read alike.
	ArgsText string
	// Malformed is a constant reason why decoders may disagree about a
	// message the relay records (duplicate key, case-variant key, wrong
	// type, ...), "" if none. It is only computed for tool calls,
	// responses, and the tasks and cancellation methods Op names (doc.go
	// "Parser differentials are attacks").
	Malformed string
	IsError   bool // a Response with an error member
	ToolError bool // a Response whose result.isError is true
	// Answers is true for any message with an id and a result or error
	// member, whatever else it holds (a Response, or a Request with a
	// result too): a client whose schema ignores extra members takes it
	// as a response.
	Answers bool
	// AltIDs are the other values of an id member that appears more than
	// once (duplicate or case-variant keys): the first and last exact and
	// the first and last of any spelling, each a value some decoder keeps,
	// other than ID. Nil when the id member appears once.
	AltIDs []ID

	// Rounds holds what the message says about revisions, rounds and
	// tasks; its fields are promoted (m.ResultType). Never nil in a
	// Message that Classify fills: a message without any of those members
	// points at a shared zero Rounds, which must not be written.
	*Rounds
}

// Rounds is what a message says about the revision, multi round-trip
// requests and tasks: members read from params (requests and
// notifications) and result (responses) as doc.go "Rounds and tasks"
// says. Each is given only when the member and every member on its path
// are unambiguous (one exact key, no case variant, the right type, for
// matched strings no U+0000 or U+FFFD); otherwise the message is
// Malformed if it is one the relay records, and the value is not given.
// Strings are decoded. A Rounds is the Classifier's storage, valid as a
// Frame's Messages are.
type Rounds struct {

	// Revision is params._meta["io.modelcontextprotocol/protocolVersion"],
	// the revision a request declares.
	Revision    []byte
	HasRevision bool
	// TaskID is params.taskId: tasks/get, tasks/result, tasks/update,
	// tasks/cancel, notifications/tasks, notifications/tasks/status.
	TaskID    []byte
	HasTaskID bool
	// Status is params.status (notifications/tasks, .../status).
	Status    []byte
	HasStatus bool
	// RequestState is params.requestState, a retry's opaque state.
	RequestState    []byte
	HasRequestState bool
	// InputResponses are the members of params.inputResponses in line
	// order (tools/call retries, tasks/update), Value the "action" of an
	// object value when it is a string. At most MaxInputs are kept;
	// InputResponsesN counts them all. HasInputResponses reports the
	// member (an object).
	InputResponses    []Input
	InputResponsesN   int
	HasInputResponses bool
	// TaskAugmented is true when params.task is present (2025-11-25: the
	// request asks to run as a task).
	TaskAugmented bool
	// CancelID is params.requestId of notifications/cancelled: the id of
	// the request cancelled, read and matched as ID is (its Key, its
	// LooseKeys). HasCancelID reports it.
	CancelID    ID
	HasCancelID bool

	// ResultType is result.resultType (2026-07-28).
	ResultType    []byte
	HasResultType bool
	// ResultTaskID is result.taskId (2026 CreateTaskResult, tasks/get and
	// tasks/cancel results), or result.task.taskId (2025-11-25
	// CreateTaskResult; ResultTaskNested is then true).
	ResultTaskID     []byte
	HasResultTaskID  bool
	ResultTaskNested bool
	// ResultStatus is result.status, or result.task.status.
	ResultStatus    []byte
	HasResultStatus bool
	// ResultState is result.requestState (input_required).
	ResultState    []byte
	HasResultState bool
	// InputRequests are the members of result.inputRequests (and of
	// params.inputRequests in notifications/tasks) in line order, Value
	// the "method" of an object value when it is a string. At most
	// MaxInputs are kept; InputRequestsN counts them all.
	InputRequests    []Input
	InputRequestsN   int
	HasInputRequests bool
	// ProtocolVersion is result.protocolVersion (initialize's answer).
	ProtocolVersion    []byte
	HasProtocolVersion bool
	// ResultAction is result.action: a client's answer to a server's
	// elicitation/create (accept, decline, cancel).
	ResultAction    []byte
	HasResultAction bool
	// TaskResultIsError is true when a task's final result says isError:
	// result.result.isError of a tasks/get answer, params.result.isError
	// of notifications/tasks (2026 completed task). A tasks/result answer
	// (2025-11-25) carries the tool's result itself: ToolError.
	TaskResultIsError bool
	// TaskHasError is true when a task carries a JSON-RPC error:
	// result.error of a tasks/get answer, params.error of
	// notifications/tasks (2026 failed task).
	TaskHasError bool
}

// noRounds is the Rounds of every message without such members.
var noRounds Rounds

// MaxInputs is the largest number of inputRequests or inputResponses
// members a Message lists; the rest are only counted.
const MaxInputs = 32

// Input is one member of an inputRequests or inputResponses object.
type Input struct {
	// Key is the member's decoded key.
	Key []byte
	// Value is the decoded "method" (inputRequests) or "action"
	// (inputResponses) of the member's value when that is an object with
	// that member as a string; HasValue reports it.
	Value    []byte
	HasValue bool
}

// Op identifies the methods the relay tracks, so that it need not compare
// strings per line.
type Op uint8

const (
	OpOther       Op = iota // any other method, or none
	OpToolsCall             // tools/call
	OpTasksGet              // tasks/get
	OpTasksResult           // tasks/result (2025-11-25)
	OpTasksUpdate           // tasks/update (2026 extension)
	OpTasksCancel           // tasks/cancel
	OpTasksNotify           // notifications/tasks (2026 extension)
	OpTaskStatus            // notifications/tasks/status (2025-11-25)
	OpCancelled             // notifications/cancelled
	opRecordedEnd           // the Ops above, but OpInitialize, are recorded
	OpElicit                // elicitation/create
	OpSample                // sampling/createMessage
	OpRoots                 // roots/list
	OpInitialize            // initialize
)

var opNames = [...]string{"other", "tools/call", "tasks/get", "tasks/result",
	"tasks/update", "tasks/cancel", "notifications/tasks", "notifications/tasks/status",
	"notifications/cancelled", "", "elicitation/create", "sampling/createMessage", "roots/list",
	"initialize"}

func (o Op) String() string {
	if int(o) < len(opNames) && o != opRecordedEnd {
		return opNames[o]
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// opOf returns the Op of a decoded method.
func opOf(m []byte) Op {
	switch string(m) {
	case "tools/call":
		return OpToolsCall
	case "initialize":
		return OpInitialize
	case "tasks/get":
		return OpTasksGet
	case "tasks/result":
		return OpTasksResult
	case "tasks/update":
		return OpTasksUpdate
	case "tasks/cancel":
		return OpTasksCancel
	case "notifications/tasks":
		return OpTasksNotify
	case "notifications/tasks/status":
		return OpTaskStatus
	case "notifications/cancelled":
		return OpCancelled
	case "elicitation/create":
		return OpElicit
	case "sampling/createMessage":
		return OpSample
	case "roots/list":
		return OpRoots
	}
	return OpOther
}

// Malformed reasons for tool calls, in the order they are checked.
const (
	malMethodDup     = "method: duplicate key"
	malMethodVariant = "method: case-variant key"
	malMethodType    = "method: not a string"
	malMethodChars   = "method: contains U+0000 or U+FFFD"
	malIDDup         = "id: duplicate key"
	malIDVariant     = "id: case-variant key"
	malIDType        = "id: not a string, number or null"
	malParamsDup     = "params: duplicate key"
	malParamsVariant = "params: case-variant key"
	malParamsType    = "params: not an object"
	malNameDup       = "params.name: duplicate key"
	malNameVariant   = "params.name: case-variant key"
	malNameType      = "params.name: not a string"
	malNameChars     = "params.name: contains U+0000 or U+FFFD"
	malArgsDup       = "params.arguments: duplicate key"
	malArgsVariant   = "params.arguments: case-variant key"
)

// ArgsUnclear is Message.ArgsText for arguments whose text decoders read
// differently.
const ArgsUnclear = "params.arguments: invalid UTF-8, U+0000 or an unpaired surrogate"

// Malformed reasons for responses (after the id reasons above).
const (
	malResultDup      = "result: duplicate key"
	malResultVariant  = "result: case-variant key"
	malErrorDup       = "error: duplicate key"
	malErrorVariant   = "error: case-variant key"
	malResultAndError = "response: both result and error"
	malIsErrorDup     = "result.isError: duplicate key"
	malIsErrorVariant = "result.isError: case-variant key"
)

// retainMax is the largest scratch buffer a Classifier keeps between calls;
// a line that needed more (huge escaped keys or methods) is paid for once.
const retainMax = 1 << 20

// Classifier classifies lines. It is reusable and not safe for concurrent
// use; the zero value is ready. Classify allocates nothing once its buffers
// have grown to the largest frame's needs (which are small: decoded
// strings, one Message per batch element, and one Rounds and a few Inputs
// per message that has such members).
type Classifier struct {
	arena  []byte    // decoded strings and id keys handed out in Frame
	keybuf []byte    // scratch for decoding escaped keys
	msgs   []Message // Frame.Msgs storage
	hidden []Message // Frame.Hidden storage
	ids    []ID      // Message.AltIDs storage
	inputs []Input   // Message.InputRequests, InputResponses storage
	rounds []Rounds  // Message.Rounds storage
	// out is where message appends: msgs for the line as one value,
	// hidden for other readings and nested arrays.
	out *[]Message
	// rep holds, while a message's id member repeats, the values some
	// decoder keeps: the first and last exact key (first-wins decoders,
	// JSON.parse), the first and last of any spelling (Go's encoding/json
	// binds case variants too). Valid only for a message whose id appears
	// more than once, and only as far as its counts say (altIDs); never
	// reset, so that the usual message pays nothing for it.
	rep [4]ID
	// base is the offset in the line of the segment being scanned.
	base int
	// others counts the messages other readings and nested arrays found,
	// kept in hidden or not.
	others int
	// lenient: scanning for other readings, NaN and ±Infinity are numbers
	// (Python's json reads them).
	lenient bool
	st      msgState
	failed  failure
	// stack has one bit per open container in skipValue: 1 for object.
	stack [maxDepth/64 + 1]uint64
}

// NewClassifier returns a ready Classifier; the zero value is as good.
func NewClassifier() *Classifier { return new(Classifier) }

// Classify classifies line, one frame with or without its trailing "\n" or
// "\r\n", into f. Values in f are valid until the next Classify on c; see
// Frame and Message. It never fails: bad input is a NotJSON frame.
func (c *Classifier) Classify(line []byte, f *Frame) {
	if cap(c.arena) > retainMax {
		c.arena = nil
	}
	if cap(c.keybuf) > retainMax {
		c.keybuf = nil
	}
	c.arena = c.arena[:0]
	c.msgs = c.msgs[:0]
	c.hidden = c.hidden[:0]
	c.others = 0
	c.ids = c.ids[:0]
	c.inputs = c.inputs[:0]
	c.rounds = c.rounds[:0]
	c.out, c.base = &c.msgs, 0
	c.failed = failNone
	*f = Frame{}

	b := line
	i := skipWS(b, 0)
	if i == len(b) {
		f.Kind = Empty
		return
	}
	overflow := false
	switch b[i] {
	case '{':
		f.Kind = Single
		i = c.message(b, i, 0)
	case '[':
		f.Kind = Batch
		i, overflow = c.batch(b, i, 0)
	default:
		f.Kind = Single
		i = c.skipValue(b, i, 0)
	}
	switch {
	case i >= 0:
		if i = skipWS(b, i); i < len(b) {
			f.Kind, f.Anomaly = NotJSON, AnomalyTail
		}
	case c.failed == failNone:
	case c.failed == failTruncated:
		f.Kind, f.Anomaly = NotJSON, AnomalyTruncated
	case c.failed == failDepth:
		f.Kind, f.Anomaly = NotJSON, AnomalyDepth
	default:
		f.Kind, f.Anomaly = NotJSON, AnomalyInvalid
		if bytes.HasPrefix(b, bom) {
			f.Anomaly = AnomalyBOM
		}
	}
	if f.Kind != NotJSON {
		if overflow {
			f.Anomaly = AnomalyBatch
		}
		f.Msgs = c.msgs
	}
	c.otherReadings(line, f)
}

var bom = []byte("\xef\xbb\xbf")

// batch scans the array at b[i], with depth containers open around it. As
// the line's batch (c.out is c.msgs) it appends one Message per element to
// Frame.Msgs (non-objects Invalid); in other readings (c.out is c.hidden)
// only its objects' messages. The arrays among its elements are scanned
// the same way, as a handler that takes arrays recursively does, their
// messages going to Frame.Hidden. At most MaxBatch messages are kept in
// either (overflow: the rest was only validated). The recursion is bounded
// by maxDepth.
func (c *Classifier) batch(b []byte, i, depth int) (int, bool) {
	depth++
	if depth > maxDepth {
		return c.fail(failDepth), false
	}
	overflow := false
	i = skipWS(b, i+1)
	if i >= len(b) {
		return c.fail(failTruncated), false
	}
	if b[i] == ']' {
		return i + 1, false
	}
	elements := c.out == &c.msgs
	for {
		switch {
		case len(*c.out) == MaxBatch:
			overflow = true
			i = c.skipValue(b, i, depth)
		case b[i] == '{':
			i = c.message(b, i, depth)
		case b[i] == '[':
			if elements {
				c.msgs = append(c.msgs, Message{Type: Invalid, Off: c.base + i, Rounds: &noRounds})
			}
			prev := c.out
			c.out = &c.hidden
			i, _ = c.batch(b, i, depth)
			c.out = prev
		default:
			if elements {
				c.msgs = append(c.msgs, Message{Type: Invalid, Off: c.base + i, Rounds: &noRounds})
			}
			i = c.skipValue(b, i, depth)
		}
		if i < 0 {
			return i, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return c.fail(failTruncated), false
		}
		switch b[i] {
		case ',':
			if i = skipWS(b, i+1); i >= len(b) {
				return c.fail(failTruncated), false
			}
		case ']':
			return i + 1, overflow
		default:
			return c.fail(failInvalid), false
		}
	}
}

// count tallies the keys seen for one field.
type count struct {
	exact, variant int32
	badType        bool // some value has the wrong JSON type
	badChars       bool // some string value contains U+0000 or U+FFFD
}

func (n *count) add(exact bool) {
	if exact {
		n.exact++
	} else {
		n.variant++
	}
}

func (n *count) any() bool { return n.exact+n.variant > 0 }

// takes reports whether a value under this key (already counted) replaces
// the one kept so far: exact keys always do, last one winning; a variant
// only while no exact key has been seen.
func (n *count) takes(exact bool) bool { return exact || n.exact == 0 }

// reason returns the first ambiguity of a field given its reasons.
func (n *count) reason(dup, variant, typ, chars string) string {
	switch {
	case n.exact > 1:
		return dup
	case n.variant > 0:
		return variant
	case n.badType:
		return typ
	case n.badChars:
		return chars
	}
	return ""
}

// clear reports whether the field is given: one exact key, no variant,
// the right type, no U+0000 or U+FFFD where that is checked.
func (n *count) clear() bool {
	return n.exact == 1 && n.variant == 0 && !n.badType && !n.badChars
}

// merge notes in n, the tally of all values of an inputs object, the
// ambiguities of one value's member e.
func (n *count) merge(e *count) {
	if e.exact > 1 {
		n.exact = 2
	}
	n.variant += e.variant
	n.badType = n.badType || e.badType
	n.badChars = n.badChars || e.badChars
}

// inputList accumulates one inputRequests or inputResponses object.
type inputList struct {
	start, kept, n int
	dupKey         bool  // a key appears twice
	values         count // the members "method"/"action" of its values
}

// msgState accumulates one message object while it is scanned.
// The part for Rounds (roundsState) is zeroed only when the message has
// a member read for Rounds, so that other messages do not pay for it.
type msgState struct {
	coreState
	roundsState
}

// coreState is the part of msgState every message uses.
type coreState struct {
	method, id, params, name, args, result, errorf, isError count
	// meta is params._meta, which most calls carry (progressToken)
	// without a member read for Rounds.
	meta count

	methodVal  []byte
	toolCall   bool
	recorded   bool // some method member names a method the relay records
	rounds     bool // some member read for Rounds is present
	idVal      ID
	nameVal    []byte
	nameString bool // the kept name value is a string
	argsVal    []byte
	isErrTrue  bool
}

// roundsState is the part of msgState for Rounds; valid while
// coreState.rounds is set.
type roundsState struct {
	// params, params._meta
	revision, pTaskID, pStatus, pState, inResp, task, reqID, pResult, pError count
	// result, result.task; inReq is params' or result's inputRequests,
	// innerIsError the isError of params.result or result.result.
	resultType, rTaskID, rTask, tTaskID, tStatus, rStatus, rState, inReq, protoVer, rResult, rError, rAction, innerIsError count
	// entry is the member of the inputs value being scanned.
	entry count

	revisionVal, pTaskIDVal, pStatusVal, pStateVal []byte
	reqIDVal                                       ID
	resultTypeVal, rTaskIDVal, tTaskIDVal          []byte
	rStatusVal, tStatusVal, rStateVal, protoVerVal []byte
	rActionVal                                     []byte
	innerErrTrue                                   bool
	entryVal                                       []byte
	resp, req                                      inputList
}

// message scans the object at b[i] (depth containers already open) and
// appends its Message to c.msgs.
func (c *Classifier) message(b []byte, i, depth int) int {
	st := &c.st
	st.coreState = coreState{}
	start := i
	inputs := len(c.inputs)
	i = c.object(b, i, depth, matchTop)
	if i < 0 {
		return i
	}
	// Filled in place: a Message is a few hundred bytes, copied once less.
	*c.out = append(grow(*c.out), Message{})
	m := &(*c.out)[len(*c.out)-1]
	st.finish(m)
	m.Rounds = &noRounds
	rounds := len(c.rounds)
	if st.rounds {
		c.rounds = append(grow(c.rounds), Rounds{})
		m.Rounds = &c.rounds[len(c.rounds)-1]
		st.finishRounds(m.Rounds, c.inputs)
	}
	if c.out == &c.hidden {
		// Other readings keep only what the relay records, so that no
		// run of other objects can crowd a call out of MaxBatch.
		c.others++
		if !m.IsToolCall && !m.Answers {
			c.hidden = c.hidden[:len(c.hidden)-1]
			c.inputs = c.inputs[:inputs]
			c.rounds = c.rounds[:rounds]
			return i
		}
	}
	m.Off = c.base + start
	if n := st.id.exact + st.id.variant; n > 1 {
		m.AltIDs = c.altIDs(&m.ID)
	}
	return i
}

// altIDs stores the values of a repeated id member other than primary in
// c.ids and returns them.
func (c *Classifier) altIDs(primary *ID) []ID {
	k := len(c.ids)
	n := &c.st.id
	var kept [4]*ID
	if n.exact > 0 {
		kept[0], kept[1] = &c.rep[repFirstExact], &c.rep[repLastExact]
		if n.exact == 1 {
			kept[1] = kept[0]
		}
	}
	kept[2], kept[3] = &c.rep[repFirstAny], &c.rep[repLastAny]
	for _, id := range kept {
		if id == nil || sameID(id, primary) {
			continue
		}
		dup := false
		for j := k; j < len(c.ids); j++ {
			dup = dup || sameID(id, &c.ids[j])
		}
		if !dup {
			c.ids = append(c.ids, *id)
		}
	}
	return c.ids[k:len(c.ids):len(c.ids)]
}

// Indices of Classifier.rep.
const (
	repFirstExact = iota
	repLastExact
	repFirstAny
	repLastAny
)

// repeatID notes id, the value of an id member that is not the message's
// first (n members seen before it, prevExact of them exact), in c.rep.
func (c *Classifier) repeatID(n, prevExact int, exact bool, id *ID) {
	if n == 1 {
		// The second: the first is still the kept value.
		c.rep[repFirstAny] = c.st.idVal
		if prevExact == 1 {
			c.rep[repFirstExact] = c.st.idVal
		}
	}
	if exact && prevExact == 0 {
		c.rep[repFirstExact] = *id
	}
	c.rep[repLastAny] = *id
	if exact {
		c.rep[repLastExact] = *id
	}
}

// sameID reports whether two ids are the same value (IDInvalid ones by
// their bytes).
func sameID(a, b *ID) bool {
	if a.Type != b.Type {
		return false
	}
	if a.Type == IDInvalid {
		return bytes.Equal(a.Raw, b.Raw)
	}
	return bytes.Equal(a.Key, b.Key)
}

// object scans the object at b[i], handing each member whose key match
// recognises to c.member. The recursion is bounded: members are only
// descended into for params and result, two levels below a message.
func (c *Classifier) object(b []byte, i, depth int, match func([]byte) (field, bool)) int {
	depth++
	if depth > maxDepth {
		return c.fail(failDepth)
	}
	i = skipWS(b, i+1)
	if i >= len(b) {
		return c.fail(failTruncated)
	}
	if b[i] == '}' {
		return i + 1
	}
	for {
		if b[i] != '"' {
			return c.fail(failInvalid)
		}
		start := i
		var fl uint8
		if i, fl = c.scanString(b, i); i < 0 {
			return i
		}
		key := b[start+1 : i-1]
		if fl&strEscaped != 0 {
			c.keybuf = appendUnquote(c.keybuf[:0], key)
			key = c.keybuf
		}
		f, exact := match(key)
		if i = c.colon(b, i); i < 0 {
			return i
		}
		if f == fNone {
			i = c.skipValue(b, i, depth)
		} else {
			i = c.member(b, i, depth, f, exact)
		}
		if i < 0 {
			return i
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return c.fail(failTruncated)
		}
		switch b[i] {
		case ',':
			if i = skipWS(b, i+1); i >= len(b) {
				return c.fail(failTruncated)
			}
		case '}':
			return i + 1
		default:
			return c.fail(failInvalid)
		}
	}
}

// member scans the value at b[i] of a recognised member into c.st.
func (c *Classifier) member(b []byte, i, depth int, f field, exact bool) int {
	st := &c.st
	if f > fMeta && !st.rounds {
		st.rounds = true
		st.roundsState = roundsState{}
	}
	switch f {
	case fMethod:
		return c.methodMember(b, i, depth, exact)

	case fID:
		return c.idMember(b, i, depth, exact)

	case fParams:
		st.params.add(exact)
		if b[i] != '{' {
			st.params.badType = true
			return c.skipValue(b, i, depth)
		}
		return c.object(b, i, depth, matchParams)

	case fName:
		return c.nameMember(b, i, depth, exact)

	case fArguments:
		return c.argsMember(b, i, depth, exact)

	case fResult:
		st.result.add(exact)
		if b[i] != '{' {
			return c.skipValue(b, i, depth)
		}
		return c.object(b, i, depth, matchResult)

	case fError:
		st.errorf.add(exact)
		return c.skipValue(b, i, depth)

	case fIsError:
		return c.trueMember(b, i, depth, exact, &st.isError, &st.isErrTrue)
	case fInnerIsError:
		return c.trueMember(b, i, depth, exact, &st.innerIsError, &st.innerErrTrue)

	case fMeta:
		return c.objMember(b, i, depth, exact, &st.meta, matchMeta)
	case fRevision:
		return c.strMember(b, i, depth, exact, &st.revision, &st.revisionVal, false)
	case fPTaskID:
		return c.strMember(b, i, depth, exact, &st.pTaskID, &st.pTaskIDVal, true)
	case fPStatus:
		return c.strMember(b, i, depth, exact, &st.pStatus, &st.pStatusVal, true)
	case fPState:
		return c.strMember(b, i, depth, exact, &st.pState, &st.pStateVal, true)
	case fInResp:
		return c.inputsMember(b, i, depth, exact, &st.inResp, &st.resp, matchResponseEntry)
	case fPInReq:
		return c.inputsMember(b, i, depth, exact, &st.inReq, &st.req, matchRequestEntry)
	case fTask:
		st.task.add(exact)
		return c.skipValue(b, i, depth)
	case fReqID:
		st.reqID.add(exact)
		var bad bool
		end := c.readID(b, i, depth, &st.reqIDVal, &bad)
		st.reqID.badType = st.reqID.badType || bad
		return end
	case fPResult:
		return c.objMember(b, i, depth, exact, &st.pResult, matchInner)
	case fPError:
		st.pError.add(exact)
		return c.skipValue(b, i, depth)

	case fResultType:
		return c.strMember(b, i, depth, exact, &st.resultType, &st.resultTypeVal, true)
	case fRTaskID:
		return c.strMember(b, i, depth, exact, &st.rTaskID, &st.rTaskIDVal, true)
	case fRTask:
		return c.objMember(b, i, depth, exact, &st.rTask, matchTask)
	case fTTaskID:
		return c.strMember(b, i, depth, exact, &st.tTaskID, &st.tTaskIDVal, true)
	case fTStatus:
		return c.strMember(b, i, depth, exact, &st.tStatus, &st.tStatusVal, true)
	case fRStatus:
		return c.strMember(b, i, depth, exact, &st.rStatus, &st.rStatusVal, true)
	case fRState:
		return c.strMember(b, i, depth, exact, &st.rState, &st.rStateVal, true)
	case fRInReq:
		return c.inputsMember(b, i, depth, exact, &st.inReq, &st.req, matchRequestEntry)
	case fProtoVer:
		return c.strMember(b, i, depth, exact, &st.protoVer, &st.protoVerVal, false)
	case fRResult:
		return c.objMember(b, i, depth, exact, &st.rResult, matchInner)
	case fRError:
		st.rError.add(exact)
		return c.skipValue(b, i, depth)
	case fRAction:
		return c.strMember(b, i, depth, exact, &st.rAction, &st.rActionVal, true)

	case fEntryMethod, fEntryAction:
		// A value that is not a string is no method or action: every
		// reader agrees on that, so it is not an ambiguity.
		st.entry.add(exact)
		if b[i] != '"' {
			if st.entry.takes(exact) {
				st.entryVal = nil
			}
			return c.skipValue(b, i, depth)
		}
		end, fl := c.scanString(b, i)
		if end < 0 {
			return end
		}
		v := c.decode(b[i+1:end-1], fl)
		if hasBadChars(v) {
			st.entry.badChars = true
		}
		if st.entry.takes(exact) {
			st.entryVal = v
		}
		return end
	}
	return c.skipValue(b, i, depth)
}

// trueMember scans a boolean flag member (isError): *v is set when some
// value is true.
func (c *Classifier) trueMember(b []byte, i, depth int, exact bool, n *count, v *bool) int {
	n.add(exact)
	if b[i] == 't' {
		end := c.scanLiteral(b, i, "true")
		if end >= 0 {
			*v = true
		}
		return end
	}
	return c.skipValue(b, i, depth)
}

// objMember scans a member whose value must be an object, descending into
// it with match.
func (c *Classifier) objMember(b []byte, i, depth int, exact bool, n *count, match func([]byte) (field, bool)) int {
	n.add(exact)
	if b[i] != '{' {
		n.badType = true
		return c.skipValue(b, i, depth)
	}
	return c.object(b, i, depth, match)
}

// strMember scans a member whose value must be a string into *v (decoded;
// the last exact key's, else the last variant's). chars: the value is
// matched, so U+0000 and U+FFFD in it are ambiguities.
func (c *Classifier) strMember(b []byte, i, depth int, exact bool, n *count, v *[]byte, chars bool) int {
	n.add(exact)
	if b[i] != '"' {
		n.badType = true
		if n.takes(exact) {
			*v = nil
		}
		return c.skipValue(b, i, depth)
	}
	end, fl := c.scanString(b, i)
	if end < 0 {
		return end
	}
	s := c.decode(b[i+1:end-1], fl)
	if chars && hasBadChars(s) {
		n.badChars = true
	}
	if n.takes(exact) {
		*v = s
	}
	return end
}

// maxFrameInputs bounds the Inputs a Classifier keeps for one line, over
// all its messages; beyond it members are only counted.
const maxFrameInputs = 8 * MaxInputs * 32

// inputsMember scans an inputRequests or inputResponses object: each
// member's key, and in its value (when an object) the member match finds.
// The first MaxInputs members are kept in c.inputs (within
// maxFrameInputs), all are counted; a key repeated among the kept ones, or
// one that repeats a kept one, is an ambiguity (map keys are matched
// exactly by every decoder). Members repeated only beyond the kept ones
// change only the count.
func (c *Classifier) inputsMember(b []byte, i, depth int, exact bool, n *count, l *inputList, match func([]byte) (field, bool)) int {
	n.add(exact)
	if b[i] != '{' {
		n.badType = true
		return c.skipValue(b, i, depth)
	}
	if l.kept == 0 {
		l.start = len(c.inputs)
	}
	st := &c.st
	depth++
	if depth > maxDepth {
		return c.fail(failDepth)
	}
	i = skipWS(b, i+1)
	if i >= len(b) {
		return c.fail(failTruncated)
	}
	if b[i] == '}' {
		return i + 1
	}
	for {
		if b[i] != '"' {
			return c.fail(failInvalid)
		}
		start := i
		var fl uint8
		if i, fl = c.scanString(b, i); i < 0 {
			return i
		}
		key := c.decode(b[start+1:i-1], fl)
		kept := c.inputs[l.start : l.start+l.kept]
		for k := range kept {
			if bytes.Equal(kept[k].Key, key) {
				l.dupKey = true
			}
		}
		if i = c.colon(b, i); i < 0 {
			return i
		}
		st.entry, st.entryVal = count{}, nil
		if b[i] == '{' {
			i = c.object(b, i, depth, match)
		} else {
			i = c.skipValue(b, i, depth)
		}
		if i < 0 {
			return i
		}
		l.values.merge(&st.entry)
		l.n++
		if l.kept < MaxInputs && len(c.inputs) < maxFrameInputs && len(c.inputs) == l.start+l.kept {
			in := Input{Key: key}
			if st.entry.any() && st.entryVal != nil {
				in.Value, in.HasValue = st.entryVal, true
			}
			c.inputs = append(grow(c.inputs), in)
			l.kept++
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return c.fail(failTruncated)
		}
		switch b[i] {
		case ',':
			if i = skipWS(b, i+1); i >= len(b) {
				return c.fail(failTruncated)
			}
		case '}':
			return i + 1
		default:
			return c.fail(failInvalid)
		}
	}
}

// methodMember scans a "method" member's value and notes whether it is
// tools/call, exactly or as a peer that cuts at U+0000 or drops U+FFFD
// would read it (looseEqual).
func (c *Classifier) methodMember(b []byte, i, depth int, exact bool) int {
	st := &c.st
	st.method.add(exact)
	if b[i] != '"' {
		st.method.badType = true
		if st.method.takes(exact) {
			st.methodVal = nil
		}
		return c.skipValue(b, i, depth)
	}
	end, fl := c.scanString(b, i)
	if end < 0 {
		return end
	}
	m := c.decode(b[i+1:end-1], fl)
	if st.method.takes(exact) {
		st.methodVal = m
	}
	if hasBadChars(m) {
		st.method.badChars = true
		for o := OpToolsCall; o < opRecordedEnd; o++ {
			if looseEqual(m, opNames[o]) {
				st.toolCall = st.toolCall || o == OpToolsCall
				st.recorded = true
			}
		}
	} else if o := opOf(m); o != OpOther && o < opRecordedEnd {
		st.toolCall = st.toolCall || o == OpToolsCall
		st.recorded = true
	}
	return end
}

// idMember scans an "id" member's value into its ID and the key its
// answers are matched by, and notes a repeated id (repeatID).
func (c *Classifier) idMember(b []byte, i, depth int, exact bool) int {
	st := &c.st
	st.id.add(exact)
	var id ID
	end := c.readID(b, i, depth, &id, &st.id.badType)
	if end < 0 {
		return end
	}
	if n := st.id.exact + st.id.variant - 1; n > 0 {
		prevExact := int(st.id.exact)
		if exact {
			prevExact--
		}
		c.repeatID(int(n), prevExact, exact, &id)
	}
	if st.id.takes(exact) {
		st.idVal = id
	}
	return end
}

// readID scans an id value at b[i] into *id (its Key in c.arena); *bad is
// set for an object, array or boolean.
func (c *Classifier) readID(b []byte, i, depth int, id *ID, bad *bool) int {
	*id = ID{}
	end := i
	switch b[i] {
	case '"':
		if end, _ = c.scanString(b, i); end < 0 {
			return end
		}
		id.Type = IDString
		k := len(c.arena)
		c.arena = append(c.arena, 's')
		c.arena = appendUnquote(c.arena, b[i+1:end-1])
		id.Key = c.arena[k:len(c.arena):len(c.arena)]
		id.Str = id.Key[1:]
	case 'n':
		if end = c.scanLiteral(b, i, "null"); end < 0 {
			return end
		}
		id.Type = IDNull
		k := len(c.arena)
		c.arena = append(c.arena, 'N')
		id.Key = c.arena[k:len(c.arena):len(c.arena)]
	case '{', '[', 't', 'f':
		if end = c.skipValue(b, i, depth); end < 0 {
			return end
		}
		id.Type = IDInvalid
		*bad = true
	default:
		if end = c.scanNumber(b, i); end < 0 {
			return end
		}
		id.Type = IDNumber
		k := len(c.arena)
		c.arena = appendNumberKey(c.arena, b[i:end])
		id.Key = c.arena[k:len(c.arena):len(c.arena)]
	}
	id.Raw = b[i:end:end]
	return end
}

// nameMember scans a params "name" member's value: the tool's name.
func (c *Classifier) nameMember(b []byte, i, depth int, exact bool) int {
	st := &c.st
	st.name.add(exact)
	if b[i] != '"' {
		st.name.badType = true
		if st.name.takes(exact) {
			st.nameVal, st.nameString = nil, false
		}
		return c.skipValue(b, i, depth)
	}
	end, fl := c.scanString(b, i)
	if end < 0 {
		return end
	}
	n := c.decode(b[i+1:end-1], fl)
	if hasBadChars(n) {
		st.name.badChars = true
	}
	if st.name.takes(exact) {
		st.nameVal, st.nameString = n, true
	}
	return end
}

// argsMember scans a params "arguments" member's value: the call's
// arguments, kept as their raw span. The text of every arguments member,
// kept or not, is checked on the raw bytes (argsTextOK): no decoding is
// done here.
func (c *Classifier) argsMember(b []byte, i, depth int, exact bool) int {
	st := &c.st
	st.args.add(exact)
	end := c.skipValue(b, i, depth)
	if end < 0 {
		return end
	}
	v := b[i:end:end]
	if !argsTextOK(v) {
		st.args.badChars = true
	}
	if st.args.takes(exact) {
		st.argsVal = v
	}
	return end
}

// argsTextOK reports whether every decoder reads the strings of a validated
// JSON value alike: no invalid UTF-8 (replaced, kept or rejected), no
// unpaired surrogate escape (the same), no U+0000 escape (where a C decoder
// may cut). Escapes are found from each backslash, which in valid JSON only
// occurs in strings and always starts an escape, so "\\u0000" is an
// escaped backslash and text, not U+0000.
func argsTextOK(v []byte) bool {
	if !utf8.Valid(v) {
		return false
	}
	for i := 0; ; {
		k := bytes.IndexByte(v[i:], '\\')
		if k < 0 {
			return true
		}
		i += k + 1
		if v[i] != 'u' {
			i++
			continue
		}
		r := hex4(v[i+1:])
		i += 5
		switch {
		case r == 0:
			return false
		case utf16.IsSurrogate(r):
			if r >= 0xdc00 || i+6 > len(v) || v[i] != '\\' || v[i+1] != 'u' {
				return false
			}
			if r2 := hex4(v[i+2:]); r2 < 0xdc00 || r2 > 0xdfff {
				return false
			}
			i += 6
		}
	}
}

// decode returns the decoded content of a validated string: the raw bytes
// when they need no decoding, else a copy decoded into c.arena. Growing the
// arena never moves bytes already handed out: append copies them to the new
// array and the old one stays valid for the slices that point into it.
func (c *Classifier) decode(raw []byte, fl uint8) []byte {
	if fl&strEscaped == 0 && (fl&strHigh == 0 || utf8.Valid(raw)) {
		return raw[:len(raw):len(raw)]
	}
	k := len(c.arena)
	c.arena = appendUnquote(c.arena, raw)
	return c.arena[k:len(c.arena):len(c.arena)]
}

var replacementChar = []byte("\uFFFD")

// hasBadChars reports whether a decoded name contains U+0000, at which a C
// decoder may cut it, or U+FFFD, which stands for input that decoders read
// differently (invalid UTF-8, unpaired surrogates: replaced, kept, dropped
// or rejected).
func hasBadChars(s []byte) bool {
	return bytes.IndexByte(s, 0) >= 0 || bytes.Contains(s, replacementChar)
}

// looseEqual reports whether s equals target once cut at its first U+0000
// and stripped of U+FFFD: what a peer that truncates or drops those would
// read.
func looseEqual(s []byte, target string) bool {
	if k := bytes.IndexByte(s, 0); k >= 0 {
		s = s[:k]
	}
	j := 0
	for len(s) > 0 {
		if bytes.HasPrefix(s, replacementChar) {
			s = s[len(replacementChar):]
			continue
		}
		if j >= len(target) || s[0] != target[j] {
			return false
		}
		s = s[1:]
		j++
	}
	return j == len(target)
}

// finish fills m, a zero Message, from the accumulated state.
func (st *msgState) finish(m *Message) {
	m.Method, m.IsToolCall, m.HasID = st.methodVal, st.toolCall, st.id.any()
	if m.Method != nil {
		m.Op = opOf(m.Method)
	}
	if m.HasID {
		m.ID = st.idVal
	}
	switch {
	case st.method.any() && m.HasID:
		m.Type = Request
	case st.method.any():
		m.Type = Notification
	case m.HasID && (st.result.any() || st.errorf.any()):
		m.Type = Response
	default:
		m.Type = Invalid
	}
	if m.IsToolCall {
		m.Malformed = st.toolCallReason()
		if m.Malformed == "" {
			m.Malformed = st.paramsReason()
		}
		if st.params.exact == 1 && st.params.variant == 0 && !st.params.badType &&
			st.name.exact == 1 && st.name.variant == 0 && st.nameString && !st.name.badChars {
			m.Tool, m.HasTool = st.nameVal, true
		}
		if st.params.exact == 1 && st.params.variant == 0 && !st.params.badType &&
			st.args.exact == 1 && st.args.variant == 0 {
			m.Args, m.HasArgs = st.argsVal, true
		}
		if st.args.badChars {
			m.ArgsText = ArgsUnclear
		}
	}
	if st.recorded && !m.IsToolCall {
		m.Malformed = st.requestReason()
	}
	m.Answers = m.HasID && (st.result.any() || st.errorf.any())
	if m.Type == Response {
		m.Malformed = st.responseReason()
		if m.Malformed == "" && st.rounds {
			m.Malformed = st.resultReason()
		}
		m.IsError = st.errorf.any()
		m.ToolError = st.isErrTrue
	}
}

func (st *msgState) toolCallReason() string {
	if r := st.method.reason(malMethodDup, malMethodVariant, malMethodType, malMethodChars); r != "" {
		return r
	}
	if r := st.id.reason(malIDDup, malIDVariant, malIDType, ""); r != "" {
		return r
	}
	if r := st.params.reason(malParamsDup, malParamsVariant, malParamsType, ""); r != "" {
		return r
	}
	if r := st.name.reason(malNameDup, malNameVariant, malNameType, malNameChars); r != "" {
		return r
	}
	return st.args.reason(malArgsDup, malArgsVariant, "", "")
}

func (st *msgState) responseReason() string {
	if r := st.id.reason(malIDDup, malIDVariant, malIDType, ""); r != "" {
		return r
	}
	if r := st.result.reason(malResultDup, malResultVariant, "", ""); r != "" {
		return r
	}
	if r := st.errorf.reason(malErrorDup, malErrorVariant, "", ""); r != "" {
		return r
	}
	if st.result.any() && st.errorf.any() {
		return malResultAndError
	}
	return st.isError.reason(malIsErrorDup, malIsErrorVariant, "", "")
}

// reasons are the Malformed reasons of one member, by ambiguity.
type reasons struct{ dup, variant, typ, chars string }

func reasonsFor(path, typ string) reasons {
	r := reasons{path + ": duplicate key", path + ": case-variant key", "", path + ": contains U+0000 or U+FFFD"}
	if typ != "" {
		r.typ = path + ": not " + typ
	}
	return r
}

func (n *count) why(r *reasons) string { return n.reason(r.dup, r.variant, r.typ, r.chars) }

// Malformed reasons of the members read for rounds and tasks.
var (
	rsMeta         = reasonsFor("params._meta", "an object")
	rsRevision     = reasonsFor("params._meta protocolVersion", "a string")
	rsPTaskID      = reasonsFor("params.taskId", "a string")
	rsPStatus      = reasonsFor("params.status", "a string")
	rsPState       = reasonsFor("params.requestState", "a string")
	rsInResp       = reasonsFor("params.inputResponses", "an object")
	rsInRespAction = reasonsFor("params.inputResponses action", "")
	rsTask         = reasonsFor("params.task", "")
	rsReqID        = reasonsFor("params.requestId", "a string, number or null")
	rsPResult      = reasonsFor("params.result", "an object")
	rsPError       = reasonsFor("params.error", "")
	rsInnerIsError = reasonsFor("result.isError of the task", "")
	rsResultType   = reasonsFor("result.resultType", "a string")
	rsRTaskID      = reasonsFor("result.taskId", "a string")
	rsRTask        = reasonsFor("result.task", "an object")
	rsTTaskID      = reasonsFor("result.task.taskId", "a string")
	rsTStatus      = reasonsFor("result.task.status", "a string")
	rsRStatus      = reasonsFor("result.status", "a string")
	rsRState       = reasonsFor("result.requestState", "a string")
	rsInReq        = reasonsFor("inputRequests", "an object")
	rsInReqMethod  = reasonsFor("inputRequests method", "")
	rsProtoVer     = reasonsFor("result.protocolVersion", "a string")
	rsRResult      = reasonsFor("result.result", "an object")
	rsRError       = reasonsFor("result.error", "")
	rsRAction      = reasonsFor("result.action", "a string")
)

// Malformed reasons that are not about one member.
const (
	malInRespKey   = "params.inputResponses: duplicate key"
	malInReqKey    = "inputRequests: duplicate key"
	malTaskIDTwice = "result: both taskId and task"
	malStatusTwice = "result: both status and task"
)

// requestReason is Malformed for a request or notification the relay
// records other than tools/call.
func (st *msgState) requestReason() string {
	if r := st.method.reason(malMethodDup, malMethodVariant, malMethodType, malMethodChars); r != "" {
		return r
	}
	if r := st.id.reason(malIDDup, malIDVariant, malIDType, ""); r != "" {
		return r
	}
	if r := st.params.reason(malParamsDup, malParamsVariant, malParamsType, ""); r != "" {
		return r
	}
	return st.paramsReason()
}

// paramsReason is Malformed for the members of params read for rounds and
// tasks.
func (st *msgState) paramsReason() string {
	if r := st.meta.why(&rsMeta); r != "" || !st.rounds {
		return r
	}
	for _, f := range [...]struct {
		n *count
		r *reasons
	}{
		{&st.revision, &rsRevision}, {&st.pTaskID, &rsPTaskID},
		{&st.pStatus, &rsPStatus}, {&st.pState, &rsPState}, {&st.inResp, &rsInResp},
		{&st.resp.values, &rsInRespAction}, {&st.task, &rsTask}, {&st.reqID, &rsReqID},
		{&st.pResult, &rsPResult}, {&st.pError, &rsPError}, {&st.inReq, &rsInReq},
		{&st.req.values, &rsInReqMethod}, {&st.innerIsError, &rsInnerIsError},
	} {
		if r := f.n.why(f.r); r != "" {
			return r
		}
	}
	switch {
	case st.resp.dupKey:
		return malInRespKey
	case st.req.dupKey:
		return malInReqKey
	}
	return ""
}

// resultReason is Malformed for the members of result read for rounds and
// tasks.
func (st *msgState) resultReason() string {
	for _, f := range [...]struct {
		n *count
		r *reasons
	}{
		{&st.resultType, &rsResultType}, {&st.rTaskID, &rsRTaskID}, {&st.rTask, &rsRTask},
		{&st.tTaskID, &rsTTaskID}, {&st.tStatus, &rsTStatus}, {&st.rStatus, &rsRStatus},
		{&st.rState, &rsRState}, {&st.inReq, &rsInReq}, {&st.req.values, &rsInReqMethod},
		{&st.protoVer, &rsProtoVer}, {&st.rResult, &rsRResult}, {&st.innerIsError, &rsInnerIsError},
		{&st.rError, &rsRError}, {&st.rAction, &rsRAction},
	} {
		if r := f.n.why(f.r); r != "" {
			return r
		}
	}
	switch {
	case st.req.dupKey:
		return malInReqKey
	case st.rTaskID.any() && st.rTask.any():
		return malTaskIDTwice
	case st.rStatus.any() && st.rTask.any():
		return malStatusTwice
	}
	return ""
}

// plain reports whether a member that is only present (no value read) is
// given: one exact key, no variant.
func (n *count) plain() bool { return n.exact == 1 && n.variant == 0 }

// inputsClear reports whether an inputs object and its values are read
// alike by every decoder.
func inputsClear(n *count, l *inputList) bool {
	return n.clear() && !l.dupKey && l.values.exact <= 1 && l.values.variant == 0 && !l.values.badChars
}

// finishRounds fills m's members for rounds and tasks from the state,
// each only when it and its path are unambiguous. inputs is the
// Classifier's Input storage.
func (st *msgState) finishRounds(m *Rounds, inputs []Input) {
	params := st.params.plain() && !st.params.badType
	result := st.result.plain()
	if params {
		if st.meta.clear() && st.revision.clear() {
			m.Revision, m.HasRevision = st.revisionVal, true
		}
		if st.pTaskID.clear() {
			m.TaskID, m.HasTaskID = st.pTaskIDVal, true
		}
		if st.pStatus.clear() {
			m.Status, m.HasStatus = st.pStatusVal, true
		}
		if st.pState.clear() {
			m.RequestState, m.HasRequestState = st.pStateVal, true
		}
		if st.inResp.any() && inputsClear(&st.inResp, &st.resp) {
			l := &st.resp
			m.InputResponses = inputs[l.start : l.start+l.kept : l.start+l.kept]
			m.InputResponsesN, m.HasInputResponses = l.n, true
		}
		m.TaskAugmented = st.task.plain()
		if st.reqID.clear() {
			m.CancelID, m.HasCancelID = st.reqIDVal, true
		}
		if st.pResult.clear() && st.innerIsError.plain() && st.innerErrTrue {
			m.TaskResultIsError = true
		}
		m.TaskHasError = st.pError.plain()
	}
	if result {
		if st.resultType.clear() {
			m.ResultType, m.HasResultType = st.resultTypeVal, true
		}
		switch {
		case st.rTaskID.clear() && !st.rTask.any():
			m.ResultTaskID, m.HasResultTaskID = st.rTaskIDVal, true
		case st.rTask.clear() && st.tTaskID.clear() && !st.rTaskID.any() && !st.rStatus.any():
			m.ResultTaskID, m.HasResultTaskID, m.ResultTaskNested = st.tTaskIDVal, true, true
		}
		switch {
		case st.rStatus.clear() && !st.rTask.any():
			m.ResultStatus, m.HasResultStatus = st.rStatusVal, true
		case st.rTask.clear() && st.tStatus.clear() && !st.rStatus.any() && !st.rTaskID.any():
			m.ResultStatus, m.HasResultStatus = st.tStatusVal, true
		}
		if st.rState.clear() {
			m.ResultState, m.HasResultState = st.rStateVal, true
		}
		if st.protoVer.clear() {
			m.ProtocolVersion, m.HasProtocolVersion = st.protoVerVal, true
		}
		if st.rAction.clear() {
			m.ResultAction, m.HasResultAction = st.rActionVal, true
		}
		if st.rResult.clear() && st.innerIsError.plain() && st.innerErrTrue {
			m.TaskResultIsError = true
		}
		m.TaskHasError = m.TaskHasError || st.rError.plain()
	}
	if st.inReq.any() && (params || !st.params.any()) && (result || !st.result.any()) && inputsClear(&st.inReq, &st.req) {
		l := &st.req
		m.InputRequests = inputs[l.start : l.start+l.kept : l.start+l.kept]
		m.InputRequestsN, m.HasInputRequests = l.n, true
	}
}

// grow returns s with room for one more element, doubling its capacity when
// full (append grows large slices by a quarter, so a slice grown element by
// element to n allocates ~5n in all; doubling allocates ~2n).
func grow[S ~[]E, E any](s S) S {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, max(8, cap(s)))
}
