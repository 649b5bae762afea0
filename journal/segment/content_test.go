package segment

import (
	"bytes"
	"testing"
)

// TestContentEnd puts the last byte that is not NUL at every kind of
// place against ContentEnd's blocks (first and last byte of a block, the
// file's first and last byte, a file shorter than a block, a NUL run
// longer than many blocks) and checks the end it finds against a
// byte-by-byte scan.
func TestContentEnd(t *testing.T) {
	b := len(nulBlock)
	for _, size := range []int{0, 1, 7, b - 1, b, b + 1, 3*b + 5, 40 * b} {
		for _, at := range []int{-1, 0, 1, b - 1, b, b + 1, 2*b - 1, 3 * b, size - b, size - 2, size - 1} {
			if at >= size || at < -1 {
				continue
			}
			data := make([]byte, size)
			if at >= 0 {
				data[at] = 'x'
				if at > 0 {
					data[0] = '{' // content before it changes nothing
				}
			}
			want := int64(bytes.LastIndexFunc(data, func(r rune) bool { return r != 0 }) + 1)
			got, err := ContentEnd(bytes.NewReader(data), int64(size))
			if err != nil || got != want {
				t.Errorf("ContentEnd(%d bytes, last non-NUL at %d) = %d, %v; want %d", size, at, got, err, want)
			}
		}
	}
}
