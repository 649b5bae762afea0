package httpfront

import (
	"bytes"
	"errors"
)

// Errors of Line.
var (
	errEmpty  = errors.New("empty body")
	errSplits = errors.New("the body holds a raw CR or LF: on line-framed stdio it would not be one line")
)

// Line returns the line a POST body is written to the child as (followed
// by '\n'): the body itself, without one trailing "\n" or "\r\n" if it
// ends so (a line ending, as curl and editors add, not content). A body
// with any other raw CR or LF byte is refused: the child reads lines, and
// would read two messages, or a bare CR splitting one, where the client
// sent one. An empty body is refused. The returned slice aliases body.
func Line(body []byte) ([]byte, error) {
	line := body
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	if len(line) == 0 {
		return nil, errEmpty
	}
	if bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 {
		return nil, errSplits
	}
	return line, nil
}
