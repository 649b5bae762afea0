package relay

import "sync/atomic"

// relayed counts the bytes the pumps have read from each peer, over every
// session of the process, sessions that ended included: [0] from the
// client (Upstream), [1] from the server (Downstream). Each read chunk is
// one atomic add on its pump's reader, whether or not telemetry reads the
// sums; the two counters sit on cache lines of their own, so that the two
// pumps' adds do not contend.
var relayed [2]struct {
	n atomic.Uint64
	_ [56]byte
}

// Relayed returns the bytes the relays of this process have read from
// clients (clientToServer) and from servers (serverToClient) so far:
// every byte of every line each peer sent, including the lines aegis
// refuses or drops rather than passes on; the frames aegis writes itself
// (refusals) are not in them.
func Relayed() (clientToServer, serverToClient uint64) {
	return relayed[0].n.Load(), relayed[1].n.Load()
}

// relayedBy is the counter of the direction p reads.
func relayedBy(p pumpSide) *atomic.Uint64 {
	if _, ok := p.(*downstreamSide); ok {
		return &relayed[1].n
	}
	return &relayed[0].n
}
