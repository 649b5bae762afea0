package frame

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// chunkReader returns its chunks one per Read (split further if p is
// short), then err (io.EOF if nil). A chunk "" is a (0, nil) read.
type chunkReader struct {
	chunks []string
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		if r.err == nil {
			return 0, io.EOF
		}
		return 0, r.err
	}
	n := copy(p, r.chunks[0])
	if n == len(r.chunks[0]) {
		r.chunks = r.chunks[1:]
	} else {
		r.chunks[0] = r.chunks[0][n:]
	}
	return n, nil
}

// readAll calls Next until it fails and returns what it got, each result
// rendered as the chunk or "!error".
func readAll(r *Reader) []string {
	var out []string
	for range 1000 {
		b, err := r.Next()
		if err != nil {
			if b != nil {
				out = append(out, "!non-nil slice with error")
			}
			return append(out, "!"+err.Error())
		}
		out = append(out, string(b))
	}
	return append(out, "!no end")
}

var errBoom = errors.New("boom")

func TestReader(t *testing.T) {
	tests := []struct {
		name      string
		chunks    []string
		err       error
		size, max int
		want      []string
	}{
		{"empty", nil, nil, 16, 64, []string{"!EOF"}},
		{"one line", []string{"a\n"}, nil, 16, 64, []string{"a\n", "!EOF"}},
		{"two lines one read", []string{"a\nb\n"}, nil, 16, 64, []string{"a\nb\n", "!EOF"}},
		{"final line", []string{"a\nb"}, nil, 16, 64, []string{"a\n", "b", "!EOF"}},
		{"final line only", []string{"abc"}, nil, 16, 64, []string{"abc", "!EOF"}},
		{"split line", []string{"ab", "c\nd", "e\n"}, nil, 16, 64, []string{"abc\n", "de\n", "!EOF"}},
		{"empty lines", []string{"\n\n", "\r\n"}, nil, 16, 64, []string{"\n\n", "\r\n", "!EOF"}},
		{"empty reads", []string{"a", "", "", "\n"}, nil, 16, 64, []string{"a\n", "!EOF"}},
		{"grows", []string{strings.Repeat("x", 40) + "\n"}, nil, 4, 64, []string{strings.Repeat("x", 40) + "\n", "!EOF"}},
		{"line of max", []string{strings.Repeat("x", 7) + "\n"}, nil, 2, 8, []string{"xxxxxxx\n", "!EOF"}},
		{"line over max", []string{"a\n" + strings.Repeat("x", 8) + "\nb\n"}, nil, 2, 8, []string{"a\n", "!" + ErrFrameTooLarge.Error()}},
		{"line over max one read", []string{"a\n", strings.Repeat("x", 8) + "\n"}, nil, 16, 8, []string{"a\n", "!" + ErrFrameTooLarge.Error()}},
		{"line over max same chunk", []string{"ab\n" + strings.Repeat("x", 8) + "\n"}, nil, 16, 8, []string{"ab\n", "!" + ErrFrameTooLarge.Error()}},
		{"two lines fill max+1", []string{"ab\n" + strings.Repeat("x", 5) + "\n"}, nil, 16, 8, []string{"ab\nxxxxx\n", "!EOF"}},
		{"long partial over max", []string{strings.Repeat("x", 100)}, nil, 2, 8, []string{"!" + ErrFrameTooLarge.Error()}},
		{"final line of max", []string{"a\n" + strings.Repeat("x", 8)}, nil, 2, 8, []string{"a\n", "xxxxxxxx", "!EOF"}},
		{"final line over max", []string{"a\n" + strings.Repeat("x", 9)}, nil, 2, 8, []string{"a\n", "!" + ErrFrameTooLarge.Error()}},
		{"read error", []string{"a\nb\nc"}, errBoom, 16, 64, []string{"a\nb\n", "!boom"}},
		{"read error at once", nil, errBoom, 16, 64, []string{"!boom"}},
		{"no progress", []string{"a\n", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "x\n"}, nil, 16, 64, []string{"a\n", "!" + io.ErrNoProgress.Error()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(&chunkReader{chunks: append([]string(nil), tt.chunks...), err: tt.err}, tt.size, tt.max)
			got := readAll(r)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Next() sequence = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestReaderSticky(t *testing.T) {
	tests := []struct {
		name string
		r    io.Reader
		want error
	}{
		{"eof", strings.NewReader("a\n"), io.EOF},
		{"too large", strings.NewReader("a\nbbbbbbbbbbbb\nc\n"), ErrFrameTooLarge},
		{"error", &chunkReader{chunks: []string{"a\n"}, err: errBoom}, errBoom},
		{"bad count", badCountReader{}, ErrBadRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(tt.r, 4, 8)
			var err error
			for range 10 {
				if _, err = r.Next(); err != nil {
					break
				}
			}
			for range 3 {
				if b, err2 := r.Next(); b != nil || !errors.Is(err2, tt.want) || err2 != err {
					t.Fatalf("Next() after %v = %q, %v; want nil, %v", err, b, err2, tt.want)
				}
			}
		})
	}
}

type badCountReader struct{}

func (badCountReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

// addrReader records where each Read wrote, to check that Next's slices
// alias the read buffer.
type addrReader struct {
	chunks []string
	dst    [][]byte
}

func (r *addrReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	r.dst = append(r.dst, p)
	n := copy(p, r.chunks[0])
	r.chunks = r.chunks[1:]
	return n, nil
}

// TestReaderNoCopy checks that lines that arrived whole in one read are
// returned in place, and that only an incomplete line is moved.
func TestReaderNoCopy(t *testing.T) {
	ar := &addrReader{chunks: []string{"one\ntwo\nthr", "ee\nfour\n"}}
	r := NewReader(ar, 64, 1024)
	b1, _ := r.Next()
	if string(b1) != "one\ntwo\n" || &b1[0] != &ar.dst[0][0] {
		t.Errorf("Next() = %q at a copy; want \"one\\ntwo\\n\" in the read buffer", b1)
	}
	b2, _ := r.Next()
	// "thr" was moved to the front; the second read appended after it.
	if string(b2) != "three\nfour\n" || &b2[0] != &r.buf[0] || &b2[3] != &ar.dst[1][0] {
		t.Errorf("Next() = %q; want \"three\\nfour\\n\" with only \"thr\" moved to the front", b2)
	}
}

// splitReader returns data in pieces whose sizes come from splits; a size
// 0 is a (0, nil) read, but never twice in a row.
type splitReader struct {
	data   []byte
	splits []byte
	k      int
	empty  bool // the last read returned nothing
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.splits) > 0 {
		n = int(r.splits[r.k%len(r.splits)])
		r.k++
	}
	if n == 0 && r.empty {
		n = 1
	}
	n = min(n, len(p), len(r.data))
	r.empty = n == 0
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// checkReader reads src through a Reader and checks the byte-identity
// property: the output is the input up to the first line longer than max
// (then ErrFrameTooLarge), every chunk but a final one is whole lines, and
// every chunk is whole lines of at most max bytes.
func checkReader(t *testing.T, data []byte, src io.Reader, size, max int) {
	t.Helper()
	// The model: the longest prefix of whole lines before a line > max.
	want, wantErr := data, error(io.EOF)
	for rest, off := data, 0; len(rest) > 0; {
		line, next := NextLine(rest)
		if len(line) > max {
			want, wantErr = data[:off], ErrFrameTooLarge
			break
		}
		off += len(line)
		rest = next
	}
	r := NewReader(src, size, max)
	var got []byte
	var err error
	final := false
	for range len(data) + 2 {
		var b []byte
		b, err = r.Next()
		if err != nil {
			break
		}
		if final {
			t.Fatalf("Next() returned %q after a final line without newline", b)
		}
		if len(b) == 0 {
			t.Fatalf("Next() returned an empty slice")
		}
		if b[len(b)-1] != '\n' {
			final = true
		}
		for rest := b; len(rest) > 0; {
			var line []byte
			line, rest = NextLine(rest)
			if len(line) > max {
				t.Fatalf("Next() returned a line of %d bytes; max %d", len(line), max)
			}
		}
		got = append(got, b...)
	}
	if !errors.Is(err, wantErr) || !bytes.Equal(got, want) {
		t.Fatalf("Reader(%.60q, size %d, max %d) = %.60q, %v; want %.60q, %v", data, size, max, got, err, want, wantErr)
	}
}

func randomStream(r *rand.Rand) []byte {
	pieces := []string{"\n", "\r\n", "{", "}", `"`, "x", "yy", " ", "\x00", "\xff", `{"id":1,"method":"tools/call"}`, strings.Repeat("z", 100)}
	var b []byte
	for range r.IntN(60) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return b
}

// TestReaderProperty checks byte identity over random streams read through
// the testing/iotest readers and random splits.
func TestReaderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		data := randomStream(r)
		size := 1 + r.IntN(64)
		max := 1 + r.IntN(300)
		splits := make([]byte, 1+r.IntN(8))
		for i := range splits {
			splits[i] = byte(r.IntN(40))
		}
		checkReader(t, data, bytes.NewReader(data), size, max)
		checkReader(t, data, iotest.OneByteReader(bytes.NewReader(data)), size, max)
		checkReader(t, data, iotest.HalfReader(bytes.NewReader(data)), size, max)
		checkReader(t, data, iotest.DataErrReader(bytes.NewReader(data)), size, max)
		checkReader(t, data, iotest.DataErrReader(iotest.OneByteReader(bytes.NewReader(data))), size, max)
		checkReader(t, data, &splitReader{data: data, splits: splits}, size, max)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nb\n"), []byte{1}, uint16(4), uint16(8))
	f.Add([]byte("{\"id\":1}\r\n\n\nlast"), []byte{3, 0, 7}, uint16(1), uint16(9))
	f.Add([]byte("xxxxxxxxx\nyy\n"), []byte{2}, uint16(2), uint16(8))
	f.Add([]byte("abc"), []byte{}, uint16(0), uint16(3))
	f.Fuzz(func(t *testing.T, data, splits []byte, size, max uint16) {
		// max 0 would select DefaultMaxFrame; keep the model simple.
		m := int(max)%512 + 1
		checkReader(t, data, &splitReader{data: data, splits: splits}, int(size)%600, m)
		checkReader(t, data, iotest.DataErrReader(&splitReader{data: data, splits: splits}), int(size)%600, m)
		// And with long lines in the heap's buffers (mapped.go).
		withoutMappings(func() { checkReader(t, data, &splitReader{data: data, splits: splits}, int(size)%600, m) })
	})
}

// loopReader returns the same data forever, in reads of at most n bytes.
type loopReader struct {
	data []byte
	off  int
	n    int
}

func (r *loopReader) Read(p []byte) (int, error) {
	p = p[:min(len(p), r.n)]
	k := 0
	for k < len(p) {
		c := copy(p[k:], r.data[r.off:])
		k += c
		r.off = (r.off + c) % len(r.data)
	}
	return k, nil
}

func TestReaderAllocs(t *testing.T) {
	for _, n := range []int{7, 100, 4096, 1 << 20} {
		r := NewReader(&loopReader{data: []byte(call + "\n" + strings.Repeat("q", 300) + "\n"), n: n}, 4096, 1<<20)
		for range 100 { // grow
			r.Next()
		}
		if a := testing.AllocsPerRun(1000, func() { r.Next() }); a != 0 {
			t.Errorf("Next() with reads of %d: allocs = %v; want 0", n, a)
		}
	}
}

func TestNextLine(t *testing.T) {
	tests := []struct {
		chunk, line, rest string
	}{
		{"", "", ""},
		{"a\nb\n", "a\n", "b\n"},
		{"\n", "\n", ""},
		{"abc", "abc", ""},
		{"a\r\nb", "a\r\n", "b"},
	}
	for _, tt := range tests {
		line, rest := NextLine([]byte(tt.chunk))
		if string(line) != tt.line || string(rest) != tt.rest {
			t.Errorf("NextLine(%q) = %q, %q; want %q, %q", tt.chunk, line, rest, tt.line, tt.rest)
		}
	}
}

// canMap is whether this system has mappings (mapped.go).
var canMap = func() bool { _, err := mapAnon(1); return err == nil }()

// mappable is whether long lines are read into mappings now.
func mappable() bool {
	mappedBufs.mu.Lock()
	defer mappedBufs.mu.Unlock()
	return canMap && !mappedBufs.off
}

func choose[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// onOwn reports whether r reads into its own buffer and holds no long one.
func onOwn(r *Reader) bool {
	return r.long == nil && len(r.spill) == 0 && len(r.buf) == len(r.own) && &r.buf[0] == &r.own[0]
}

// TestReaderLongLineReleases drives a Reader through a line longer than
// its buffer and checks that, once the line has been consumed, the Reader
// is back on its own buffer of the size it was made with, holding nothing
// of the long line.
func TestReaderLongLineReleases(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"alone", []string{"a\n", long + "\n", "b\n", "c\n"}, []string{"a\n", long + "\n", "b\n", "c\n", "!EOF"}},
		{"short lines in the same read", []string{long + "\nb\nc\n"}, []string{long + "\nb\nc\n", "!EOF"}},
		{"in pieces, then a partial line", []string{long[:10], long[10:3000], long[3000:] + "\nb", "\n"}, []string{long + "\n", "b\n", "!EOF"}},
		{"one byte at a time", strings.Split(long+"\nb\n", ""), []string{long + "\n", "b\n", "!EOF"}},
		{"at EOF", []string{"a\n", long}, []string{"a\n", long, "!EOF"}},
		// In a long buffer of the line's size the second line comes in a
		// read of its own; in a mapping of max+1 bytes (mapped.go), in the
		// first one's.
		{"two long lines", []string{long + "\n" + long + "\nb\n"}, choose(mappable(),
			[]string{long + "\n" + long + "\nb\n", "!EOF"},
			[]string{long + "\n", long + "\nb\n", "!EOF"})},
		{"two long lines in pieces", []string{long + "\n" + long[:100], long[100:] + "\n", "b\n"}, []string{long + "\n", long + "\n", "b\n", "!EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(&chunkReader{chunks: append([]string(nil), tt.chunks...)}, 64, 1<<20)
			var got []string
			for range 100 {
				b, err := r.Next()
				if err != nil {
					got = append(got, "!"+err.Error())
				} else {
					got = append(got, string(b))
				}
				// A chunk without the long line, or an error, comes after
				// the long line has been consumed.
				if (err != nil || len(b) < 64) && !onOwn(r) {
					t.Errorf("after Next() = %.20q, %v: buffer of %d bytes, long buffer %v, %d blocks; want its own buffer of 64 bytes", b, err, len(r.buf), r.long != nil, len(r.spill))
				}
				if err != nil {
					break
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("Next() sequence = %.80q; want %.80q", got, tt.want)
			}
		})
	}
}

// withoutGC runs f with the garbage collector off, so that long buffers
// left in longBufs stay there.
func withoutGC(f func()) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	f()
}

// TestReaderLongBufShared checks that a long line's buffer, once consumed,
// serves the next long line of another Reader, and that two Readers taking
// turns with long lines allocate nothing in steady state.
func TestReaderLongBufShared(t *testing.T) {
	withoutGC(func() {
		for getLong(0) != nil { // what other tests left
		}
		line := strings.Repeat("y", 100_000) + "\n"
		a := NewReader(strings.NewReader(line), 4096, 1<<20)
		if c, err := a.Next(); string(c) != line || err != nil {
			t.Fatalf("a.Next() = %d bytes, %v; want %d, nil", len(c), err, len(line))
		}
		held := a.long
		if held == nil {
			t.Fatalf("a reads a line of %d bytes without a long buffer", len(line))
		}
		if _, err := a.Next(); err != io.EOF || a.long != nil {
			t.Fatalf("a.Next() at EOF = %v, holding a long buffer %v; want EOF, false", err, a.long != nil)
		}
		b := NewReader(&loopReader{data: []byte(line), n: 4096}, 4096, 1<<20)
		if c, err := b.Next(); string(c) != line || err != nil {
			t.Fatalf("b.Next() = %d bytes, %v; want %d, nil", len(c), err, len(line))
		}
		if b.long != held {
			t.Errorf("b reads its long line in a new buffer; want a's, given back")
		}
		c := NewReader(&loopReader{data: []byte(line), n: 4096}, 4096, 1<<20)
		for range 3 {
			b.Next()
			c.Next()
		}
		if n := testing.AllocsPerRun(100, func() { b.Next(); c.Next() }); n != 0 {
			t.Errorf("two Readers taking turns with %d-byte lines: allocs = %v; want 0", len(line), n)
		}
	})
}

// TestReaderLongBufsPool checks longBufs: a buffer too short is not handed
// out, the largest are kept when it is full, and the garbage collector
// empties it.
func TestReaderLongBufsPool(t *testing.T) {
	mk := func(n int) *[]byte { b := make([]byte, n); return &b }
	withoutGC(func() {
		for getLong(0) != nil { // what other tests left
		}
		putLong(mk(100))
		if p := getLong(101); p != nil {
			t.Errorf("getLong(101) = %d bytes; want nil", len(*p))
		}
		for _, n := range []int{300, 200, 500, 400, 50} {
			putLong(mk(n))
		}
		var got []int
		for p := getLong(0); p != nil; p = getLong(0) {
			got = append(got, len(*p))
		}
		slices.Sort(got)
		if want := []int{200, 300, 400, 500}; !slices.Equal(got, want) {
			t.Errorf("longBufs after putting 100, 300, 200, 500, 400, 50 = %v; want %v", got, want)
		}
	})
	putLong(mk(1 << 20))
	runtime.GC()
	if p := getLong(0); p != nil {
		t.Errorf("getLong(0) after a collection = %d bytes; want nil", len(*p))
	}
}

// TestReaderPairProperty reads two streams with two Readers in turns,
// so that long buffers pass between them, and checks byte identity of
// each, and that a chunk a Reader returned stays unchanged, whatever the
// other reads, until that Reader's next call.
func TestReaderPairProperty(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		var data [2][]byte
		var rd [2]*Reader
		var got [2][]byte
		size, max := 1+rnd.IntN(32), 200+rnd.IntN(2000)
		for i := range rd {
			for range 1 + rnd.IntN(4) {
				data[i] = append(data[i], randomStream(rnd)...)
				data[i] = append(data[i], bytes.Repeat([]byte("L"), rnd.IntN(max))...)
			}
			splits := []byte{byte(1 + rnd.IntN(200)), byte(rnd.IntN(30))}
			rd[i] = NewReader(&splitReader{data: data[i], splits: splits}, size, 1<<20)
		}
		var last [2][]byte // the last chunk of each, as returned
		var kept [2][]byte // and a copy of it
		done := [2]bool{}
		for !done[0] || !done[1] {
			i := rnd.IntN(2)
			if done[i] {
				i = 1 - i
			}
			if o := 1 - i; last[o] != nil && !bytes.Equal(last[o], kept[o]) {
				t.Fatalf("a chunk of Reader %d changed before its next Next: %.40q; was %.40q", o, last[o], kept[o])
			}
			c, err := rd[i].Next()
			if err != nil {
				if err != io.EOF {
					t.Fatalf("Next() = %v", err)
				}
				done[i], last[i] = true, nil
				continue
			}
			got[i] = append(got[i], c...)
			last[i], kept[i] = c, append(kept[i][:0], c...)
		}
		for i := range got {
			if !bytes.Equal(got[i], data[i]) {
				t.Fatalf("Reader %d (size %d) read %.60q; want %.60q", i, size, got[i], data[i])
			}
		}
	}
}

// TestReaderShort: Short says whether the read behind the lines Next
// returned had more room than the source filled.
func TestReaderShort(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	for _, tc := range []struct {
		name string
		src  []byte
		size int
		want bool
	}{
		{"one line, room for more", line, 4096, true},
		{"lines filling the buffer", bytes.Repeat(line, 8), 2 * len(line), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := NewReader(bytes.NewReader(tc.src), tc.size, 0)
			chunk, err := rd.Next()
			if err != nil || len(chunk) == 0 {
				t.Fatalf("Next = %q, %v", chunk, err)
			}
			if got := rd.Short(); got != tc.want {
				t.Errorf("Short() = %v; want %v", got, tc.want)
			}
		})
	}
}
