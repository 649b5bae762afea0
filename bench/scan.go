package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/jsonbaseline"
)

// ScanResult is frame.Classifier.Classify against encoding/json doing the
// same classification (find tools/calls and their names, responses and
// their isError) on the same frame, in the same rounds.
type ScanResult struct {
	Frame     string  `json:"frame"`
	Bytes     int     `json:"bytes"`
	Classify  Stats   `json:"classify"` // ns per frame, one sample per round
	JSON      Stats   `json:"encoding_json"`
	FrameMBps float64 `json:"classify_mb_s"`
	JSONMBps  float64 `json:"encoding_json_mb_s"`
	// Speedup is encoding/json's median ÷ Classify's; the target is ≥ 5.
	Speedup     Ratio   `json:"speedup"`
	FrameAllocs float64 `json:"classify_allocs_per_frame"` // steady state; the target is 0
	JSONAllocs  float64 `json:"encoding_json_allocs_per_frame"`
}

func (h *harness) scanSection(ctx context.Context) error {
	for _, fr := range jsonbaseline.Frames {
		var c frame.Classifier
		var f frame.Frame
		var s jsonbaseline.Summary
		classify := func() { c.Classify(fr.Line, &f) }
		decode := func() {
			if err := jsonbaseline.Classify(fr.Line, &s); err != nil {
				panic(err) // the frames are fixed and valid
			}
		}
		classify()
		if f.Kind == frame.NotJSON || f.Anomaly != "" {
			return fmt.Errorf("frame %s: classified %v %q", fr.Name, f.Kind, f.Anomaly)
		}
		var fs, js samples
		n := h.it.scanFrames
		for round := 0; round < h.it.scanRounds && ctx.Err() == nil; round++ {
			fs.add(timePer(classify, n))
			js.add(timePer(decode, n))
		}
		r := ScanResult{Frame: fr.Name, Bytes: len(fr.Line), Classify: fs.stats(), JSON: js.stats()}
		r.FrameMBps = float64(len(fr.Line)) / r.Classify.Median * 1e3
		r.JSONMBps = float64(len(fr.Line)) / r.JSON.Median * 1e3
		r.Speedup = ratio(r.JSON.Median, r.Classify.Median)
		r.FrameAllocs = testing.AllocsPerRun(200, classify)
		r.JSONAllocs = testing.AllocsPerRun(200, decode)
		h.res.Scan = append(h.res.Scan, r)
		h.logf("   %-10s classify %6.0f ns (%4.0f MB/s, %.0f allocs), encoding/json %6.0f ns (%.0f allocs): %.1f×",
			fr.Name, r.Classify.Median, r.FrameMBps, r.FrameAllocs, r.JSON.Median, r.JSONAllocs, r.Speedup)
	}
	return nil
}

// timePer runs f n times and returns the time per run.
func timePer(f func(), n int) time.Duration {
	t0 := time.Now()
	for range n {
		f()
	}
	return time.Since(t0) / time.Duration(n)
}
