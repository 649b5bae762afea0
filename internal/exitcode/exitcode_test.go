package exitcode

import "testing"

func TestWorse(t *testing.T) {
	tests := []struct {
		a, b, want int
	}{
		{OK, OK, OK},
		{OK, Incomplete, Incomplete},
		{Incomplete, OK, Incomplete},
		{Incomplete, Invalid, Invalid},
		{Invalid, Incomplete, Invalid},
		{Invalid, Usage, Usage},
		{Usage, Invalid, Usage},
		{Usage, OK, Usage},
	}
	for _, tt := range tests {
		if got := Worse(tt.a, tt.b); got != tt.want {
			t.Errorf("Worse(%d, %d) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
