package httpfront

import (
	"io"
	"sync"
)

// inbox is a session's Conn.In: the lines its handlers put, in the order
// put, read by the session's relay. A put never waits for the reader: the
// handler that puts a request's line goes straight on to its stream, and
// the reader is woken once, where a pipe would make the writer wait for
// the reader to take the bytes and then wake the writer again. What it
// holds is bounded by the memory rule (package documentation, "Memory"):
// each line is counted against the session's and the server's budgets
// before its body is read, and its count is given back (its taken
// function) once the reader has read all of it, or when it is dropped.
// A line is held as it is, not copied: the handler that puts it must not
// change it afterwards. Safe for concurrent use.
type inbox struct {
	mu    sync.Mutex
	segs  []inLine // put and not yet read whole; segs[:first] are done with
	first int
	off   int   // of segs[first], already read
	wdone bool  // closeWrite: Read gives werr (io.EOF if nil) once segs drain
	werr  error //
	rdone bool  // closeRead: the reader is gone; puts fail, reads too
	// ready holds a token once a line is put or a side closed, for a
	// reader that found nothing to read: it waits for the token.
	ready chan struct{}
}

// inLine is one line put, with its count's release.
type inLine struct {
	b     []byte
	taken func() // may be nil
}

// compactAt is how many lines read whole segs keeps before it moves the
// rest down: the lines held are then at most twice those not yet read.
const compactAt = 64

func newInbox() *inbox { return &inbox{ready: make(chan struct{}, 1)} }

// put queues b for the reader; taken (if not nil) is called once the
// reader has read all of b, or b is dropped. It fails with errEnded,
// having called taken, once either side has closed.
func (in *inbox) put(b []byte, taken func()) error {
	in.mu.Lock()
	if in.rdone || in.wdone {
		in.mu.Unlock()
		if taken != nil {
			taken()
		}
		return errEnded
	}
	in.segs = append(in.segs, inLine{b: b, taken: taken})
	in.mu.Unlock()
	in.wake()
	return nil
}

func (in *inbox) wake() {
	select {
	case in.ready <- struct{}{}:
	default:
	}
}

// Read reads the lines put, as many bytes of them as p holds, waiting
// while there are none. Once the writer has closed and every line is
// read, it returns the writer's error (io.EOF for none); once the reader
// side has closed, io.ErrClosedPipe.
func (in *inbox) Read(p []byte) (int, error) {
	for {
		in.mu.Lock()
		if in.rdone {
			in.mu.Unlock()
			return 0, io.ErrClosedPipe
		}
		if in.first < len(in.segs) {
			n, done := 0, in.first
			for n < len(p) && done < len(in.segs) {
				k := copy(p[n:], in.segs[done].b[in.off:])
				n += k
				if in.off += k; in.off == len(in.segs[done].b) {
					done++
					in.off = 0
				}
			}
			for i := in.first; i < done; i++ {
				// A release takes no lock of the inbox's or session's:
				// it is given back here, under mu, allocating nothing.
				if f := in.segs[i].taken; f != nil {
					f()
				}
				in.segs[i] = inLine{}
			}
			in.first = done
			switch {
			case in.first == len(in.segs):
				in.segs, in.first = in.segs[:0], 0
			case in.first >= compactAt && 2*in.first >= len(in.segs):
				// A reader that never quite catches up (a client that
				// keeps lines coming) would otherwise grow segs by the
				// lines it has read: keep only those not read whole.
				n := copy(in.segs, in.segs[in.first:])
				clear(in.segs[n:])
				in.segs, in.first = in.segs[:n], 0
			}
			in.mu.Unlock()
			return n, nil
		}
		if in.wdone {
			err := in.werr
			in.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		in.mu.Unlock()
		<-in.ready
	}
}

// closeWrite ends the writer's side: puts fail, and the reader reads
// what was put, then err (io.EOF when nil). Only the first close counts.
func (in *inbox) closeWrite(err error) {
	in.mu.Lock()
	if !in.wdone {
		in.wdone, in.werr = true, err
	}
	in.mu.Unlock()
	in.wake()
}

// closeRead ends the reader's side: the lines not yet read are dropped
// (their counts given back), puts fail, and a Read waiting returns.
func (in *inbox) closeRead() {
	in.mu.Lock()
	in.rdone = true
	segs := in.segs[in.first:]
	in.segs, in.first, in.off = nil, 0, 0
	in.mu.Unlock()
	for _, s := range segs {
		if s.taken != nil {
			s.taken()
		}
	}
	in.wake()
}
