package journal

import (
	"io"
	"sync"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/segment"
)

// Pre-zeroed space.
//
// An fdatasync after an append must also commit the file's new size (on
// ext4 a journal commit); after a write over blocks already written and
// synced it only writes the data back, which costs less (BENCHMARKS.md
// has the two side by side). So at
// strict and reply, where a sync is on every call's path, a log keeps
// preZeroChunk..2×preZeroChunk bytes of zeros, written and synced by a
// background goroutine, ahead of its content, and records overwrite them.
//
// The content of a log file ends at its last byte that is not NUL: no
// record holds a NUL byte (JSON escapes it), so a run of NULs at the end
// of a file is space not yet used. Readers skip it (ContentReader,
// segment.ReadTail); Open writes over it; Close and sealing truncate it away.

// preZeroChunk is how much the zeroer writes at a time, once less than
// half of it is left ahead of the content.
const preZeroChunk = 1 << 20

// minPreZeroChunk is the least the zeroer writes at a time.
const minPreZeroChunk = 64 << 10

// preZeroChunkFor is the chunk for a log rotated at maxSize (0: never):
// a segment smaller than a MiB gets no more zeros than it will hold.
func preZeroChunkFor(maxSize int64) int64 {
	if maxSize <= 0 {
		return preZeroChunk
	}
	return min(preZeroChunk, max(minPreZeroChunk, maxSize))
}

// trimToContent truncates the pre-zeroed space off f before it is sealed,
// and syncs f if that changed it (or if synced is false).
func trimToContent(f *file, synced bool) error {
	trimmed, err := f.trim()
	if err != nil {
		return err
	}
	synced = synced && !trimmed
	if synced {
		return nil
	}
	return f.Sync()
}

// zeroer appends to a file at its content end, and keeps pre-zeroed space
// ahead of it once preZero is called. One goroutine writes at a time (the
// journal's leader); the zeroer's own goroutine extends the space.
type zeroer struct {
	f vfs.File

	mu     sync.Mutex
	cond   sync.Cond
	end    int64 // content end: where the next write goes
	synced int64 // content below it is synced (as far as pre-zeroing tracks it)
	zeroed int64 // [end, zeroed) holds zeros
	chunk  int64 // 0: no (more) pre-zeroing
	// bounded: content has been written over pre-zeroed space, so no more
	// than maxUnsynced bytes of it may be unsynced; set by preZero, kept
	// when pre-zeroing stops (the space written so far stays).
	bounded bool
	busy    bool // an extension is being written, from zeroed on
	// deferred: an extension is due, and waits for the next syncContent
	// (see writeAt).
	deferred bool
	err      error // its fdatasync failed: every later Sync fails
}

// newZeroer returns the zeroer of a log file opened to append to, its
// content end found past any NUL run at the end.
func newZeroer(f vfs.File) (*zeroer, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end, err := segment.ContentEnd(f, st.Size())
	if err != nil {
		return nil, err
	}
	return newZeroerAt(f, end, st.Size()), nil
}

// newZeroerAt returns the zeroer of f, whose content ends at end and which
// holds zeros from there to size.
func newZeroerAt(f vfs.File, end, size int64) *zeroer {
	z := &zeroer{f: f, end: end, synced: end, zeroed: size}
	z.cond.L = &z.mu
	return z
}

func (z *zeroer) content() int64 {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.end
}

// write writes p at the content end; with pre-zeroing on, it keeps no more
// than maxUnsynced bytes unsynced.
func (z *zeroer) write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		z.mu.Lock()
		on, unsynced := z.bounded, z.end-z.synced
		z.mu.Unlock()
		n := len(p)
		if on {
			if unsynced >= segment.MaxUnsynced {
				if err := z.syncContent(); err != nil {
					return written, err
				}
				unsynced = 0
			}
			n = int(min(int64(n), segment.MaxUnsynced-unsynced))
		}
		k, err := z.writeAt(p[:n])
		written += k
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// syncContent fdatasyncs the file and notes the content it made durable.
// Only the one goroutine that writes calls it (through write or Sync).
func (z *zeroer) syncContent() error {
	z.mu.Lock()
	end, err := z.end, z.err
	z.mu.Unlock()
	if err != nil {
		return err
	}
	if err := z.f.Sync(); err != nil {
		return err
	}
	z.mu.Lock()
	z.synced = max(z.synced, end)
	if z.deferred && z.chunk > 0 && !z.busy {
		z.startExtension()
	}
	z.mu.Unlock()
	return nil
}

// writeAt writes p at the content end. It waits only if p reaches into an
// extension being written.
//
// A write that grows the file (no zeros left ahead of it: the first group
// of a session, since Close trims the zeros away) starts no extension: the
// sync that follows it, on the path of the group's waiters, would write
// the extension's zeros back too, as many as were written by then. The
// extension waits for that sync (syncContent) instead.
func (z *zeroer) writeAt(p []byte) (int, error) {
	z.mu.Lock()
	for z.busy && z.end+int64(len(p)) > z.zeroed {
		z.cond.Wait()
	}
	off := z.end
	grows := off+int64(len(p)) > z.zeroed
	z.mu.Unlock()
	n, err := z.f.WriteAt(p, off)
	if n < len(p) && err == nil {
		err = io.ErrShortWrite
	}
	z.mu.Lock()
	z.end += int64(n)
	z.zeroed = max(z.zeroed, z.end)
	if err == nil && z.chunk > 0 && !z.busy && z.zeroed-z.end < z.chunk/2 {
		if grows {
			z.deferred = true
		} else {
			z.startExtension()
		}
	}
	z.mu.Unlock()
	return n, err
}

// startExtension starts writing the next chunk of zeros. Called with mu
// held, pre-zeroing on and no extension in progress.
func (z *zeroer) startExtension() {
	z.busy, z.deferred = true, false
	go z.extend(z.zeroed, z.chunk)
}

// preZero turns pre-zeroing on: the next write starts an extension.
func (z *zeroer) preZero(chunk int64) {
	z.mu.Lock()
	z.chunk, z.bounded = chunk, true
	z.mu.Unlock()
}

// extend writes n zeros at from and syncs them. A failed write only ends
// pre-zeroing: the records are appended as before. A failed sync fails
// every later Sync: it may have taken the error of a record's page with
// it (the kernel reports a writeback error once per open file).
func (z *zeroer) extend(from, n int64) {
	mark(markZeroStart)
	done, err := z.f.Zero(from, n)
	mark(markZeroEnd)
	var serr error
	if done == n && err != nil {
		err, serr = nil, err
	}
	z.mu.Lock()
	z.busy = false
	z.zeroed = max(z.zeroed, from+done)
	if err != nil || serr != nil {
		z.chunk = 0
	}
	if serr != nil && z.err == nil {
		z.err = serr
	}
	z.cond.Broadcast()
	z.mu.Unlock()
}

// trim ends pre-zeroing and truncates the file to its content; trimmed
// says whether it changed the file's size (which a sync must then make
// durable before the file is sealed).
func (z *zeroer) trim() (trimmed bool, err error) {
	z.mu.Lock()
	z.chunk = 0
	for z.busy {
		z.cond.Wait()
	}
	end := z.end
	z.mu.Unlock()
	st, err := z.f.Stat()
	if err != nil || st.Size() <= end {
		return false, err
	}
	return true, z.f.Truncate(end)
}
