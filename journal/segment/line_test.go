package segment

import (
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
