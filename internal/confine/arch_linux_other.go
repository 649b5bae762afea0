//go:build linux && !amd64 && !arm64

package confine

import (
	"errors"
	"runtime"
)

// native is unset: the filter is written for the little-endian amd64 and
// arm64 layouts only.
var native arch

func seccompSupported() error {
	return errors.New("the network filter is not built for " + runtime.GOARCH)
}
