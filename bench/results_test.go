package bench

import (
	"math"
	"strings"
	"testing"
)

// TestSummariseClientsStrict checks the real clients' strict row, whose
// limit is the fsync section's floor: judged against it when the section
// ran, left unjudged, saying why, in a run without it (-only clients).
func TestSummariseClientsStrict(t *testing.T) {
	client := ClientResult{Client: "Go SDK", Direct: Stats{N: 10, Median: 400e3}, NoneOverhead: 30e3, StrictOverhead: 900e3}
	tests := []struct {
		name       string
		fsync      FsyncResult
		wantRatio  float64 // NaN: unjudged
		wantPass   bool
		wantTarget string
	}{
		{"fsync ran", FsyncResult{Overwrite: Stats{N: 50, Median: 400e3}}, 1, true, "= +900 µs"},
		{"fsync ran, slow call", FsyncResult{Overwrite: Stats{N: 50, Median: 300e3}}, 900.0 / 700, false, "= +700 µs"},
		{"no fsync section", FsyncResult{}, math.NaN(), false, "floor not measured"},
	}
	for _, tt := range tests {
		rows := summarise(&Results{Fsync: tt.fsync, Clients: []ClientResult{client}})
		var strict *TargetRow
		for i := range rows {
			if strings.HasSuffix(rows[i].Figure, "through wrap at strict") {
				strict = &rows[i]
			}
		}
		if strict == nil {
			t.Fatalf("%s: no strict row in %+v", tt.name, rows)
		}
		got := float64(strict.Ratio)
		if math.IsNaN(tt.wantRatio) {
			if !math.IsNaN(got) || strict.Pass != nil {
				t.Errorf("%s: ratio %v, pass %v; want NaN, unjudged", tt.name, got, strict.Pass)
			}
		} else if math.Abs(got-tt.wantRatio) > 1e-9 || strict.Pass == nil || *strict.Pass != tt.wantPass {
			t.Errorf("%s: ratio %v, pass %v; want %v, %v", tt.name, got, strict.Pass, tt.wantRatio, tt.wantPass)
		}
		if !strings.Contains(strict.Target, tt.wantTarget) {
			t.Errorf("%s: target %q; want it to say %q", tt.name, strict.Target, tt.wantTarget)
		}
	}
}
