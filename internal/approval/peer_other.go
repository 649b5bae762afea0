//go:build !linux

package approval

import (
	"errors"
	"net"
)

// peerUID: approvals are served on Linux only, where SO_PEERCRED names
// the peer; elsewhere every peer is refused.
func peerUID(net.Conn) (uint64, error) {
	return 0, errors.New("peer credentials are read on Linux only: approvals are refused")
}
