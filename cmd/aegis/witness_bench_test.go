package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/witness"
)

// BenchmarkWitnessUnreachable: what witnesses that cannot be reached cost
// a recorded call. Two aegis wrap processes, each in front of the echo
// child at --durability strict with a checkpoint after every commit group
// (--checkpoint-every 1): one without witnesses, one with two that never
// cosign (a closed port, and a listener that accepts and never answers).
// Each op is one tools/call round trip through each, alternated (and
// which goes first alternated too), so that both share the machine's
// drift:
//
//	go test -run XXX -bench WitnessUnreachable -count 5 ./cmd/aegis/
//
// without-us and with-us are the two medians (p50); p50-ratio =
// with ÷ without, target ≤ 1.03 (BENCHMARKS.md).
func BenchmarkWitnessUnreachable(b *testing.B) {
	dead, submitted := deadWitnessesSeen(b)
	start := func(extra ...string) (*rtProc, string) {
		f := benchFixture(b)
		cp := filepath.Join(f.dir, "audit.checkpoint")
		args := append([]string{"--durability", "strict", "--checkpoint-file", cp, "--checkpoint-every", "1"}, extra...)
		return startRT(b, f.wrapCmd(args, child("echo")...)), cp
	}
	without, _ := start()
	with, withCP := start(append([]string{"--witness-timeout", "1s"}, dead...)...)
	var dWithout, dWith []time.Duration
	b.ReportAllocs()
	timed := func(p *rtProc, d *[]time.Duration) int {
		t0 := time.Now()
		n := p.roundTrip(b, callReq)
		*d = append(*d, time.Since(t0))
		return n
	}
	i := 0
	for b.Loop() {
		// Each goes first every other op: the second of a pair finds
		// the disk's queue as the first left it.
		var n int
		if i++; i%2 == 0 {
			timed(without, &dWithout)
			n = timed(with, &dWith)
		} else {
			n = timed(with, &dWith)
			timed(without, &dWithout)
		}
		b.SetBytes(int64(n))
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	a, w := p50(dWithout), p50(dWith)
	b.ReportMetric(a/1e3, "without-us")
	b.ReportMetric(w/1e3, "with-us")
	b.ReportMetric(w/a, "p50-ratio")
	with.stop(b)
	without.stop(b)
	if !strings.Contains(with.stderr.String(), "unreachable") {
		b.Errorf("wrap with the witnesses does not report them unreachable:\n%s", with.stderr.String())
	}
	// What the row claims to measure: checkpoints were written and offered
	// to the witnesses while the calls ran, not skipped.
	if _, err := os.Stat(withCP); err != nil {
		b.Errorf("wrap with the witnesses wrote no checkpoint: %v", err)
	}
	if submitted.Load() == 0 {
		b.Errorf("the listening witness received no checkpoint submission (POST %s)\n%s", witness.AddCheckpointPath, with.stderr.String())
	}
	b.ReportMetric(float64(submitted.Load()), "submissions")
}
