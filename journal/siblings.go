package journal

import (
	"fmt"
	"io"

	"github.com/aegisrelay/aegis/journal/segment"
)

// lastSealed returns the sealed segment of base with the highest last seq,
// preferring the plain copy where both exist; ok is false if there is none.
func lastSealed(entries []segment.Sibling) (e segment.Sibling, ok bool) {
	for _, x := range entries {
		if x.Tmp {
			continue
		}
		if !ok || x.Seg.Last > e.Seg.Last || x.Seg.Last == e.Seg.Last && e.Seg.Compressed && !x.Seg.Compressed {
			e, ok = x, true
		}
	}
	return e, ok
}

// segmentTail returns the tail of a sealed segment, plain or compressed.
func segmentTail(fsys logFS, path string, compressed bool) (segment.Tail, error) {
	f, err := fsys.OpenRead(path)
	if err != nil {
		return segment.Tail{}, &IOError{Op: "open", Path: path, Err: err}
	}
	defer f.Close()
	if !compressed {
		return segment.ReadTail(f, path, false)
	}
	size, err := f.Size()
	if err != nil {
		return segment.Tail{}, &IOError{Op: "stat", Path: path, Err: err}
	}
	zr, err := segment.NewZstdReader(io.NewSectionReader(f, 0, size), 1)
	if err != nil {
		return segment.Tail{}, fmt.Errorf("%w: %s: %v", ErrNotLog, path, err)
	}
	defer zr.Close()
	t, err := segment.StreamTail(zr)
	if err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// fileFirstSeq returns the seq of the first record of an open file.
func fileFirstSeq(f *file) (uint64, bool) {
	size, err := f.Size()
	if err != nil || size == 0 {
		return 0, false
	}
	return segment.FirstSeq(io.NewSectionReader(f, 0, size))
}

// isEmpty reports whether f holds no bytes.
func isEmpty(f *file) (bool, error) {
	size, err := f.Size()
	return size == 0, err
}
