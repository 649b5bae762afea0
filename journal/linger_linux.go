package journal

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lingerer is the leader's short timer: a timerfd read by a goroutine
// through the netpoller.
type lingerer struct {
	fd    int
	f     *os.File
	fired chan struct{} // one expiry (buffered 1; a stale one is harmless)
	poke  chan struct{} // an Append while the leader lingers (buffered 1)
}

// newLingerer returns a lingerer, or nil if the kernel has no timerfd (the
// leader then never lingers).
func newLingerer() *lingerer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	l := &lingerer{
		fd:    fd,
		f:     os.NewFile(uintptr(fd), "timerfd"),
		fired: make(chan struct{}, 1),
		poke:  make(chan struct{}, 1),
	}
	go l.run()
	return l
}

func (l *lingerer) run() {
	var buf [8]byte
	for {
		if _, err := l.f.Read(buf[:]); err != nil {
			return // closed
		}
		select {
		case l.fired <- struct{}{}:
		default:
		}
	}
}

// wait returns after d, or sooner on a poke. Only the leader calls it.
func (l *lingerer) wait(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(d.Nanoseconds(), 1))}
	if unix.TimerfdSettime(l.fd, 0, &spec, nil) != nil {
		return
	}
	select {
	case <-l.poke:
	case <-l.fired:
	}
}

func (l *lingerer) close() { l.f.Close() }
