//go:build !linux

package journal

import "time"

// lingerer is the leader's short timer: a runtime timer where there is no
// timerfd.
type lingerer struct {
	poke chan struct{} // an Append while the leader lingers (buffered 1)
}

func newLingerer() *lingerer { return &lingerer{poke: make(chan struct{}, 1)} }

// wait returns after d, or sooner on a poke. Only the leader calls it.
func (l *lingerer) wait(d time.Duration) {
	t := time.NewTimer(max(d, 1))
	defer t.Stop()
	select {
	case <-l.poke:
	case <-t.C:
	}
}

func (l *lingerer) close() {}
