package tlog

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/segment"
)

// ReadSet reads the lines of the log whose files are set, in seq order
// (segment.Set.Plan), compressed segments decompressed as they are read,
// through c. It stops early, returning nil, once stop (if not nil) reports
// true after a leaf.
//
// The hashing, two SHA-256 of each line (the chain's and the leaf's), is
// most of the cost and each line's is independent of the others': one
// goroutine cuts the files into chunks of whole lines, workers on every
// core hash them, and the caller's goroutine takes the chunks in order
// and follows the chain (Chain.LeafHash then costs nothing). Memory: at
// most 2×workers+2 chunks of about chunkSize bytes, whatever the log's
// length.
//
// A set whose files do not form one log (a missing, doubled or
// overlapping segment, a file that is not a log) is refused with an error
// matching ErrSet, before any line is read.
func ReadSet(set *segment.Set, c *Chain, stop func() bool) error {
	paths, err := planPaths(set)
	if err != nil {
		return err
	}
	stopped, err := streamPaths(vfs.Or(set.FS), paths, c, stop)
	if err == nil && !stopped {
		err = c.End()
	}
	return err
}

// planPaths returns the files of set in seq order, or an error matching
// ErrSet if they do not form one log.
func planPaths(set *segment.Set) ([]string, error) {
	files, problems, _, err := set.Plan()
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrSet, strings.Join(problems, "; "))
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return paths, nil
}

// BuildTree reads the first n records of the log whose files are set
// (all of them if it holds fewer) into their RFC 6962 tree, calling each,
// if not nil, after every leaf is appended, and returns the tree and the
// log's origin (Origin of its seq 0 line; "" if it has none). The caller
// checks the tree's size against what it expected.
func BuildTree(set *segment.Set, n uint64, each func(*Tree)) (*Tree, string, error) {
	t := NewTree()
	origin := ""
	c := &Chain{}
	c.Leaf = func(seq uint64, line []byte) error {
		if seq == 0 {
			origin = Origin(line)
		}
		t.AppendLeaf(c.LeafHash())
		if each != nil {
			each(t)
		}
		return nil
	}
	if err := ReadSet(set, c, func() bool { return t.Size() >= n }); err != nil {
		return nil, "", err
	}
	return t, origin, nil
}

// streamPaths feeds c every line of the files at paths, in order, until
// stop (if not nil) reports true after a leaf; it reports whether it did.
// It does not call c.End: the last leaf stays pending, for the lines of a
// file read next to replace or confirm.
func streamPaths(fsys vfs.FS, paths []string, c *Chain, stop func() bool) (stopped bool, err error) {
	leaf := c.Leaf
	if stop != nil {
		c.Leaf = func(seq uint64, line []byte) error {
			if leaf != nil {
				if err := leaf(seq, line); err != nil {
					return err
				}
			}
			if stop() {
				stopped = true
				return errStop
			}
			return nil
		}
		defer func() { c.Leaf = leaf }()
	}
	err = readLines(fsys, paths, c)
	if stopped {
		return true, nil
	}
	return false, err
}

var errStop = errors.New("stop")

// chunkSize is the input one worker hashes at a time: large enough that
// handing it over costs nothing beside hashing it.
const chunkSize = 256 << 10

type chunk struct {
	buf   []byte
	ends  []int // end of each line in buf
	info  []lineInfo
	ready chan struct{} // closed once info is filled
	err   error         // the reader's, after the last line it read
}

// readLines feeds c every line of the files, in order, hashed ahead by
// workers.
func readLines(fsys vfs.FS, paths []string, c *Chain) error {
	workers := runtime.GOMAXPROCS(0)
	free := make(chan *chunk, 2*workers+2)
	for range cap(free) {
		free <- &chunk{ready: make(chan struct{})}
	}
	ordered := make(chan *chunk, cap(free))
	work := make(chan *chunk, cap(free))
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hashChunks(work)
		}()
	}
	go cutChunks(fsys, paths, free, ordered, work, done)
	var err error
	for ch := range ordered {
		<-ch.ready
		if err == nil {
			start := 0
			for i, end := range ch.ends {
				if err = c.line(ch.buf[start:end], &ch.info[i]); err != nil {
					break
				}
				start = end
			}
			if err == nil {
				err = ch.err
			}
			if err != nil {
				close(done)
			}
		}
		select {
		case free <- ch:
		default:
		}
	}
	wg.Wait()
	return err
}

// hashChunks computes what the chain needs of every line of each chunk
// from work (its hashes), then marks the chunk ready.
func hashChunks(work <-chan *chunk) {
	var lh leafHasher
	for ch := range work {
		ch.info = ch.info[:0]
		start := 0
		for _, end := range ch.ends {
			ch.info = append(ch.info, lineInfo{})
			ch.info[len(ch.info)-1].compute(ch.buf[start:end], &lh)
			start = end
		}
		close(ch.ready)
	}
}

// cutChunks reads the lines of the files in order into chunks taken from
// free, and sends each to ordered (for the caller, in order) and to work
// (for the hashing workers); a read error travels in the last chunk. It
// stops when done closes, and closes ordered and work when it returns.
func cutChunks(fsys vfs.FS, paths []string, free <-chan *chunk, ordered, work chan<- *chunk, done <-chan struct{}) {
	defer close(ordered)
	defer close(work)
	var ch *chunk
	take := func() bool {
		select {
		case ch = <-free:
			ch.buf, ch.ends, ch.err = ch.buf[:0], ch.ends[:0], nil
			ch.ready = make(chan struct{})
			return true
		case <-done:
			return false
		}
	}
	send := func() bool {
		select {
		case ordered <- ch:
		case <-done:
			return false
		}
		work <- ch
		ch = nil
		return true
	}
	if !take() {
		return
	}
	quit := false // the caller stopped taking chunks
	for _, p := range paths {
		err := readFile(fsys, p, func(line []byte) bool {
			ch.buf = append(ch.buf, line...)
			ch.ends = append(ch.ends, len(ch.buf))
			if len(ch.buf) >= chunkSize && (!send() || !take()) {
				quit = true
				return false
			}
			return true
		})
		if quit {
			return
		}
		if err != nil {
			ch.err = err
			send()
			return
		}
	}
	send()
}

// readFile calls fn with each whole line of the file at path on fsys,
// until fn returns false.
func readFile(fsys vfs.FS, path string, fn func(line []byte) bool) error {
	rc, err := segment.OpenFS(fsys, path, nil)
	if err != nil {
		return err
	}
	defer rc.Close()
	lr := segment.NewLineReader(rc)
	for {
		line, err := lr.Next()
		if errors.Is(err, segment.ErrLongLine) {
			continue // no record; the chain goes on across it or breaks
		}
		if err == io.EOF {
			return nil // a partial last line is torn bytes, never a leaf
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !fn(line) {
			return nil
		}
	}
}
