package journal

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/segment"
)

// Rotation (Options.MaxSize). The protocol and the reason for each step are
// in doc.go, "Segments"; in short:
//
//  1. spare (sealer, in the background): create path.next empty, locked,
//     with its directory synced, once the live file is half full;
//  2. swap (leader, between two groups): exchange path and path.next with
//     one renameat2(RENAME_EXCHANGE) and write the next group to the new
//     live file. At reply and interval the old file is fdatasynced first if
//     it holds unsynced records (at strict it never does; at none the
//     sealer syncs it). The leader does nothing else;
//  3. seal (sealer): fdatasync the old file if needed, rename path.next to
//     path.<first>-<last>.jsonl (never replacing a file), sync the
//     directory, hand the segment to the compressor.
//
// A crash between any two steps leaves every record under exactly one of
// path, path.next or a segment name; Open (reconcile) finishes the step.

// stepHook is Options.onStep: called, if set, at each step of sealing and
// compressing.
type stepHook func(step string)

func (h stepHook) at(step string) {
	if h != nil {
		h(step)
	}
}

// The steps of sealing and compressing, as named to Options.onStep, in
// order.
const (
	stepSpare      = "spare"       // spare created, locked, directory synced
	stepSwap       = "swap"        // live file and spare exchanged; the old file is path.next
	stepOldSynced  = "old-synced"  // the old file fdatasynced by the sealer (none)
	stepSealed     = "sealed"      // path.next renamed to its segment name
	stepSealDir    = "seal-dir"    // directory synced (but at none): the seal is durable
	stepZstWritten = "zst-written" // compressed copy written to .zst.tmp, not synced
	stepZstSynced  = "zst-synced"  // .zst.tmp fdatasynced
	stepZstChecked = "zst-checked" // .zst.tmp re-read and found equal to the segment
	stepZstRenamed = "zst-renamed" // .zst.tmp renamed to .zst
	stepZstDir     = "zst-dir"     // directory synced: the compressed copy is durable
	stepZstRemoved = "zst-removed" // the plain segment removed
)

// Steps lists the steps, for the crash tests.
var steps = []string{stepSpare, stepSwap, stepOldSynced, stepSealed, stepSealDir,
	stepZstWritten, stepZstSynced, stepZstChecked, stepZstRenamed, stepZstDir, stepZstRemoved}

// rotator seals the live file into segments. The leader calls afterWrite;
// one background goroutine (the sealer) makes spares and seals.
type rotator struct {
	j     *Journal
	fs    logFS
	path  string
	dir   string
	spare string // path + spareExt
	max   int64  // 0: no rotation (the rotator only compresses)
	step  stepHook

	// Owned by the leader, like Journal.f.
	size  int64  // bytes in the live file
	first uint64 // seq of the live file's first record
	asked bool   // a spare was asked for since the last swap

	mu       sync.Mutex
	cond     sync.Cond
	ready    *file // the spare: empty, locked, named r.spare; nil until made
	tasks    []sealTask
	busy     bool // a seal is queued or running (r.spare names the old file)
	unsynced bool // the old file's last records wait for the sealer's fdatasync
	stopped  bool // a step failed: the journal has failed closed
	closing  bool
	done     chan struct{}

	z *compressor // nil without Options.Compress
}

type sealTask struct {
	makeSpare   bool // make a spare; otherwise seal old
	old         *file
	first, last uint64
	synced      bool // old needs no fdatasync
	renamed     bool // old is already under its segment name (no RENAME_EXCHANGE)
}

func newRotator(j *Journal, opts Options, fsys logFS, live *file, first uint64) (*rotator, error) {
	r := &rotator{j: j, fs: fsys, path: j.path, dir: filepath.Dir(j.path), spare: j.path + segment.SpareExt,
		max: opts.MaxSize, first: first, step: opts.onStep, done: make(chan struct{})}
	r.cond.L = &r.mu
	size, err := live.Size()
	if err != nil {
		return nil, &IOError{Op: "stat", Path: j.path, Err: err}
	}
	r.size = size
	if r.max > 0 {
		// Refuse now rather than fail closed at the first rotation: the
		// directory must take new files (the spare, the segments).
		if err := unix.Access(r.dir, unix.W_OK|unix.X_OK); err != nil {
			return nil, &IOError{Op: "rotate: directory not writable", Path: r.dir, Err: err}
		}
	}
	if opts.Compress || opts.Index != nil && r.max > 0 {
		r.z = newCompressor(fsys, opts.Logf, opts.onStep)
		r.z.index, r.z.indexOnly = opts.Index, !opts.Compress
	}
	if opts.Compress {
		entries, err := segment.Siblings(fsys, j.path)
		if err != nil {
			return nil, &IOError{Op: "readdir", Path: r.dir, Err: err}
		}
		// Segments sealed before this session and not yet compressed,
		// oldest first; one whose .zst exists is checked and finished.
		slices.SortFunc(entries, func(a, b segment.Sibling) int { return cmp.Compare(a.Seg.First, b.Seg.First) })
		for _, e := range entries {
			if !e.Tmp && !e.Seg.Compressed {
				r.z.add(e.Path)
			}
		}
	}
	go r.run()
	return r, nil
}

// afterWrite is called by the leader after each group is written and, if
// asked, synced, with j.mu not held. n bytes went to the live file, whose
// last record is now last; synced says whether every record in the file is
// fdatasynced. It swaps in the spare once the live file is full; when no
// spare is ready yet (or the previous seal is still running) it asks for
// one and lets the file grow: rotation never makes the hot path wait.
func (r *rotator) afterWrite(n int, last uint64, synced bool) error {
	r.size += int64(n)
	if r.max <= 0 {
		return nil
	}
	if r.size < r.max {
		if r.size >= r.max/2 {
			r.askSpare()
		}
		return nil
	}
	r.mu.Lock()
	spare := r.ready
	if spare == nil || r.busy || r.stopped {
		r.mu.Unlock()
		r.askSpare()
		return nil
	}
	r.ready, r.busy = nil, true
	r.mu.Unlock()
	return r.swap(spare, last, synced)
}

func (r *rotator) askSpare() {
	if r.asked {
		return
	}
	r.asked = true
	r.enqueue(sealTask{makeSpare: true})
}

func (r *rotator) enqueue(t sealTask) {
	r.mu.Lock()
	r.tasks = append(r.tasks, t)
	if !t.makeSpare && !t.synced {
		r.unsynced = true
	}
	r.cond.Broadcast()
	r.mu.Unlock()
}

// swap makes the spare the live file (step 2). Called by the leader.
func (r *rotator) swap(spare *file, last uint64, synced bool) error {
	j := r.j
	old := j.f
	// At reply a later Wait may need a record of the old file durable, and
	// at interval the next background sync covers only the new file: make
	// the old one durable now, before the new file can be synced past it.
	// One fdatasync, once per segment; at strict the file is synced already.
	if !synced && j.dur.Level >= Interval {
		if err := old.Sync(); err != nil {
			return &IOError{Op: "fdatasync", Path: r.path, Err: err}
		}
		synced = true
	}
	t := sealTask{old: old, first: r.first, last: last, synced: synced}
	err := r.fs.Rename(r.spare, r.path, vfs.RenameExchange)
	if errors.Is(err, errors.ErrUnsupported) {
		// No RENAME_EXCHANGE here: seal under the segment name first, then
		// move the spare in. For a moment path does not exist; a crash
		// there leaves the spare holding the newest records, which Open
		// seals in turn.
		if err = r.fs.Rename(r.path, segment.Name(r.path, t.first, t.last), vfs.RenameNoReplace); err == nil {
			err = r.fs.Rename(r.spare, r.path, vfs.RenameReplace)
		}
		t.renamed = true
	}
	if err != nil {
		r.mu.Lock()
		r.busy = false
		r.mu.Unlock()
		spare.Close()
		return &IOError{Op: "rotate", Path: r.path, Err: err}
	}
	j.f = spare
	if j.dur.Level >= Reply {
		spare.preZero(preZeroChunkFor(r.max))
	}
	r.size, r.first, r.asked = 0, last+1, false
	r.step.at(stepSwap)
	r.enqueue(t)
	return nil
}

// run is the sealer: it runs the tasks in order until close.
func (r *rotator) run() {
	defer close(r.done)
	for {
		r.mu.Lock()
		for len(r.tasks) == 0 && !r.closing {
			r.cond.Wait()
		}
		if len(r.tasks) == 0 {
			r.mu.Unlock()
			return
		}
		t := r.tasks[0]
		r.tasks = slices.Delete(r.tasks, 0, 1)
		// A spare is not needed once one is ready, nor made while a seal is
		// queued: path.next names the old file until the seal, which makes
		// the next spare itself.
		skip := r.stopped || t.makeSpare && (r.closing || r.ready != nil || r.busy)
		r.mu.Unlock()
		var err error
		switch {
		case skip:
			if t.old != nil {
				t.old.Close()
			}
		case t.makeSpare:
			err = r.makeSpare()
		default:
			err = r.seal(t)
		}
		r.mu.Lock()
		if err != nil {
			r.stopped, r.busy, r.unsynced = true, false, false
		}
		r.cond.Broadcast() // for waitIdle
		r.mu.Unlock()
		if err != nil {
			r.j.fail(err)
		}
	}
}

// waitIdle returns once no task is queued or running. For tests, which
// want segments of an exact size.
func (r *rotator) waitIdle() {
	r.mu.Lock()
	for len(r.tasks) > 0 || r.busy {
		r.cond.Wait()
	}
	r.mu.Unlock()
}

// makeSpare is step 1 on its own: the first spare of a session.
func (r *rotator) makeSpare() error {
	f, err := r.createSpare()
	if err != nil {
		return err
	}
	if err := r.syncDir(); err != nil {
		f.Close()
		return err
	}
	r.spareReady(f)
	return nil
}

// syncDir makes the directory's new entries durable: the spare, before a
// record is written to it, and the seal. At none it does nothing: nothing
// is promised across a power loss there, and what a lost rename or spare
// leaves behind, Open finishes. (Sealed segments are fdatasynced at every
// level, before they are named: a power loss never leaves a gap inside a
// log.)
func (r *rotator) syncDir() error {
	if r.j.dur.Level == None {
		return nil
	}
	if err := r.fs.SyncDir(r.dir); err != nil {
		return &IOError{Op: "fsync directory", Path: r.dir, Err: err}
	}
	return nil
}

// createSpare creates the spare; its directory still needs a sync.
func (r *rotator) createSpare() (*file, error) {
	f, err := r.fs.CreateLocked(r.spare)
	if err != nil {
		return nil, &IOError{Op: "create spare", Path: r.spare, Err: err}
	}
	return f, nil
}

func (r *rotator) spareReady(f *file) {
	r.step.at(stepSpare)
	r.mu.Lock()
	r.ready = f
	r.mu.Unlock()
}

// seal is step 3.
func (r *rotator) seal(t sealTask) error {
	// Pre-zeroed space is never sealed: a segment ends with its content.
	if err := trimToContent(t.old, t.synced); err != nil {
		t.old.Close()
		return &IOError{Op: "seal: truncate or fdatasync", Path: r.spare, Err: err}
	}
	if !t.synced {
		r.mu.Lock()
		r.unsynced = false
		r.cond.Broadcast()
		r.mu.Unlock()
		r.step.at(stepOldSynced)
	}
	name := segment.Name(r.path, t.first, t.last)
	if !t.renamed {
		if err := r.fs.Rename(r.spare, name, vfs.RenameNoReplace); err != nil {
			t.old.Close()
			return &IOError{Op: "seal", Path: name, Err: err}
		}
		r.step.at(stepSealed)
	}
	// The next spare now, so that one directory sync makes both it and the
	// seal durable (step 1 of the next rotation, folded into step 4): a
	// seal costs one fdatasync at none and one directory sync elsewhere.
	r.mu.Lock()
	want := r.max > 0 && !r.closing && r.ready == nil
	r.mu.Unlock()
	var spare *file
	if want {
		var err error
		if spare, err = r.createSpare(); err != nil {
			t.old.Close()
			return err
		}
	}
	if err := r.syncDir(); err != nil {
		t.old.Close()
		if spare != nil {
			spare.Close()
		}
		return err
	}
	r.step.at(stepSealDir)
	if spare != nil {
		r.spareReady(spare)
	}
	t.old.Close()
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
	if r.z != nil {
		r.z.add(name) // compressed and indexed, or indexed, in the background
	}
	return nil
}

// waitSynced returns once no old file waits for the sealer's fdatasync.
func (r *rotator) waitSynced() {
	r.mu.Lock()
	for r.unsynced && !r.stopped {
		r.cond.Wait()
	}
	r.mu.Unlock()
}

// close finishes the queued seals, removes an unused spare and waits for
// the compressor to finish the queued segments. Called by Journal.Close
// after the last write.
func (r *rotator) close() {
	r.mu.Lock()
	r.closing = true
	r.cond.Broadcast()
	r.mu.Unlock()
	<-r.done
	if r.ready != nil {
		// A crash would leave it behind instead, for Open to remove.
		r.ready.Close()
		r.fs.Remove(r.spare)
		r.ready = nil
	}
	if r.z != nil {
		r.z.close()
	}
}

// reconcile finishes a rotation a crash interrupted, before anything is
// appended, under the lock of the live file f; it returns the live file
// afterwards (another file if the spare held the newest records). It also
// removes unfinished compressed copies, which are never the only copy of
// anything. What it finds is one of:
//
//   - no spare, or an empty one (removed): nothing to do;
//   - a spare with the older records (the crash came after the swap, before
//     the seal): sync it and seal it under its segment name;
//   - a spare with the newer records (only after a power loss undid the
//     swap): swap again, then seal the old file as above.
//
// If the live file is empty the spare is sealed: a segment may end anywhere.
func reconcile(fsys logFS, path string, f *file) (*file, error) {
	dir := filepath.Dir(path)
	spare := path + segment.SpareExt
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return f, &IOError{Op: "readdir", Path: dir, Err: err}
	}
	changed := false
	if slices.Contains(names, filepath.Base(spare)) {
		sf, err := fsys.OpenAppend(spare)
		if errors.Is(err, ErrLocked) {
			return f, fmt.Errorf("%w: %s", ErrLocked, spare) // a running aegis rotates this log
		}
		if err != nil {
			return f, &IOError{Op: "open", Path: spare, Err: err}
		}
		if f, err = reconcileSpare(fsys, path, f, sf); err != nil {
			return f, err
		}
		changed = true
	}
	entries, err := segment.Siblings(fsys, path)
	if err != nil {
		return f, &IOError{Op: "readdir", Path: dir, Err: err}
	}
	for _, e := range entries {
		if e.Tmp {
			if err := fsys.Remove(e.Path); err != nil {
				return f, &IOError{Op: "remove", Path: e.Path, Err: err}
			}
			changed = true
		}
	}
	if changed {
		if err := fsys.SyncDir(dir); err != nil {
			return f, &IOError{Op: "fsync directory", Path: dir, Err: err}
		}
	}
	return f, nil
}

func reconcileSpare(fsys logFS, path string, f, sf *file) (*file, error) {
	spare := path + segment.SpareExt
	sEmpty, err := isEmpty(sf)
	if err != nil {
		sf.Close()
		return f, &IOError{Op: "stat", Path: spare, Err: err}
	}
	if sEmpty {
		sf.Close()
		if err := fsys.Remove(spare); err != nil {
			return f, &IOError{Op: "remove", Path: spare, Err: err}
		}
		return f, nil
	}
	sFirst, ok := fileFirstSeq(sf)
	if !ok {
		sf.Close()
		return f, fmt.Errorf("%w: %s holds no record to tell where it belongs", ErrNotLog, spare)
	}
	old := sf
	if lEmpty, err := isEmpty(f); err != nil {
		sf.Close()
		return f, &IOError{Op: "stat", Path: path, Err: err}
	} else if !lEmpty {
		lFirst, ok := fileFirstSeq(f)
		switch {
		case !ok:
			sf.Close()
			return f, fmt.Errorf("%w: %s: first lines are not records", ErrNotLog, path)
		case lFirst == sFirst:
			sf.Close()
			return f, fmt.Errorf("%w: %s and %s both start at seq %d", ErrNotLog, path, spare, sFirst)
		case sFirst > lFirst:
			// The spare is newer: make it the live file again.
			err := fsys.Rename(spare, path, vfs.RenameExchange)
			if errors.Is(err, errors.ErrUnsupported) {
				var t segment.Tail
				if t, err = segment.ReadTail(f, path, true); err == nil && t.Intact {
					if err = trimToContent(f, false); err == nil {
						err = fsys.Rename(path, segment.Name(path, lFirst, t.Seq), vfs.RenameNoReplace)
					}
					if err == nil {
						err = fsys.Rename(spare, path, vfs.RenameReplace)
					}
					if err == nil {
						f.Close()
						return sf, nil
					}
				} else if err == nil {
					err = fmt.Errorf("%w: no intact last line", ErrNotLog)
				}
			}
			if err != nil {
				sf.Close()
				return f, &IOError{Op: "rotate", Path: path, Err: err}
			}
			old, f = f, sf
			sFirst = lFirst
		}
	}
	defer old.Close()
	t, err := segment.ReadTail(old, spare, true)
	if err != nil {
		return f, err
	}
	if !t.Intact {
		return f, fmt.Errorf("%w: %s holds no intact line", ErrNotLog, spare)
	}
	if err := trimToContent(old, false); err != nil {
		return f, &IOError{Op: "truncate or fdatasync", Path: spare, Err: err}
	}
	name := segment.Name(path, sFirst, t.Seq)
	if err := fsys.Rename(spare, name, vfs.RenameNoReplace); err != nil {
		return f, &IOError{Op: "seal", Path: name, Err: err}
	}
	return f, nil
}
