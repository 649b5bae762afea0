package record

import (
	"strings"
	"testing"
)

func TestParseHeadStringString(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"7:sha256:" + hash, true},
		{"0:sha256:" + hash, true},
		{"18446744073709551615:sha256:" + hash, true},
		{"18446744073709551616:sha256:" + hash, false},
		{"7:" + hash, false},
		{"7:sha256:" + hash[:62], false},
		{"7:sha256:" + hash + "00", false},
		{"7:sha256:" + strings.Repeat("zz", 32), false},
		{"-1:sha256:" + hash, false},
		{"sha256:" + hash, false},
		{"", false},
	} {
		h, err := ParseHeadString(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseHeadString(%q) = %v; want ok %v", tt.in, err, tt.ok)
			continue
		}
		if tt.ok && h.String() != tt.in {
			t.Errorf("ParseHeadString(%q).String() = %q; want it back", tt.in, h.String())
		}
	}
}
