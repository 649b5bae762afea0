package segment

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// growing is a reader whose content arrives in parts: each part is read,
// then io.EOF once, as a file being written reads.
type growing struct{ parts []string }

func (g *growing) Read(p []byte) (int, error) {
	if len(g.parts) == 0 {
		return 0, io.EOF
	}
	if g.parts[0] == "" {
		g.parts = g.parts[1:]
		return 0, io.EOF
	}
	n := copy(p, g.parts[0])
	if g.parts[0] = g.parts[0][n:]; g.parts[0] == "" {
		g.parts = g.parts[1:]
	}
	return n, nil
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", record.MaxLine+1)
	full := strings.Repeat("y", record.MaxLine)
	tests := []struct {
		name  string
		parts []string // "" is an io.EOF between parts
		want  []string // lines; "EOF", "EOF:partial", "LONG:n"
	}{
		{"lines", []string{"a\nbc\n"}, []string{"a", "bc", "EOF"}},
		{"torn last line", []string{"a\nbc"}, []string{"a", "EOF:bc"}},
		{"line completed after EOF", []string{"a\nb", "", "c\nd\n"}, []string{"a", "EOF:b", "bc", "d", "EOF"}},
		{"a line of MaxLine bytes", []string{full + "\n"}, []string{full, "EOF"}},
		{"long line skipped", []string{"a\n" + long + "\nb\n"}, []string{"a", "LONG:1048577", "b", "EOF"}},
		{"long line across EOF", []string{long[:10], "", long[10:] + "\nb\n"}, []string{"EOF:" + long[:10], "LONG:1048577", "b", "EOF"}},
		{"long last line", []string{long}, []string{"EOF:long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := NewLineReader(&growing{parts: append([]string(nil), tt.parts...)})
			var got []string
			for len(got) < len(tt.want) {
				line, err := lr.Next()
				var le *LongLineError
				switch {
				case err == io.EOF && lr.Long():
					got = append(got, "EOF:long")
				case err == io.EOF && len(lr.Partial()) > 0:
					got = append(got, "EOF:"+string(lr.Partial()))
				case err == io.EOF:
					got = append(got, "EOF")
				case errors.As(err, &le) && errors.Is(err, ErrLongLine):
					got = append(got, "LONG:"+strconv.FormatInt(le.N, 10))
				case err != nil:
					t.Fatalf("Next() = %v", err)
				default:
					got = append(got, string(line))
				}
			}
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("line %d = %.40q; want %.40q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestLineReaderHashLongLines: with HashLongLines, the hash after each
// *LongLineError is of that line alone, however its bytes arrived (in
// one read, across io.EOF, after a kept partial line), and ordinary lines
// are still returned whole.
func TestLineReaderHashLongLines(t *testing.T) {
	long1 := strings.Repeat("x", record.MaxLine+1)
	long2 := strings.Repeat("z", 3*record.MaxLine/2)
	tests := []struct {
		name  string
		parts []string
		want  []string // lines, or "LONG:" + the long line
	}{
		{"one read", []string{"a\n" + long1 + "\nb\n" + long2 + "\nc\n"}, []string{"a", "LONG:" + long1, "b", "LONG:" + long2, "c"}},
		{"across EOF", []string{long2[:100], "", long2[100:70000], "", long2[70000:] + "\n" + long1 + "\n"}, []string{"LONG:" + long2, "LONG:" + long1}},
		{"two in a row", []string{long1 + "\n" + long1 + "\nd\n"}, []string{"LONG:" + long1, "LONG:" + long1, "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := NewLineReader(&growing{parts: append([]string(nil), tt.parts...)})
			h := sha256.New()
			lr.HashLongLines(h)
			var got []string
			for len(got) < len(tt.want) {
				line, err := lr.Next()
				var le *LongLineError
				switch {
				case err == io.EOF:
					continue
				case errors.As(err, &le):
					if want := sha256.Sum256([]byte(tt.want[len(got)][len("LONG:"):])); !bytes.Equal(h.Sum(nil), want[:]) {
						t.Errorf("hash after long line %d = %x; want %x", len(got), h.Sum(nil), want)
					}
					got = append(got, "LONG:"+strings.Repeat("?", int(le.N)))
				case err != nil:
					t.Fatalf("Next() = %v", err)
				default:
					got = append(got, string(line))
				}
			}
			for i, w := range tt.want {
				if strings.HasPrefix(w, "LONG:") {
					w = "LONG:" + strings.Repeat("?", len(w)-len("LONG:"))
				}
				if got[i] != w {
					t.Errorf("line %d = %.40q (%d bytes); want %.40q (%d bytes)", i, got[i], len(got[i]), w, len(w))
				}
			}
		})
	}
}

// TestLineReaderLongLen: a long line cut by the end of the input is
// counted whole, for a reader that reports its length.
func TestLineReaderLongLen(t *testing.T) {
	long := strings.Repeat("x", record.MaxLine+5)
	lr := NewLineReader(strings.NewReader("a\n" + long))
	if line, err := lr.Next(); err != nil || string(line) != "a" {
		t.Fatalf("Next() = %q, %v; want \"a\", nil", line, err)
	}
	if _, err := lr.Next(); err != io.EOF || !lr.Long() || lr.LongLen() != int64(len(long)) {
		t.Errorf("Next() = %v, Long() = %v, LongLen() = %d; want io.EOF, true, %d", err, lr.Long(), lr.LongLen(), len(long))
	}
}
