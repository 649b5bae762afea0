// Package interleave times baselines between blocks of a benchmark's
// loop, with the timer stopped, so that a figure and its floors share the
// drift of a shared machine (BENCHMARKS.md, "Method"). The benchmarks of
// the journal and of cmd/aegis both take it. It is for tests only.
package interleave

import (
	"testing"
	"time"
)

// Sampler samples baselines between blocks of a timed loop: after every
// Every ops of the loop, each baseline runs Per ops.
type Sampler struct {
	Every, Per int
	i          int
	ops        []func()
	total      []time.Duration
	n          int
}

// Add registers a baseline and returns its index for Mean.
func (s *Sampler) Add(op func()) int {
	s.ops = append(s.ops, op)
	s.total = append(s.total, 0)
	return len(s.ops) - 1
}

// Sample runs every baseline n times now.
func (s *Sampler) Sample(n int) {
	for k, op := range s.ops {
		t0 := time.Now()
		for range n {
			op()
		}
		s.total[k] += time.Since(t0)
	}
	s.n += n
}

// Tick counts one op of the loop and samples the baselines when due; with
// no baseline it leaves the timer running.
func (s *Sampler) Tick(b *testing.B) {
	s.i++
	if len(s.ops) == 0 || s.i%s.Every != 0 {
		return
	}
	b.StopTimer()
	s.Sample(s.Per)
	b.StartTimer()
}

// Mean is baseline k's mean op in ns.
func (s *Sampler) Mean(k int) float64 {
	return float64(s.total[k].Nanoseconds()) / float64(max(s.n, 1))
}

// Samples is how many ops each baseline has run, for a benchmark whose
// baseline shares a counter with the loop.
func (s *Sampler) Samples() int { return s.n }

// NsPerOp is the loop's mean op in ns so far, the figure the baselines
// are set beside.
func NsPerOp(b *testing.B) float64 {
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
}
