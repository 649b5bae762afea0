package frame

import (
	"errors"
	"sync"
	"time"
)

// Mapped long buffers.
//
// A line longer than the Reader's buffer is read, where the system allows
// it, straight into a mapping of max+1 bytes of anonymous memory reserved
// but not committed: only the pages the line touches become resident, so
// the line is held once, at its own size, with no block joined or buffer
// doubled (each of which holds it twice at its peak). A mapping is made
// once and never unmapped: it passes from Reader to Reader through
// mappedBufs, and a slice a caller kept past the next Next reads stale
// bytes, as with any reused buffer, never unmapped memory.
//
// A mapping back in mappedBufs stays resident for the next long line
// (faulting a 16 MiB line's pages in again and having the kernel zero them
// costs more than reading it), until it has been free for mappedIdle: then
// its pages past mappedKeep go back to the system, as a heap buffer left
// in longBufs goes at the next garbage collection.
//
// At most maxMapped mappings exist in a process; a long line that finds
// none free, or a system without them, takes the heap's long buffers
// (reader.go, "Long lines").
var mappedBufs struct {
	mu    sync.Mutex
	free  []freeMapping // owned by no Reader
	made  int           // mappings made, at most maxMapped
	off   bool          // the system has no mappings: not tried again
	timer *time.Timer   // runs dropIdle while a free mapping holds pages
}

type freeMapping struct {
	p       *[]byte
	since   time.Time // given back at
	dropped bool      // its pages past mappedKeep are given back
}

const (
	// maxMapped bounds the mappings: a relay's two Readers use one each
	// at most, and a process running several sessions shares them.
	maxMapped = 4
	// mappedKeep is what a free mapping keeps resident however long it is
	// free: lines up to it never fault pages in again.
	mappedKeep = 1 << 20
	// mappedIdle is how long a free mapping keeps the rest of its pages:
	// long enough that frames a few seconds apart find their pages in
	// place, about as long as the heap's long buffer would wait for a
	// collection in a relay that allocates little.
	mappedIdle = 10 * time.Second
)

// getMapped returns a mapping of at least n bytes that no Reader uses, or
// nil if there is none and no more may be made.
func getMapped(n int) *[]byte {
	mappedBufs.mu.Lock()
	defer mappedBufs.mu.Unlock()
	free := mappedBufs.free
	for i := len(free) - 1; i >= 0; i-- {
		if p := free[i].p; len(*p) >= n {
			mappedBufs.free = append(free[:i], free[i+1:]...)
			return p
		}
	}
	if mappedBufs.off || mappedBufs.made >= maxMapped {
		return nil
	}
	b, err := mapAnon(n)
	if err != nil {
		// A system without mappings is not asked again; a refusal of
		// this size (a --max-frame beyond the address space) is this
		// line's alone.
		mappedBufs.off = errors.Is(err, errors.ErrUnsupported)
		return nil
	}
	mappedBufs.made++
	return &b
}

// putMapped gives *p, from getMapped, back to mappedBufs.
func putMapped(p *[]byte) {
	mappedBufs.mu.Lock()
	defer mappedBufs.mu.Unlock()
	mappedBufs.free = append(mappedBufs.free, freeMapping{p: p, since: time.Now()})
	if mappedBufs.timer == nil {
		mappedBufs.timer = time.AfterFunc(mappedIdle, func() { dropIdle(time.Now()) })
	}
}

// dropIdle gives back the pages past mappedKeep of the mappings free since
// mappedIdle before now, under the lock, so that no Reader takes one
// meanwhile; it runs again while a free mapping still holds its pages.
func dropIdle(now time.Time) {
	mappedBufs.mu.Lock()
	defer mappedBufs.mu.Unlock()
	mappedBufs.timer = nil
	var next time.Duration
	for i := range mappedBufs.free {
		m := &mappedBufs.free[i]
		switch {
		case m.dropped:
		case now.Sub(m.since) >= mappedIdle:
			if b := *m.p; len(b) > mappedKeep {
				dropPages(b[mappedKeep:])
			}
			m.dropped = true
		default:
			next = max(next, mappedIdle-now.Sub(m.since))
		}
	}
	if next > 0 {
		mappedBufs.timer = time.AfterFunc(next, func() { dropIdle(time.Now()) })
	}
}
