package relay

import (
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/journal"
)

// A pump is two goroutines. Its reader, which the pump starts, reads runs
// of lines and records them; its forwarder, the goroutine that called the
// pump, waits until each run's records are as durable as the level
// requires and then writes the run. While the forwarder waits (its Wait
// may be the journal's leader, lingering for the records of the calls in
// flight) the reader goes on reading and recording the frames that arrive
// meanwhile, so that their records join the group about to be synced
// instead of the one after it: with calls in flight, more calls per
// fdatasync.
//
// The rules, kept by the methods below:
//   - runs are written in the order they were read, each once Wait has
//     returned for its last record, so for every record of it and of every
//     run before it (the reader appends them in that order);
//   - a run the reader has staged is not the forwarder's until the reader
//     publishes it. The reader stages the runs of a burst (more bytes
//     already waiting in src) and publishes them before anything can block
//     it, so that the forwarder's Wait comes after the burst's last record
//     and one commit group covers the burst;
//   - when the forwarder holds nothing the reader writes a run itself,
//     from the Reader's buffer, if the run has no records, or if nothing
//     could arrive while it waits for them (no other call in flight, no
//     answer that the client has yet to follow with a call, no bytes
//     waiting: Relay.alone). A lone call then costs what it costs without
//     a forwarder: handing its run over would put a wake-up of the other
//     goroutine's thread on its path, a cost each lock-step call would pay
//     (BENCHMARKS.md, "Recorded tools/call by durability"). Otherwise the
//     run queues;
//   - a queued run is a copy, in buffers that pass from run to run (steady
//     state allocates nothing). What the reader has staged, queued or the
//     forwarder not yet written costs at most maxReadAhead bytes, each run
//     its bytes and runCost; beyond that the reader waits. A line longer
//     than the Reader's buffer is not copied but handed over as it is, and
//     the reader waits until it is written: the Reader's buffer is valid
//     only until Next;
//   - fail closed: the forwarder returns the first error of a Wait (the
//     journal's: then nothing more moves either way) or of a write that ends
//     the pump, at once, with whatever it still holds unwritten. The reader
//     then records and writes nothing more, and ends when its read returns:
//     a pump blocked in a read must not keep the session from learning of
//     the failure (Session.Run ends the session on the pump's error). The
//     reader's own failures end the pump too: a record or a write of its
//     own that fails at once, the end of src (EOF, a frame too long, a read error) once the runs
//     before it are written.
type forwarder struct {
	r     *Relay
	write func(*heldRun) error // writes a run to the destination

	mu       sync.Mutex
	work     sync.Cond  // the forwarder waits for runs, or the reader's end
	room     sync.Cond  // the reader waits for room, an idle forwarder, or its failure
	queue    []*heldRun // published, not yet taken
	taken    []*heldRun // being written: the forwarder's, outside mu too
	free     []*heldRun // done with: their buffers serve the next copies
	cost     int        // of the runs staged, queued and taken (not long ones)
	freeSize int        // retained by the runs in free
	busy     bool       // the forwarder is writing taken
	ended    bool       // the reader is done; end or abort says how
	end      error      // the end of src (nil at EOF): returned once all is written
	abort    error      // the reader failed (a record, a write): returned at once
	failed   atomic.Bool

	staged     []*heldRun // the reader's alone
	readerDone chan struct{}
}

// runCost is what a queued run costs besides its bytes (its struct and
// slice headers, roughly): a stream of tiny runs is bounded in runs too.
const runCost = 256

// heldRun is a run of lines on its way to the destination, and what the
// forwarder needs to know of it.
type heldRun struct {
	chunk   []byte // the lines: buf, or the Reader's own buffer (long)
	buf     []byte // the run's copy; its buffer is reused from run to run
	long    bool   // chunk is a line longer than the Reader's buffer, not copied
	n       int    // records appended for it; 0: nothing to wait for
	last    uint64 // the last of them
	barrier journal.Barrier
	answers int // Downstream's: responses to calls, released with it
	// Upstream's: what its state said of the run (relayRun).
	drops  [][2]int
	answer []byte
	calls  []*call
}

// size is what the buffers of h keep allocated.
func (h *heldRun) size() int {
	return runCost + cap(h.buf) + cap(h.answer) + 16*cap(h.drops) + 8*cap(h.calls)
}

func newForwarder(r *Relay, write func(*heldRun) error) *forwarder {
	fw := &forwarder{r: r, write: write, readerDone: make(chan struct{})}
	fw.work.L, fw.room.L = &fw.mu, &fw.mu
	return fw
}

// writeRuns is the forwarder's loop: it writes the runs the reader publishes,
// each once its records are durable, until the reader ends or a run fails,
// and returns the pump's error.
func (fw *forwarder) writeRuns() error {
	fw.mu.Lock()
	for {
		for len(fw.queue) == 0 && !fw.ended {
			fw.work.Wait()
		}
		if fw.abort != nil || len(fw.queue) == 0 {
			err := fw.abort
			if err == nil {
				err = fw.end
			}
			fw.mu.Unlock()
			<-fw.readerDone // it has said its last: it returns at once
			return err
		}
		fw.queue, fw.taken = fw.taken, fw.queue
		fw.busy = true
		fw.mu.Unlock()
		cost := 0
		for _, h := range fw.taken {
			if err := fw.forward(h); err != nil {
				fw.fail()
				return err
			}
			if !h.long {
				cost += len(h.chunk) + runCost
			}
		}
		fw.mu.Lock()
		for _, h := range fw.taken {
			fw.recycle(h)
		}
		clear(fw.taken)
		fw.taken = fw.taken[:0]
		fw.cost -= cost
		fw.busy = false
		fw.room.Broadcast()
	}
}

// forward writes h once its records are as durable as its barrier
// requires.
func (fw *forwarder) forward(h *heldRun) error {
	if err := fw.r.release(h.n, h.last, h.barrier, h.calls, h.answers); err != nil {
		return err
	}
	return fw.write(h)
}

// recycle puts h in free, keeping its buffers while free retains at most
// maxReadAhead bytes: a stream that varies its runs' sizes cannot make
// every run keep the largest buffer it ever had. Called with mu held.
func (fw *forwarder) recycle(h *heldRun) {
	h.chunk = nil // a long line's buffer goes back to its Reader
	clear(h.calls)
	if fw.freeSize+h.size() > maxReadAhead {
		h.buf, h.answer, h.drops, h.calls = nil, nil, nil, nil
	}
	fw.freeSize += h.size()
	fw.free = append(fw.free, h)
}

// fail stops the reader: the forwarder is returning an error.
func (fw *forwarder) fail() {
	fw.failed.Store(true)
	fw.mu.Lock()
	fw.room.Broadcast()
	fw.mu.Unlock()
}

// The reader's side.

// stopped reports whether the forwarder has failed: the reader must record
// nothing more.
func (fw *forwarder) stopped() bool { return fw.failed.Load() }

// idle reports whether the forwarder holds no run, staged, queued or being
// written: the reader may then write a run without records itself.
func (fw *forwarder) idle() bool {
	if len(fw.staged) > 0 {
		return false
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return !fw.busy && len(fw.queue) == 0 && !fw.failed.Load()
}

// take returns a run of chunk for the reader to fill in and then send:
// a staged copy, or, for a line longer than the Reader's buffer (long),
// the line itself. It returns nil if the forwarder has failed.
func (fw *forwarder) take(chunk []byte, long bool) *heldRun {
	if long {
		return fw.longRun(chunk)
	}
	return fw.stage(chunk)
}

// send passes h, from take and filled in, to the forwarder: a long line is
// handed over and waited for; another run is published now, unless more
// bytes are waiting (waiting), whose runs it then goes with. It reports
// false if the forwarder has failed.
func (fw *forwarder) send(h *heldRun, waiting bool) bool {
	if h.long {
		return fw.handOver(h)
	}
	if !waiting {
		fw.publish()
	}
	return true
}

// stage copies chunk into a run, which it stages and returns for the
// caller to fill in. It waits first while the run would take the cost of
// what the forwarder holds past maxReadAhead. It returns nil if the
// forwarder has failed. (A line longer than the Reader's buffer goes by
// longRun and handOver instead.)
func (fw *forwarder) stage(chunk []byte) *heldRun {
	c := len(chunk) + runCost
	fw.mu.Lock()
	for fw.cost > 0 && fw.cost+c > maxReadAhead && !fw.failed.Load() {
		fw.publishLocked()
		fw.room.Wait()
	}
	h := fw.slotLocked()
	if h == nil {
		fw.mu.Unlock()
		return nil
	}
	fw.cost += c
	fw.mu.Unlock()
	h.buf = append(h.buf[:0], chunk...)
	h.chunk = h.buf
	fw.staged = append(fw.staged, h)
	return h
}

// longRun returns a run for chunk, a line longer than the Reader's buffer,
// without copying it; the caller fills it in and hands it over. It returns
// nil if the forwarder has failed.
func (fw *forwarder) longRun(chunk []byte) *heldRun {
	fw.mu.Lock()
	h := fw.slotLocked()
	fw.mu.Unlock()
	if h != nil {
		h.chunk, h.long = chunk, true
	}
	return h
}

// slotLocked returns an empty run, or nil if the forwarder has failed.
// Called with mu held.
func (fw *forwarder) slotLocked() *heldRun {
	if fw.failed.Load() {
		return nil
	}
	var h *heldRun
	if n := len(fw.free); n > 0 {
		h, fw.free[n-1] = fw.free[n-1], nil
		fw.free = fw.free[:n-1]
		fw.freeSize -= h.size()
	} else {
		h = &heldRun{}
	}
	h.long, h.n, h.last, h.barrier, h.answers = false, 0, 0, journal.BeforeRequest, 0
	h.drops, h.answer, h.calls = h.drops[:0], h.answer[:0], h.calls[:0]
	return h
}

// publish hands the staged runs to the forwarder.
func (fw *forwarder) publish() {
	if len(fw.staged) == 0 {
		return
	}
	fw.mu.Lock()
	fw.publishLocked()
	fw.mu.Unlock()
}

func (fw *forwarder) publishLocked() {
	if len(fw.staged) == 0 {
		return
	}
	fw.queue = append(fw.queue, fw.staged...)
	clear(fw.staged)
	fw.staged = fw.staged[:0]
	fw.work.Signal()
}

// handOver publishes the staged runs and then h, a run from longRun, and
// waits until the forwarder has written them all, since h uses the
// Reader's buffer. It reports false if the forwarder failed.
func (fw *forwarder) handOver(h *heldRun) bool {
	fw.staged = append(fw.staged, h)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.publishLocked()
	for (fw.busy || len(fw.queue) > 0) && !fw.failed.Load() {
		fw.room.Wait()
	}
	return !fw.failed.Load()
}

// finish ends the reader at the end of src: the forwarder writes what was
// staged and queued before it, then returns err (nil at EOF).
func (fw *forwarder) finish(err error) {
	fw.mu.Lock()
	fw.publishLocked()
	fw.end, fw.ended = err, true
	fw.work.Signal()
	fw.mu.Unlock()
}

// abortWith ends the reader on a failure: the forwarder returns err
// without writing what is queued.
func (fw *forwarder) abortWith(err error) {
	fw.mu.Lock()
	fw.abort, fw.ended = err, true
	fw.work.Signal()
	fw.mu.Unlock()
}

// maxReadAhead bounds the bytes a pump holds, recorded and not yet
// relayed, while it reads on.
const maxReadAhead = 1 << 20

// runRecords is what a run's records ask before it moves: the n records
// up to last as durable as barrier, and the calls it puts in flight
// (Upstream's) or the answers it carries (Downstream's) released with it.
type runRecords struct {
	n       int
	last    uint64
	barrier journal.Barrier
	calls   []*call
	answers int
}

// pumpSide is what a pump's reader does that depends on its direction:
// upstreamSide's requests, downstreamSide's answers.
type pumpSide interface {
	// record records the lines of chunk and says what its run waits for.
	record(chunk []byte) (runRecords, error)
	// relay writes the run on, once released, from the reader itself.
	relay(chunk []byte) error
	// fill tells h, the forwarder's copy of the run, what rn says and what
	// the side holds of it (lines to drop, refusals).
	fill(h *heldRun, rn runRecords)
	// reset lets go of what aliases a long line's buffer.
	reset()
}

// yieldEvery is how often a pump's reader yields its scheduler slot.
// The runtime's monitor (sysmon) preempts a goroutine that has held one
// slot for 10 ms without being rescheduled; a reader blocked in read(2) on
// a blocking descriptor (procs.go) cannot be preempted, never parks, and
// so is never rescheduled: at each such preemption its slot is taken
// from its thread, and the monitor goes back to waking every 20 µs for a
// millisecond or more. Yielding well inside those 10 ms keeps the
// monitor asleep: a pass through the scheduler every 5 ms (which may wake
// an idle thread) instead of the monitor's 50 wake-ups a millisecond.
const yieldEvery = 5 * time.Millisecond

// syncs reports whether a run that waits for barrier b waits for an
// fdatasync (journal.Durability: strict before either side, reply before
// the client). A lone run is held back for the bytes already waiting
// behind it, so that their records share its group: its sync, or without
// one its write(2). Without a sync, the probe for waiting bytes (a system
// call) is made only when the read that brought the run filled the
// Reader's room (frame.Reader.Short): after a short read the source was
// empty, and a lone lock-step call would otherwise pay a system call on
// its path to save none.
func (r *Relay) syncs(b journal.Barrier) bool {
	switch r.j.Durability().Level {
	case journal.Strict:
		return true
	case journal.Reply:
		return b == journal.BeforeResponse
	}
	return false
}

// readRuns is both pumps' reader: it reads and records runs of lines from
// src and relays each itself or hands it to fw, until the end of src or
// an error. A run that has nothing ahead of it and no other call in
// flight whose lines could arrive meanwhile is relayed here, as a pump
// without a forwarder would, rather than wake the forwarder for it (a
// thread's wake-up, on a lone call's path). When more bytes are already
// waiting in src, the runs they hold are recorded before the forwarder
// waits for any of them (with calls in flight a client sends them one by
// one), so that one commit group covers them all.
func (r *Relay) readRuns(src io.Reader, fw *forwarder, p pumpSide) {
	defer close(fw.readerDone)
	rd := frame.NewReader(src, readSize, r.cfg.MaxFrame)
	// Nothing uses the Reader's buffer once this returns: a run written
	// from it was written (handOver) or never will be (the forwarder
	// failed). A long line's mapping goes back for another session's.
	defer rd.Release()
	more := readable(src)
	yielded := time.Now()
	counted := relayedBy(p) // bytes.go
	for {
		if now := time.Now(); now.Sub(yielded) > yieldEvery {
			runtime.Gosched()
			yielded = now
		}
		chunk, err := rd.Next()
		if fw.stopped() {
			return
		}
		if len(chunk) > 0 {
			counted.Add(uint64(len(chunk)))
			rn, rerr := p.record(chunk)
			if rerr != nil {
				fw.abortWith(rerr)
				return
			}
			long := len(chunk) > readSize
			switch {
			case fw.idle() && (rn.n == 0 || r.alone(len(rn.calls)) && (more == nil || !r.syncs(rn.barrier) && rd.Short() || !more())):
				if err := r.release(rn.n, rn.last, rn.barrier, rn.calls, rn.answers); err != nil {
					fw.abortWith(err)
					return
				}
				if werr := p.relay(chunk); werr != nil {
					fw.abortWith(werr)
					return
				}
			default:
				h := fw.take(chunk, long)
				if h == nil {
					return
				}
				p.fill(h, rn)
				if !fw.send(h, !long && err == nil && more != nil && more()) {
					return
				}
			}
			if long {
				p.reset()
			}
		}
		if err != nil {
			fw.finish(pumpErr(err))
			return
		}
	}
}
