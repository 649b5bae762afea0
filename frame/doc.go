// Package frame splits an MCP stdio byte stream into lines and classifies
// each line as JSON-RPC 2.0, without ever re-serialising it.
//
// # The two halves
//
// A Reader hands out runs of whole lines straight from its read buffer; the
// relay writes those bytes on unchanged, so everything it forwards is the
// input byte for byte, whatever the input is. A Classifier reads one line and
// reports what it carries: nothing (Empty), not exactly one JSON value
// (NotJSON, with an Anomaly reason), one value (Single) or a batch (Batch),
// and for each JSON-RPC message its type, method, id, and, for tools/call,
// the tool name and whether decoders could disagree about it (Malformed).
//
// # Contract
//
//   - Neither type is safe for concurrent use; use one per stream.
//   - Slices returned by Reader.Next alias its buffer: valid until the next
//     Next. Slices in a Frame alias the line or the Classifier's buffers:
//     valid until the next Classify on the same Classifier, and only while
//     the line's bytes are unchanged.
//   - Neither allocates per frame in steady state. The Reader keeps a
//     buffer of the size it was made with; a longer line is read into a
//     long buffer (from a process-wide pool, or blocks joined into a new
//     one, at most max+1 bytes), which goes back to the pool once the line
//     is consumed and is freed by the next garbage collection unless
//     another long line takes it first. A Classifier keeps decoded strings (at most ~3 bytes per input byte of a
//     decoded method, name or id, dropped after a frame that needed more
//     than 1 MiB) and at most MaxBatch Messages.
//   - Bad input is the normal case: no input makes either panic, recurse
//     without bound, or hold memory beyond those bounds.
//
// # What "one JSON value" means
//
// A line is one JSON value if encoding/json would accept it (json.Valid):
// RFC 8259 grammar, white space " \t\r\n" around it (so "\n" and "\r\n"
// endings are fine), nesting at most 10000 deep, strings without raw control
// characters and with valid escapes. Like encoding/json (and JSON.parse on a
// UTF-8-decoded line) the classifier accepts invalid UTF-8 inside strings and
// decodes it, and unpaired surrogate escapes, as U+FFFD. A byte order mark,
// a second value, trailing bytes, a value cut short (an object split over
// lines) or deeper nesting make the line NotJSON.
//
// fastjson is not used, although the design named it, for reasons measured
// against v1.6.10: its Parser accepts what encoding/json rejects (NaN, raw
// control characters, bad escapes, 1.2.3), so validation is a second pass;
// its Validate recurses once per nesting level, and a 16 MiB line of '['
// kills the process ("fatal error: stack overflow", not a recoverable
// panic); its errors allocate; its unescaping differs from encoding/json's
// on surrogates; and its Parser keeps ~100 bytes per JSON value in a cache
// that never shrinks (49× the size of a line of "[0,0,…]", ~3 GiB pinned
// for one 64 MiB frame). This package validates in one iterative pass,
// keeping one bit per nesting level, and looks only at the members that
// classification needs; it is about twice as fast as Validate+Parse.
//
// # Parser differentials are attacks
//
// The peers on either side may decode a line with any JSON decoder, and the
// relay must record what the child will execute, not what it would like the
// line to mean. Known behaviours: JSON.parse and Python's json keep the last
// of duplicate keys; Go's encoding/json keeps the last too, but also binds
// keys equal under Unicode simple case folding ("Method", "paramſ" with
// U+017F), and encoding/json/v2's case-insensitive mode also ignores '_' and
// '-'; C decoders may cut strings at U+0000; decoders replace, keep, drop or
// reject invalid UTF-8 and unpaired surrogates. So, for the members method,
// id and params of a message and name inside params (and id, result, error
// and result.isError of a response), Malformed is set when:
//
//   - a key appears twice (after escape decoding: "met\u0068od" is method);
//   - a key is a case-variant of the name: equal under Unicode simple case
//     folding with ASCII '_' and '-' ignored, but not exactly equal;
//   - a value has the wrong type: method or name not a string, id an object,
//     array or boolean, params not an object in a tools/call;
//   - a decoded method or name contains U+0000 or U+FFFD;
//   - a response has both result and error.
//
// IsToolCall is set if any method member, exact or variant, duplicate or
// not, decodes to "tools/call" — or would once cut at U+0000 and stripped of
// U+FFFD — because some decoder reads it so and the relay must record it.
// Tool is only given when params and name are unambiguous. Malformed is only
// computed for tool calls and responses, the messages the relay records.
//
// Not malformed, by decision: a missing jsonrpc member or one other than
// "2.0" (peers ignore it; the line is still relayed and recorded as what it
// carries); a tools/call without params or without name (not ambiguous:
// every decoder agrees the name is absent; HasTool is false); an id string
// containing U+FFFD (ids are only matched, in order, and both sides see the
// same bytes).
//
// # Ids
//
// Ids are matched by value through ID.Key: numbers are compared exactly as
// decimal values (1, 1.0, 1e0, 10e-1 are equal; -0 equals 0; arbitrarily
// long integers and exponents are exact), strings by their decoded value, a
// string never equals a number.
package frame

import "errors"

// Errors returned by Reader.Next. Classify has none: a line that is not
// JSON-RPC is a classification, not an error.
var (
	// ErrFrameTooLarge: a line (its '\n' included) is longer than the
	// Reader's max. Sticky; the relay ends the session (exit 65).
	ErrFrameTooLarge = errors.New("frame: line longer than max frame")
	// ErrBadRead: the underlying io.Reader returned an impossible count.
	ErrBadRead = errors.New("frame: reader returned an invalid count")
)
