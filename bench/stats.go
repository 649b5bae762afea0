package bench

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Stats summarises a set of durations. Values are in nanoseconds so that
// the JSON report carries exact integers.
type Stats struct {
	N      int     `json:"n"`
	Median float64 `json:"median_ns"`
	P99    float64 `json:"p99_ns"`
	Mean   float64 `json:"mean_ns"`
	Min    float64 `json:"min_ns"`
	Max    float64 `json:"max_ns"`
}

// samples collects durations of one operation. Not safe for concurrent use.
type samples struct {
	d []time.Duration
}

func (s *samples) add(d time.Duration) { s.d = append(s.d, d) }

func (s *samples) n() int { return len(s.d) }

// stats sorts the samples (in place) and summarises them.
func (s *samples) stats() Stats {
	if len(s.d) == 0 {
		return Stats{}
	}
	slices.Sort(s.d)
	var sum float64
	for _, d := range s.d {
		sum += float64(d)
	}
	return Stats{
		N:      len(s.d),
		Median: float64(quantile(s.d, 0.5)),
		P99:    float64(quantile(s.d, 0.99)),
		Mean:   sum / float64(len(s.d)),
		Min:    float64(s.d[0]),
		Max:    float64(s.d[len(s.d)-1]),
	}
}

// quantile is the nearest-rank q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// cdf returns up to n points (latency in µs, cumulative fraction) of sorted
// durations, for plotting.
func cdf(sorted []time.Duration, n int) [][2]float64 {
	if len(sorted) == 0 {
		return nil
	}
	n = min(n, len(sorted))
	pts := make([][2]float64, 0, n)
	for k := range n {
		i := k * (len(sorted) - 1) / max(n-1, 1)
		pts = append(pts, [2]float64{float64(sorted[i]) / 1e3, float64(i+1) / float64(len(sorted))})
	}
	return pts
}

// Num is a derived figure (a ratio, a CPU time) that may be unknown: NaN
// (a floor that could not be measured, or one lost in noise) is written as
// null in JSON.
type Num float64

// MarshalJSON writes n as a number, or null when it is not finite.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

// Ratio is a figure divided by its floor.
type Ratio = Num

// ratio is a / b, or NaN when b is not positive.
func ratio(a, b float64) Ratio {
	if b <= 0 {
		return Ratio(math.NaN())
	}
	return Ratio(a / b)
}
