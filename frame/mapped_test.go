package frame

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// withoutMappings runs f with long lines read into heap buffers, as where
// the system has no mappings.
func withoutMappings(f func()) {
	mappedBufs.mu.Lock()
	was := mappedBufs.off
	mappedBufs.off = true
	free := mappedBufs.free
	mappedBufs.free = nil
	mappedBufs.mu.Unlock()
	defer func() {
		mappedBufs.mu.Lock()
		mappedBufs.off, mappedBufs.free = was, append(mappedBufs.free, free...)
		mappedBufs.mu.Unlock()
	}()
	f()
}

// The heap's long buffers, blocks and join, as where there are no
// mappings: the tests of long lines again.
func TestReaderWithoutMappings(t *testing.T) {
	withoutMappings(func() {
		t.Run("LongLineReleases", TestReaderLongLineReleases)
		t.Run("PairProperty", TestReaderPairProperty)
		t.Run("Property", TestReaderProperty)
	})
}

// A line longer than the buffer is read into a mapping of max+1 bytes,
// whole, in place; once it is consumed the Reader is back on its own
// buffer and the mapping is free again, its pages kept for the next line
// until it has been free for mappedIdle; then its pages past mappedKeep
// read as zeros (given back to the system). Release gives a mapping back
// too.
func TestReaderMapped(t *testing.T) {
	if !mappable() {
		t.Skip("no mappings on this system: long lines use heap buffers (TestReaderWithoutMappings)")
	}
	const max = 3 << 20
	line := bytes.Repeat([]byte("m"), 2<<20+123)
	line = append(line, '\n')
	r := NewReader(&chunkReader{chunks: []string{string(line[:100_000]), string(line[100_000:]), "b\n"}}, 4096, max)
	c, err := r.Next()
	if err != nil || !bytes.Equal(c, line) {
		t.Fatalf("Next() = %d bytes, %v; want the %d-byte line", len(c), err, len(line))
	}
	if !r.mapped || len(*r.long) < max+1 || &c[0] != &(*r.long)[0] {
		t.Fatalf("the long line is in a mapping %v of %d bytes, at its start %v; want a mapping of at least %d holding it", r.mapped, len(*r.long), &c[0] == &(*r.long)[0], max+1)
	}
	m := *r.long
	if c, err := r.Next(); string(c) != "b\n" || err != nil || !onOwn(r) {
		t.Fatalf("Next() = %q, %v, on its own buffer %v; want b, nil, true", c, err, onOwn(r))
	}
	if m[len(line)-2] != 'm' {
		t.Errorf("the mapping's pages were given back at once; want them kept for %v", mappedIdle)
	}
	dropIdle(time.Now().Add(mappedIdle / 2))
	if m[len(line)-2] != 'm' {
		t.Errorf("the mapping's pages were given back after %v free; want them kept for %v", mappedIdle/2, mappedIdle)
	}
	dropIdle(time.Now().Add(mappedIdle))
	if bytes.IndexByte(m[mappedKeep:len(line)], 'm') >= 0 {
		t.Errorf("the mapping's pages past %d still hold the line after %v free; want zeros", mappedKeep, mappedIdle)
	}
	if m[0] != 'm' {
		t.Errorf("the mapping's first MiB does not hold the line's start any more; want it kept")
	}
	// The next long line, in another Reader, takes the same mapping.
	r2 := NewReader(strings.NewReader(string(line[:200_000])), 4096, max)
	if _, err := r2.Next(); err != nil || !r2.mapped || &(*r2.long)[0] != &m[0] {
		t.Fatalf("Next() = %v; mapping %v, the same %v; want the mapping given back", err, r2.mapped, r2.long != nil && &(*r2.long)[0] == &m[0])
	}
	r2.Release()
	if _, err := r2.Next(); !errors.Is(err, ErrReleased) || r2.long != nil {
		t.Fatalf("Next() after Release = %v, holding a long buffer %v; want ErrReleased, none", err, r2.long != nil)
	}
	if p := getMapped(max + 1); p == nil || &(*p)[0] != &m[0] {
		t.Fatalf("getMapped after Release = another mapping; want the released one")
	} else {
		putMapped(p)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next() = %v; want EOF", err)
	}
}

// A mapping the system refuses (a max beyond the address space) sends
// that line to the heap's buffers, and the next Reader still maps.
func TestReaderMapRefused(t *testing.T) {
	if !mappable() || strconv.IntSize < 64 {
		t.Skip("no mappings on this system, or no max beyond the address space")
	}
	line := strings.Repeat("h", 10_000) + "\n"
	huge := NewReader(strings.NewReader(line), 4096, 1<<62)
	if c, err := huge.Next(); string(c) != line || err != nil || huge.mapped {
		t.Fatalf("Next() with max 2^62 = %d bytes, %v, mapped %v; want the line, nil, from the heap", len(c), err, huge.mapped)
	}
	r := NewReader(strings.NewReader(line), 4096, 1<<20)
	if c, err := r.Next(); string(c) != line || err != nil || !r.mapped {
		t.Fatalf("Next() after the refusal = %d bytes, %v, mapped %v; want the line, nil, mapped", len(c), err, r.mapped)
	}
	r.Release()
}
