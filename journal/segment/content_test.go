package segment

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// NulTail passes everything but a NUL run that reaches the end, however
// the reads split it.
func TestNULTail(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ab\n", "ab\n"},
		{"ab\n\x00\x00\x00", "ab\n"},
		{"ab\x00\x00cd\x00\x00", "ab\x00\x00cd"},
		{"\x00\x00ab\n\x00", "\x00\x00ab\n"},
		{"\x00\x00\x00", ""},
	} {
		for name, r := range map[string]io.Reader{
			"whole":    strings.NewReader(tt.in),
			"one byte": iotest.OneByteReader(strings.NewReader(tt.in)),
			"halves":   iotest.HalfReader(strings.NewReader(tt.in)),
		} {
			got, err := io.ReadAll(NewNulTail(r))
			if err != nil || string(got) != tt.want {
				t.Errorf("nulTail(%q, %s) = %q, %v; want %q", tt.in, name, got, err, tt.want)
			}
		}
	}
}
