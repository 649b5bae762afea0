//go:build !linux

package relay

import "io"

// readable reports nil: without FIONREAD the pumps cannot tell whether
// more bytes wait, and relay each run as it is read.
func readable(io.Reader) func() bool { return nil }
