package tlog

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aegisrelay/aegis/journal/segment"
)

// ReadSet reads the lines of the log whose files are set, in seq order
// (segment.Set.Plan), compressed segments decompressed as they are read,
// through c. It stops early, returning nil, once stop (if not nil) reports
// true after a leaf. Memory: one line and the reader's buffers, whatever
// the log's length.
//
// A set whose files do not form one log (a missing, doubled or
// overlapping segment, a file that is not a log) is refused with an error
// matching ErrSet, before any line is read.
func ReadSet(set *segment.Set, c *Chain, stop func() bool) error {
	files, problems, _, err := set.Plan()
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrSet, strings.Join(problems, "; "))
	}
	leaf := c.Leaf
	stopped := false
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
	for _, f := range files {
		err := readFile(f.Path, c)
		if stopped {
			return nil
		}
		if err != nil {
			return err
		}
	}
	err = c.End()
	if stopped {
		return nil
	}
	return err
}

var errStop = errors.New("stop")

func readFile(path string, c *Chain) error {
	rc, err := segment.Open(path, nil)
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
		if err := c.Line(line); err != nil {
			return err
		}
	}
}
