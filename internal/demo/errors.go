package demo

import "errors"

// Errors of the demo client. Classify with errors.Is.
var (
	// ErrTimeout means the server did not answer within the client's bound.
	ErrTimeout = errors.New("demo: no answer in time")
	// ErrAnswer means an answer arrived but was not the expected one.
	ErrAnswer = errors.New("demo: unexpected answer")
	// ErrClosed means the server's output ended (EOF or read error) while an
	// answer was still awaited.
	ErrClosed = errors.New("demo: server output ended")
)
