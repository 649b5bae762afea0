package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// compressor compresses sealed segments, one at a time, in its own
// goroutine (Options.Compress), and writes the index entry of each
// (Options.Index) for the file that stays; without Compress it only
// indexes them (indexOnly). Its failures never fail the journal: the
// plain segment stays, complete and verifiable; it reports them through
// Options.Logf and compresses nothing more in this session.
type compressor struct {
	fs   logFS
	logf func(format string, args ...any)
	step stepHook
	// index (Options.Index) and indexOnly are set, if at all, before the
	// first add: the goroutine reads them only after taking a path from
	// the queue under mu.
	index     *tlog.Index
	indexOnly bool // compress nothing

	mu      sync.Mutex
	cond    sync.Cond
	queue   []string
	closing bool
	started bool // the goroutine runs: started by the first add
	done    chan struct{}

	// Owned by the goroutine.
	enc        *zstd.Encoder
	dec        *zstd.Decoder
	bufA, bufB []byte
}

func newCompressor(fsys logFS, logf func(string, ...any), step stepHook) *compressor {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	z := &compressor{fs: fsys, logf: logf, step: step, done: make(chan struct{})}
	z.cond.L = &z.mu
	return z
}

// add queues a sealed segment (its plain path). The goroutine, and the
// thread it holds, start with the first: a session that seals nothing has
// neither.
func (z *compressor) add(path string) {
	z.mu.Lock()
	z.queue = append(z.queue, path)
	if !z.started {
		z.started = true
		go z.run()
	}
	z.cond.Broadcast()
	z.mu.Unlock()
}

// close waits for the queued segments to be compressed. No add follows it.
func (z *compressor) close() {
	z.mu.Lock()
	z.closing = true
	started := z.started
	z.cond.Broadcast()
	z.mu.Unlock()
	if started {
		<-z.done
	}
}

func (z *compressor) run() {
	defer close(z.done)
	// Compression and indexing are the CPU-heavy things the journal does,
	// and they can always wait: run them on a thread of its own at the lowest priority, so
	// that on a small machine it takes the CPU only when the relay leaves
	// it idle. (The encoder and decoder run in this goroutine: concurrency
	// 1. A thread locked to a goroutine that returns is ended, not reused.)
	runtime.LockOSThread()
	lowerThreadPriority()
	defer func() {
		if z.enc != nil {
			z.enc.Close()
		}
		if z.dec != nil {
			z.dec.Close()
		}
	}()
	failed := false
	for {
		z.mu.Lock()
		for len(z.queue) == 0 && !z.closing {
			z.cond.Wait()
		}
		if len(z.queue) == 0 {
			z.mu.Unlock()
			return
		}
		path := z.queue[0]
		z.queue = z.queue[1:]
		z.mu.Unlock()
		if failed || z.indexOnly {
			addIndex(z.index, path)
			continue
		}
		if err := z.one(path); err != nil {
			failed = true
			z.fs.Remove(path + segment.CompressedExt + segment.TmpExt)
			z.logf("compressing %s: %v; it stays uncompressed (and so do later segments until the next start)", path, err)
			addIndex(z.index, path)
			continue
		}
		addIndex(z.index, path+segment.CompressedExt)
	}
}

// addIndex writes the index entry of the sealed segment at path, if x is
// set: here, on the low-priority thread, because it reads the whole
// segment. The index is a cache that prove fills in and checks against
// the signed checkpoint anyway: an entry not written fails nothing (nor
// does a segment that has none: one rewritten, found among an earlier
// session's segments).
func addIndex(x *tlog.Index, path string) {
	if x == nil {
		return
	}
	x.Add(path)
}

// one compresses the sealed segment path into path.zst. In order, each
// step leaving at least one complete copy if a crash stops it there:
//
//  1. write path.zst.tmp (a crash leaves a partial .tmp, removed by Open);
//  2. fdatasync it and re-read it, comparing every byte with path;
//  3. rename it to path.zst (never replacing one) and sync the directory:
//     both copies now exist and verify checks them against each other;
//  4. remove path.
//
// A path.zst found at the start (a crash between 3 and 4) is checked
// against path before path is removed.
func (z *compressor) one(path string) error {
	zpath := path + segment.CompressedExt
	tmp := zpath + segment.TmpExt
	dir := filepath.Dir(path)
	src, err := z.fs.OpenRead(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // compressed and removed already
	}
	if err != nil {
		return err
	}
	defer src.Close()
	size, err := src.Size()
	if err == nil {
		// (A segment sealed without RENAME_EXCHANGE is named before its
		// pre-zeroed space is cut off: a crash may leave it.)
		size, err = segment.ContentEnd(src, size)
	}
	if err != nil {
		return err
	}
	if zf, err := z.fs.OpenRead(zpath); err == nil {
		same, err := z.same(zf, src, size)
		zf.Close()
		if err != nil {
			return err
		}
		if !same {
			return fmt.Errorf("%s exists and differs from it; both kept", zpath)
		}
	} else {
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := z.write(tmp, src, size); err != nil {
			return err
		}
		if err := z.fs.Rename(tmp, zpath, vfs.RenameNoReplace); err != nil {
			return err
		}
		z.step.at(stepZstRenamed)
		if err := z.fs.SyncDir(dir); err != nil {
			return err
		}
		z.step.at(stepZstDir)
	}
	if err := z.fs.Remove(path); err != nil {
		return err
	}
	z.step.at(stepZstRemoved)
	// The removal needs no sync of its own: undone by a power loss, it
	// leaves two equal copies, which verify accepts and Open finishes.
	return nil
}

// write makes tmp the compressed copy of src, synced and re-read.
func (z *compressor) write(tmp string, src *file, size int64) error {
	if z.enc == nil {
		var err error
		z.enc, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(segment.ZstdWindow),
			zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			return err
		}
	}
	dst, err := z.fs.Create(tmp)
	if err != nil {
		return err
	}
	defer dst.Close()
	z.enc.ResetContentSize(dst, size)
	if _, err := z.enc.ReadFrom(io.NewSectionReader(src, 0, size)); err != nil {
		return err
	}
	if err := z.enc.Close(); err != nil {
		return err
	}
	z.step.at(stepZstWritten)
	if err := dst.Sync(); err != nil {
		return err
	}
	z.step.at(stepZstSynced)
	same, err := z.same(dst, src, size)
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("%s does not decompress to the segment", tmp)
	}
	z.step.at(stepZstChecked)
	return nil
}

// same reports whether the compressed file zf decompresses to exactly the
// size bytes of src.
func (z *compressor) same(zf *file, src *file, size int64) (bool, error) {
	zsize, err := zf.Size()
	if err != nil {
		return false, err
	}
	if z.dec == nil {
		if z.dec, err = segment.NewZstdReader(nil, 1); err != nil {
			return false, err
		}
		z.bufA, z.bufB = make([]byte, 64<<10), make([]byte, 64<<10)
	}
	if err := z.dec.Reset(io.NewSectionReader(zf, 0, zsize)); err != nil {
		return false, nil
	}
	return sameBytes(z.dec, io.NewSectionReader(src, 0, size), z.bufA, z.bufB)
}

// sameBytes compares two streams to their ends. An error reading a is a
// difference (a is the compressed copy); an error reading b is an error.
func sameBytes(a, b io.Reader, bufA, bufB []byte) (bool, error) {
	for {
		na, ea := io.ReadFull(a, bufA)
		nb, eb := io.ReadFull(b, bufB)
		if eb != nil && eb != io.EOF && eb != io.ErrUnexpectedEOF {
			return false, eb
		}
		if ea != nil && ea != io.EOF && ea != io.ErrUnexpectedEOF {
			return false, nil
		}
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		if ea != nil || eb != nil {
			return ea != nil && eb != nil, nil
		}
	}
}
