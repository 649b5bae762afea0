//go:build !linux

package frame

import "errors"

// mapAnon fails: long lines take the heap's long buffers here.
func mapAnon(int) ([]byte, error) { return nil, errors.ErrUnsupported }

func dropPages([]byte) {}
