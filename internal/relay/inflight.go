package relay

import (
	"slices"

	"github.com/aegisrelay/aegis/frame"
)

// InFlight returns the intent seqs of the tools/calls in flight (sent to
// the child, not yet answered), oldest first: what an egress record
// names as running when a connection opened.
func (r *Relay) InFlight() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var seqs []uint64
	for _, list := range r.inFlight.byKey {
		for _, c := range list {
			if c.op == frame.OpToolsCall {
				seqs = append(seqs, c.seq)
			}
		}
	}
	slices.Sort(seqs)
	return seqs
}
