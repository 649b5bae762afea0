package bench

import (
	"slices"
	"strconv"
	"testing"
)

// TestLogTicks125 checks the labels of the start and clients plots' axes:
// 1, 2 and 5 times each power of ten over a decade or two, the powers
// alone over more, every mark where that would label fewer than two.
func TestLogTicks125(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		want   []string // the labelled ticks
		marks  int      // ticks, labelled or not
	}{
		{"starts in ms", 2.5, 90, []string{"5", "10", "20", "50"}, 16},
		{"calls in µs", 150, 20000, []string{"200", "500", "1000", "2000", "5000", "10000", "20000"}, 19},
		{"four decades", 3, 20000, []string{"10", "100", "1000", "10000"}, 36},
		{"under a decade", 3.5, 8.5, []string{"4", "5", "6", "7", "8"}, 5},
		{"below one", 0.15, 0.6, []string{"0.2", "0.5"}, 5},
		{"no range", 0, 10, nil, 0},
	}
	for _, tt := range tests {
		ticks := logTicks125{}.Ticks(tt.lo, tt.hi)
		var got []string
		for _, tk := range ticks {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
			if tk.Value < tt.lo || tk.Value > tt.hi {
				t.Errorf("%s: tick %g outside [%g, %g]", tt.name, tk.Value, tt.lo, tt.hi)
			}
		}
		if !slices.Equal(got, tt.want) || len(ticks) != tt.marks {
			t.Errorf("%s: Ticks(%g, %g) labels %q, %d marks; want %q, %d", tt.name, tt.lo, tt.hi, got, len(ticks), tt.want, tt.marks)
		}
	}
}

// TestLinTicks125 checks the verify plot's MB/s axis: at most six marks,
// a step of 1, 2 or 5 times a power of ten, plain labels.
func TestLinTicks125(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		want   []float64
	}{
		{"MB/s", 0, 280, []float64{0, 100, 200}},
		{"MB/s, taller", 0, 330, []float64{0, 100, 200, 300}},
		{"small", 0, 9, []float64{0, 2, 4, 6, 8}},
		{"offset", 13, 61, []float64{20, 30, 40, 50, 60}},
		{"empty", 5, 5, nil},
	}
	for _, tt := range tests {
		var got []float64
		for _, tk := range (linTicks125{}).Ticks(tt.lo, tt.hi) {
			got = append(got, tk.Value)
			if want := strconv.FormatFloat(tk.Value, 'f', -1, 64); tk.Label != want {
				t.Errorf("%s: tick %g labelled %q; want %q", tt.name, tk.Value, tk.Label, want)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Ticks(%g, %g) = %v; want %v", tt.name, tt.lo, tt.hi, got, tt.want)
		}
	}
}
