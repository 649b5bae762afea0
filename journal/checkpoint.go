package journal

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/internal/atomicfile"
	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// HistoryExt ends the checkpoint history beside a checkpoint file.
const HistoryExt = ".history"

// DefaultCheckpointInterval is how often a checkpoint is written while
// records are written, unless CheckpointOptions.Interval says otherwise.
const DefaultCheckpointInterval = time.Second

// CheckpointOptions configure the checkpoints of Options.Checkpoint.
type CheckpointOptions struct {
	// File, when set, is kept holding a signed checkpoint of the log's
	// Merkle tree (package tlog), replaced atomically; every checkpoint
	// written to it is also appended to File+HistoryExt. Default: none,
	// and no tree is kept.
	File string
	// Every writes a checkpoint once Every records have been written since
	// the last (at most one per MinCheckpointGap). Default 0: by Interval
	// alone.
	Every int
	// Interval writes a checkpoint every Interval while records are
	// written. Default DefaultCheckpointInterval; negative: never (only
	// at Close, with head file updates and by Every).
	Interval time.Duration
	// Sink, when set, is handed every checkpoint once it is in File
	// (package witness submits them to witnesses). Default: none.
	Sink CheckpointSink
}

// A CheckpointSink receives the checkpoints the journal writes, from the
// checkpointer's goroutine, off the records' path: Offer must not block
// (it delays the next checkpoint, and the last one delays Close). note
// is the signed note as written to the file, the sink's to keep; c is
// what it says.
type CheckpointSink interface {
	Offer(note []byte, c tlog.Checkpoint)
}

// checkpointer keeps CheckpointOptions.File (doc.go, "Checkpoints"). Its
// goroutine writes a checkpoint when asked (kick: Every records written,
// a head file update), every Interval, and at close; each write takes the
// tree of the records made durable so far, so a checkpoint never names a
// record a power loss could take back, and writes nothing if the tree has
// not grown since the last one. A failure fails the journal closed, like
// any audit I/O, but for a want of file descriptors (a PublishError):
// that is said, and the next checkpoint tries again.
type checkpointer struct {
	j        *Journal
	fs       logFS
	path     string
	every    uint64
	interval time.Duration
	sink     CheckpointSink
	kick     chan struct{} // buffered 1
	stop     chan struct{}
	done     chan struct{}

	// Owned by the goroutine, then by close.
	hist     *file
	signer   note.Signer
	last     uint64 // tree size of the last checkpoint written
	wrote    bool
	histLast uint64 // tree size of the last checkpoint in the history
	histAny  bool
	pub      publisher
	buf      []byte
}

func newCheckpointer(j *Journal, opts CheckpointOptions, fsys logFS, logf func(string, ...any)) (*checkpointer, error) {
	if err := checkReplaceable(opts.File, "checkpoint file"); err != nil {
		return nil, err
	}
	hist, err := fsys.OpenAppend(opts.File + HistoryExt)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, opts.File+HistoryExt)
		}
		return nil, &IOError{Op: "open", Path: opts.File + HistoryExt, Err: err}
	}
	interval := opts.Interval
	if interval == 0 {
		interval = DefaultCheckpointInterval
	}
	c := &checkpointer{j: j, fs: fsys, path: opts.File, every: uint64(max(opts.Every, 0)), interval: interval, sink: opts.Sink,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), hist: hist, pub: publisher{what: "checkpoint file", logf: logf}}
	go c.run()
	return c, nil
}

// written is called by the leader, with j.mu held, after a group: it asks
// for a checkpoint once every records have been written since the last.
// It never blocks.
func (c *checkpointer) written(n uint64, since uint64) {
	if c.every > 0 && n-since >= c.every {
		c.poke()
	}
}

// poke asks the goroutine for a checkpoint; it never blocks.
func (c *checkpointer) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	var tick <-chan time.Time
	if c.interval > 0 {
		t := time.NewTicker(c.interval)
		defer t.Stop()
		tick = t.C
	}
	var last time.Time
	for {
		select {
		case <-c.stop:
			return
		case <-tick:
		case <-c.kick:
		}
		// At most one checkpoint per MinCheckpointGap: asks in between
		// are answered by the one after the gap, which covers them.
		if d := time.Until(last.Add(MinCheckpointGap)); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-c.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		last = time.Now()
		if err := c.pub.outcome(c.write()); err != nil {
			c.j.fail(err)
			return
		}
	}
}

// MinCheckpointGap is the least time between two checkpoints written
// while records are written (CheckpointOptions.Every, Interval, head file
// updates; the one at Close is not held back). Each checkpoint costs
// three flushes to the disk (the history's fdatasync, the new file's, its
// directory's), which share the device with the log's own syncs: written
// after every commit group, as fast as the disk allows, they slow a
// strict call's fdatasync measurably (BenchmarkCheckpoint); ten a second
// do not, and are more than any reader of them needs.
const MinCheckpointGap = 100 * time.Millisecond

// abort stops the goroutine and closes the history without writing: for
// an Open that fails after the checkpointer started.
func (c *checkpointer) abort() {
	close(c.stop)
	<-c.done
	c.hist.Close()
}

// close stops the goroutine and writes the final checkpoint.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	var err error
	if c.j.Err() == nil {
		err = c.pub.outcome(c.write())
	}
	if cerr := c.hist.Close(); err == nil && cerr != nil {
		err = &IOError{Op: "close", Path: c.path + HistoryExt, Err: cerr}
	}
	return err
}

func (c *checkpointer) write() error {
	t, origin, err := c.j.durableTree()
	if err != nil || t == nil || t.Size() == 0 || c.wrote && t.Size() == c.last {
		return err
	}
	if c.signer == nil {
		if c.signer, err = newRootNoteSigner(origin, c.j.key); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	c.j.cpWriting.Add(1) // for tests and benchmarks
	msg, err := tlog.Sign(tlog.Checkpoint{Origin: origin, Size: t.Size(), Root: t.Root()}, c.signer)
	if err != nil {
		// The root key failed to sign (an ssh-agent gone): an audit
		// failure, as a failed write is.
		return &IOError{Op: "sign checkpoint", Path: c.path, Err: err}
	}
	// The history first: a checkpoint file never holds one the history
	// lacks. Once only: a checkpoint whose file could not be replaced for
	// want of a descriptor is in the history already when tried again.
	if !c.histAny || c.histLast != t.Size() {
		n, err := c.hist.Write(msg)
		if err == nil && n < len(msg) {
			err = errors.New("short write")
		}
		if err == nil {
			err = c.hist.Sync()
		}
		if err != nil {
			return &IOError{Op: "append", Path: c.path + HistoryExt, Err: err}
		}
		c.histLast, c.histAny = t.Size(), true
	}
	if err := replaceFile(c.fs, c.path, msg); err != nil {
		return err
	}
	c.last, c.wrote = t.Size(), true
	if c.sink != nil {
		c.sink.Offer(msg, tlog.Checkpoint{Origin: origin, Size: t.Size(), Root: t.Root()})
	}
	return nil
}

// replaceFile replaces path with data atomically and durably
// (atomicfile.Replace: write path.tmp, fdatasync, rename over path, sync
// the directory), through fsys so that tests inject faults at each step.
// The head file and the checkpoint file are replaced this way. The
// temporary file has one known name, truncated if a crash left it, so
// that crashes leave no litter.
//
// Opening path.tmp or the directory may fail for want of a file
// descriptor (EMFILE, ENFILE): that says nothing of the log or of the
// storage, only that the process is out of descriptors for a moment
// (clients' connections; wrap --listen keeps descriptors in reserve). It
// is a *PublishError, not an IOError: the file keeps its last content,
// the journal goes on, and the next replacement writes a new path.tmp
// (never syncing again a file whose sync failed). Every other failure is
// the storage's and an IOError.
func replaceFile(fsys logFS, path string, data []byte) error {
	dir, name := filepath.Split(path)
	tmp := path + segment.TmpExt
	err := atomicfile.Replace(journalDir{fsys, filepath.Clean(dir)}, name, data, atomicfile.Options{Temp: name + segment.TmpExt})
	var ae *atomicfile.Error
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	switch ae.Op {
	case atomicfile.OpCreate:
		if outOfDescriptors(ae.Err) {
			return &PublishError{Op: "create", Path: tmp, Err: ae.Err}
		}
		return &IOError{Op: "create", Path: tmp, Err: ae.Err}
	case atomicfile.OpRename:
		return &IOError{Op: "rename", Path: path, Err: ae.Err}
	case atomicfile.OpSync:
		if outOfDescriptors(ae.Err) {
			// The rename is done but may not survive a power loss: the
			// next replacement syncs the folder again.
			return &PublishError{Op: "open directory", Path: filepath.Dir(path), Err: ae.Err}
		}
		return &IOError{Op: "fsync directory", Path: filepath.Dir(path), Err: ae.Err}
	default:
		return &IOError{Op: "write", Path: tmp, Err: ae.Err}
	}
}

// journalDir is the folder dir of fsys as an atomicfile.Dir. Its Create
// always truncates (logFS.Create, mode 0600): replaceFile names its
// temporary file, so Replace never asks for an exclusive one.
type journalDir struct {
	fs  logFS
	dir string
}

func (d journalDir) Create(name string, _ fs.FileMode, _ bool) (atomicfile.File, error) {
	return d.fs.Create(filepath.Join(d.dir, name))
}

func (d journalDir) Rename(from, to string) error {
	return d.fs.Rename(filepath.Join(d.dir, from), filepath.Join(d.dir, to), vfs.RenameReplace)
}

func (d journalDir) Remove(name string) error { return d.fs.Remove(filepath.Join(d.dir, name)) }

func (d journalDir) Sync() error { return d.fs.SyncDir(d.dir) }

// PublishError is a head file or checkpoint file that could not be
// replaced for want of a file descriptor (replaceFile). It does not match
// ErrIO: the log is intact and goes on, and the next replacement tries
// again.
type PublishError struct {
	Op, Path string
	Err      error
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("journal: %s %s: %v", e.Op, e.Path, e.Err)
}

func (e *PublishError) Unwrap() error { return e.Err }

// outOfDescriptors reports whether err is the process's or the system's
// want of file descriptors.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// publisher says, for a file the journal replaces (what), when a
// replacement fails for want of descriptors and when one succeeds again:
// a line each, however many attempts fail in between. Owned by one
// goroutine.
type publisher struct {
	what   string
	logf   func(string, ...any)
	failed int // replacements failed since the last one that succeeded
}

// outcome returns err unless it is a *PublishError, which it reports
// instead.
func (p *publisher) outcome(err error) error {
	var pe *PublishError
	switch {
	case err == nil:
		if p.failed > 0 && p.logf != nil {
			p.logf("%s written again, after %d attempts that found no file descriptor", p.what, p.failed)
		}
		p.failed = 0
		return nil
	case errors.As(err, &pe):
		if p.failed == 0 && p.logf != nil {
			p.logf("%s not replaced, the log goes on and the next one tries again: %v", p.what, err)
		}
		p.failed++
		return nil
	}
	return err
}

// durableTree returns a copy of the tree of every record written, once
// they are synced, and the log's origin: a tree no power loss can take
// back. Where records are written and not yet synced (reply, interval,
// none) it syncs them as a leader does, writing what is queued with them;
// where every written record is synced (strict, between groups) it does
// no I/O and leaves queued records to their own leader. t is nil for a
// log without a tree.
func (j *Journal) durableTree() (t *tlog.Tree, origin string, err error) {
	j.mu.Lock()
	for j.flushing {
		j.cond.Wait()
	}
	if j.err == nil && j.synced < j.written {
		j.flush(true)
	}
	if j.err == nil && j.tree != nil {
		t, origin = j.tree.Clone(), j.origin
		j.cpSince = j.written
	}
	err = j.err
	j.mu.Unlock()
	if err == nil && j.rot != nil {
		j.rot.waitSynced() // the old file of a swap, at none
	}
	return t, origin, err
}

// rebuildTree reads the log at path once, every segment of it, and
// returns the tree of its leaves (package tlog's Chain) and its origin;
// the tree must hold exactly records leaves, the records the journal
// continues from, or the log is one whose chain package tlog cannot
// follow and no honest checkpoint can be made of it.
func rebuildTree(fsys logFS, path string, records uint64, last *tlog.Checkpoint) (*tlog.Tree, string, error) {
	if last != nil && last.Size > records {
		return nil, "", fmt.Errorf("%w: %s holds %d records, but its last checkpoint names %d: it was cut, or rolled back to an older copy; it is not continued", ErrRolledBack, path, records, last.Size)
	}
	if records == 0 {
		return tlog.NewTree(), "", nil
	}
	var atLast tlog.Hash // the root when the tree was last's size
	set, err := segment.SetsFS(fsys.fs, []string{path}, true)
	if err != nil {
		return nil, "", &IOError{Op: "read for checkpoints", Path: path, Err: err}
	}
	if len(set) != 1 {
		return nil, "", fmt.Errorf("%w: %s: %d logs where one was expected", ErrNotLog, path, len(set))
	}
	t, origin, err := tlog.BuildTree(set[0], records, func(t *tlog.Tree) {
		if last != nil && t.Size() == last.Size {
			atLast = t.Root()
		}
	})
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// A file that cannot be read says nothing of the log.
		return nil, "", &IOError{Op: "read for checkpoints", Path: path, Err: err}
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: its tree cannot be built for checkpoints: %v", ErrNotLog, path, err)
	}
	if t.Size() != records {
		return nil, "", fmt.Errorf("%w: %s: its hash chain holds %d records, its last record is seq %d; no checkpoint can be made of it", ErrNotLog, path, t.Size(), records-1)
	}
	if last != nil && last.Size > 0 && (last.Origin != origin || atLast != last.Root) {
		return nil, "", fmt.Errorf("%w: %s differs from its last checkpoint (%s, %d records): a record the checkpoint covers was rewritten, or the log was replaced; it is not continued", ErrRolledBack, path, last.Origin, last.Size)
	}
	return t, origin, nil
}

// lastCheckpoint returns the checkpoint in file, signed with pub, that a
// continued log must extend; nil if there is none yet. A file that holds
// no checkpoint of this key is refused: it is not this log's. The file is
// read through fsys; one that cannot be read is an IOError, which says
// nothing of the log.
func lastCheckpoint(fsys logFS, file string, pub ed25519.PublicKey) (*tlog.Checkpoint, error) {
	if _, err := os.Lstat(file); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	notOurs := func(err error) error {
		return fmt.Errorf("%w: %v: no checkpoint of this key to check the log against", ErrRolledBack, err)
	}
	// Checked before it is opened: a FIFO would block.
	if err := regular.Check(file, nil); errors.Is(err, ErrNotRegular) {
		return nil, notOurs(fmt.Errorf("%w; a checkpoint file must be a regular file", err))
	} else if err != nil {
		return nil, &IOError{Op: "read", Path: file, Err: err}
	}
	f, err := fsys.OpenRead(file)
	if err != nil {
		return nil, &IOError{Op: "read", Path: file, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, 0, tlog.MaxCheckpointFile+1))
	if err != nil {
		return nil, &IOError{Op: "read", Path: file, Err: err}
	}
	if len(data) > tlog.MaxCheckpointFile {
		return nil, notOurs(fmt.Errorf("%s holds more than %d bytes", file, tlog.MaxCheckpointFile))
	}
	c, err := tlog.ParseCheckpointFile(file, data, pub)
	if err != nil {
		return nil, notOurs(err)
	}
	return &c, nil
}
