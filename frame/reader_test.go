package frame

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
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
