package segment

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
)

// FollowOptions configure Follow. The zero value is the defaults.
type FollowOptions struct {
	// Poll is how often Follow looks for more records at the end of the
	// live file. Default 200ms.
	Poll time.Duration
	// Relist is how soon Follow lists the log's files again while a
	// rotation is under way. Default 10ms.
	Relist time.Duration
	// GapWait is how long Follow waits for the records of a gap (a record
	// whose seq is not the next one) to appear before it passes them by: a
	// log whose seqs jump is verify's to judge. Default 2s.
	GapWait time.Duration
	// Idle, if not nil, is called each time Follow has read all the live
	// file holds for now, before it waits for more.
	Idle func()
	// Skipped, if not nil, is called with the error of each line Follow
	// passes over because it is too long to be a record (a
	// *LongLineError). Lines that do not decode are passed over silently:
	// verify judges lines; a follower shows what it can read.
	Skipped func(err error)
	// FS is the file system the log is read through. Default vfs.OS.
	FS vfs.FS
}

// Follow calls fn with each record of the log whose live file is base, in
// seq order, each once, then keeps calling it as the log grows, across
// rotations, until ctx is done (it returns ctx.Err()), fn returns an error
// (it returns that error), or a file cannot be read.
//
// It knows the rotation protocol: when base is swapped out, what was
// written to the old live file last is read, then the segments sealed
// since the last record seen (and the spare, which holds the old live
// file until it is sealed), then the new live file. It reads the live
// file only up to its pre-zeroed tail (ContentReader). A segment gone by
// the time it is read (compressed meanwhile) makes Follow list the files
// again, never skip it; a record after a gap makes it list them again too,
// for a listing made while a rotation renames a file may show the file
// under neither name. Once a later record is seen, an earlier one is
// never passed to fn.
//
// Follow polls: it sleeps Poll at the end of the live file and Relist
// while a rotation is under way. fn is called on Follow's goroutine.
func Follow(ctx context.Context, base string, opts FollowOptions, fn func(*record.Record) error) error {
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	if opts.Relist <= 0 {
		opts.Relist = 10 * time.Millisecond
	}
	if opts.GapWait <= 0 {
		opts.GapWait = 2 * time.Second
	}
	opts.FS = vfs.Or(opts.FS)
	f := &follower{ctx: ctx, opts: opts, fn: fn}
	for {
		live, err := opts.FS.Open(base)
		if errors.Is(err, os.ErrNotExist) {
			live = nil // between the two renames of a rotation without RENAME_EXCHANGE
		} else if err != nil {
			return err
		}
		relist, err := f.segments(base)
		if err != nil || relist || live == nil {
			if live != nil {
				live.Close()
			}
			if err != nil {
				return err
			}
			if err := f.sleep(opts.Relist); err != nil {
				return err
			}
			continue
		}
		err = f.tail(live, base)
		live.Close()
		if err == errGap {
			err = f.sleep(opts.Relist)
		}
		if err != nil {
			return err
		}
	}
}

// errGap: the next record read is not the one after the last passed to fn
// (or, first, seq 0); the ones between are in a file not read yet.
var errGap = errors.New("segment: records missing before the next one")

// follower is Follow's state. The seqs it has passed on only grow.
type follower struct {
	ctx     context.Context
	opts    FollowOptions
	fn      func(*record.Record) error
	dec     record.Decoder
	seen    uint64 // seq of the last record passed to fn
	seenAny bool
	// readTo is the last seq of the sealed segments read so far (their
	// names say it): one read whose records could not all be passed on
	// (lines that do not decode) is not read again for sealedAfter.
	readTo  uint64
	readAny bool
	gapAt   time.Time // when a gap before the next record was first met
}

func (f *follower) sleep(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.ctx.Done():
		return f.ctx.Err()
	case <-t.C:
		return nil
	}
}

// segments passes on the records of the other files of the log at base
// not passed on yet, in order: sealed segments, and the spare. relist is
// true if a file was removed before it could be read, or records are
// missing before the ones read (errGap).
func (f *follower) segments(base string) (relist bool, err error) {
	sets, err := SetsFS(f.opts.FS, []string{base}, true)
	if err == nil {
		var files []string
		files, _, err = sets[0].OrderedFiles()
		for _, name := range files {
			if name == base {
				continue
			}
			s, named := ParseName(name)
			if named && f.seenAny && s.Last <= f.seen {
				continue
			}
			rc, oerr := OpenFS(f.opts.FS, name, nil)
			if oerr != nil {
				if errors.Is(oerr, os.ErrNotExist) {
					return true, nil
				}
				return false, oerr
			}
			err = f.read(rc)
			rc.Close()
			if named && err == nil {
				f.readTo, f.readAny = max(f.readTo, s.Last), true
			}
			if err == errGap {
				return true, nil
			}
			if err != nil {
				return false, err
			}
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		return true, nil // a file listed was gone when looked at
	}
	return false, err
}

// read passes on the records of r up to its end; a torn last line is not
// read.
func (f *follower) read(r io.Reader) error {
	lr := NewLineReader(r)
	for {
		line, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if f.skipped(err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := f.line(line); err != nil {
			return err
		}
	}
}

// tail passes on the records of the open live file as they are written,
// until base names another file (a rotation) and live is read to its end.
func (f *follower) tail(live vfs.File, base string) error {
	// Records are written over pre-zeroed space: read up to its NULs, and
	// from there again once more is written.
	lr := NewLineReader(NewContentReader(live))
	read := false // a line of live was read: a gap before it is line's to find
	for {
		line, err := lr.Next()
		if err == io.EOF {
			if f.opts.Idle != nil {
				f.opts.Idle()
			}
			// A live file that holds no record yet cannot show a gap, and
			// a listing made while a rotation renamed a file may have
			// missed the segment sealed last: while live is empty, a
			// sealed segment with records after the last one passed on
			// sends Follow back to list the files, rather than waiting
			// for a record that may never come.
			if !read && f.sealedAfter(base) {
				return errGap
			}
			// The journal writes nothing to a file after swapping it out:
			// once base names another file, one more read to the end of
			// live finds everything.
			if rotated(f.opts.FS, live, base) {
				rest, err := lr.Rest()
				if err != nil {
					return err
				}
				if err := f.read(bytes.NewReader(rest)); err != errGap {
					return err
				}
				return nil // the next listing reads on
			}
			if err := f.sleep(f.opts.Poll); err != nil {
				return err
			}
			continue
		}
		if f.skipped(err) {
			continue
		}
		if err != nil {
			return err
		}
		read = true
		if err := f.line(line); err != nil {
			return err
		}
	}
}

// sealedAfter reports whether a sealed segment of the log at base holds
// records after the last one passed on (its name says its range; the
// directory is listed, no file read).
func (f *follower) sealedAfter(base string) bool {
	sibs, err := Siblings(f.opts.FS, base)
	if err != nil {
		return false
	}
	for _, s := range sibs {
		if !s.Tmp && (!f.seenAny || s.Seg.Last > f.seen) && (!f.readAny || s.Seg.Last > f.readTo) {
			return true
		}
	}
	return false
}

// skipped reports a line too long to be a record to opts.Skipped, and
// whether err is one.
func (f *follower) skipped(err error) bool {
	if !errors.Is(err, ErrLongLine) {
		return false
	}
	if f.opts.Skipped != nil {
		f.opts.Skipped(err)
	}
	return true
}

// line passes on the record of a line, if it decodes and was not passed
// on already. A record after a gap is not passed on but answered with
// errGap, for the caller to list the files again; before the first record
// the one wanted is seq 0, and a log whose first segments were removed
// waits GapWait.
func (f *follower) line(line []byte) error {
	rec, err := f.dec.Decode(line)
	if err != nil {
		return nil
	}
	if f.seenAny && rec.Seq <= f.seen {
		return nil
	}
	gap := rec.Seq > 0
	if f.seenAny {
		gap = rec.Seq > f.seen+1
	}
	if gap {
		if f.gapAt.IsZero() {
			f.gapAt = time.Now()
		}
		if time.Since(f.gapAt) < f.opts.GapWait {
			return errGap
		}
	}
	f.gapAt = time.Time{}
	f.seen, f.seenAny = rec.Seq, true
	return f.fn(rec)
}

// rotated reports whether base no longer names the open file live (as
// os.SameFile tells: an FS whose FileInfo is not the operating system's
// reads as rotated every time).
func rotated(fsys vfs.FS, live vfs.File, base string) bool {
	a, err := live.Stat()
	if err != nil {
		return false
	}
	b, err := fsys.Stat(base)
	return err != nil || !os.SameFile(a, b)
}
