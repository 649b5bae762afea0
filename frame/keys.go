package frame

import (
	"unicode"
	"unicode/utf8"
)

// A key is the set of names a peer's decoder may bind to one JSON-RPC field.
// Node (JSON.parse) and Python (json) match names exactly, last duplicate
// winning. Go's encoding/json (v1) also matches any name equal under Unicode
// simple case folding ("Method", "METHOD", "paramſ" with U+017F), last
// winning across exact and folded names; encoding/json/v2 with
// MatchCaseInsensitiveNames, or a `case:ignore` field, additionally ignores
// '_' and '-' ("meth_od"). A key that one of those decoders binds to a field
// and another does not is a parser differential, so it is reported.

// field identifies a JSON-RPC member the classifier looks at.
type field uint8

const (
	fNone field = iota
	// top level of a message
	fMethod
	fID
	fParams
	fResult
	fError
	// inside params
	fName
	fArguments
	// inside result
	fIsError
	// inside params
	fMeta
	fPTaskID
	fPStatus
	fPState
	fInResp
	fPInReq
	fTask
	fReqID
	fPResult
	fPError
	// inside params._meta
	fRevision
	// inside result
	fResultType
	fRTaskID
	fRTask
	fRStatus
	fRState
	fRInReq
	fProtoVer
	fRResult
	fRError
	fRAction
	// inside result.task
	fTTaskID
	fTStatus
	// inside result.result and params.result (a task's final result)
	fInnerIsError
	// inside a value of inputRequests, inputResponses
	fEntryMethod
	fEntryAction
)

// A name is a field's key, folded as foldRune maps it: ASCII upper case.
type name struct {
	f      field
	folded string
}

var topNames = [...]name{{fMethod, "METHOD"}, {fID, "ID"}, {fParams, "PARAMS"}, {fResult, "RESULT"}, {fError, "ERROR"}}

// matchTop matches a decoded top-level key; exact is false for a variant.
func matchTop(key []byte) (f field, exact bool) {
	switch string(key) {
	case "method":
		return fMethod, true
	case "id":
		return fID, true
	case "params":
		return fParams, true
	case "result":
		return fResult, true
	case "error":
		return fError, true
	case "jsonrpc":
		return fNone, false
	}
	for _, n := range topNames {
		if foldEqual(key, n.folded) {
			return n.f, false
		}
	}
	return fNone, false
}

// matchParams matches a decoded key inside params.
func matchParams(key []byte) (f field, exact bool) {
	switch string(key) {
	case "name":
		return fName, true
	case "arguments":
		return fArguments, true
	case "_meta":
		return fMeta, true
	case "taskId":
		return fPTaskID, true
	case "status":
		return fPStatus, true
	case "requestState":
		return fPState, true
	case "inputResponses":
		return fInResp, true
	case "inputRequests":
		return fPInReq, true
	case "task":
		return fTask, true
	case "requestId":
		return fReqID, true
	case "result":
		return fPResult, true
	case "error":
		return fPError, true
	}
	return matchFolded(key, paramsNames[:])
}

var paramsNames = [...]name{{fName, "NAME"}, {fArguments, "ARGUMENTS"}, {fMeta, "META"},
	{fPTaskID, "TASKID"}, {fPStatus, "STATUS"}, {fPState, "REQUESTSTATE"},
	{fInResp, "INPUTRESPONSES"}, {fPInReq, "INPUTREQUESTS"}, {fTask, "TASK"},
	{fReqID, "REQUESTID"}, {fPResult, "RESULT"}, {fPError, "ERROR"}}

// revisionKey is the _meta key of the revision a request declares.
const revisionKey = "io.modelcontextprotocol/protocolVersion"

// matchMeta matches a decoded key inside params._meta.
func matchMeta(key []byte) (f field, exact bool) {
	if string(key) == revisionKey {
		return fRevision, true
	}
	if len(key) >= len("io.modelcontextprotocol/protocolversion") && foldEqual(key, "IO.MODELCONTEXTPROTOCOL/PROTOCOLVERSION") {
		return fRevision, false
	}
	return fNone, false
}

// matchResult matches a decoded key inside result.
func matchResult(key []byte) (f field, exact bool) {
	switch string(key) {
	case "isError":
		return fIsError, true
	case "content", "structuredContent", "_meta":
		return fNone, false
	case "resultType":
		return fResultType, true
	case "taskId":
		return fRTaskID, true
	case "task":
		return fRTask, true
	case "status":
		return fRStatus, true
	case "requestState":
		return fRState, true
	case "inputRequests":
		return fRInReq, true
	case "protocolVersion":
		return fProtoVer, true
	case "result":
		return fRResult, true
	case "error":
		return fRError, true
	case "action":
		return fRAction, true
	}
	return matchFolded(key, resultNames[:])
}

var resultNames = [...]name{{fIsError, "ISERROR"}, {fResultType, "RESULTTYPE"},
	{fRTaskID, "TASKID"}, {fRTask, "TASK"}, {fRStatus, "STATUS"}, {fRState, "REQUESTSTATE"},
	{fRInReq, "INPUTREQUESTS"}, {fProtoVer, "PROTOCOLVERSION"}, {fRResult, "RESULT"}, {fRError, "ERROR"}, {fRAction, "ACTION"}}

// matchTask matches a decoded key inside result.task.
func matchTask(key []byte) (f field, exact bool) {
	switch string(key) {
	case "taskId":
		return fTTaskID, true
	case "status":
		return fTStatus, true
	}
	return matchFolded(key, taskNames[:])
}

var taskNames = [...]name{{fTTaskID, "TASKID"}, {fTStatus, "STATUS"}}

// matchInner matches a decoded key inside a task's final result.
func matchInner(key []byte) (f field, exact bool) {
	switch string(key) {
	case "isError":
		return fInnerIsError, true
	case "content", "structuredContent", "_meta":
		return fNone, false
	}
	if foldEqual(key, "ISERROR") {
		return fInnerIsError, false
	}
	return fNone, false
}

// matchRequestEntry matches a decoded key inside a value of inputRequests.
func matchRequestEntry(key []byte) (f field, exact bool) {
	if string(key) == "method" {
		return fEntryMethod, true
	}
	if foldEqual(key, "METHOD") {
		return fEntryMethod, false
	}
	return fNone, false
}

// matchResponseEntry matches a decoded key inside a value of
// inputResponses.
func matchResponseEntry(key []byte) (f field, exact bool) {
	if string(key) == "action" {
		return fEntryAction, true
	}
	if foldEqual(key, "ACTION") {
		return fEntryAction, false
	}
	return fNone, false
}

// matchFolded matches key against names as a case variant.
func matchFolded(key []byte, names []name) (field, bool) {
	for _, n := range names {
		if foldEqual(key, n.folded) {
			return n.f, false
		}
	}
	return fNone, false
}

// foldEqual reports whether key matches folded (an upper-case ASCII name)
// under Unicode simple case folding with ASCII '_' and '-' ignored, the
// widest matching any Go decoder applies (encoding/json/v2's foldName). It
// is a superset of bytes.EqualFold. Invalid UTF-8 decodes as U+FFFD, which
// folds to no letter.
func foldEqual(key []byte, folded string) bool {
	j := 0
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			i++
			if c == '_' || c == '-' {
				continue
			}
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			if j >= len(folded) || c != folded[j] {
				return false
			}
			j++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		i += n
		if j >= len(folded) || foldRune(r) != rune(folded[j]) {
			return false
		}
		j++
	}
	return j == len(folded)
}

// foldRune returns the smallest rune of r's simple case folding orbit, as
// encoding/json does; for an ASCII letter that is its upper case.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
