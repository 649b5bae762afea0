package journal

import "testing"

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"65536", 65536, true},
		{"64MiB", 64 << 20, true},
		{" 4 KiB ", 4 << 10, true},
		{"2G", 2 << 30, true},
		{"1K", 1024, true},
		{"1024GiB", 1 << 40, true},
		{"1025GiB", 0, false},
		{"0", 0, false},
		{"-1", 0, false},
		{"", 0, false},
		{"MiB", 0, false},
		{"1.5MiB", 0, false},
		{"64mib", 0, false},
		{"99999999999999999999", 0, false},
	} {
		got, err := ParseSize(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
