package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTTPSection runs the http section alone (-only http) with a tiny
// iteration count, to keep it from rotting: the real aegis wrap --listen,
// the HTTP floor, the pinned supergateway and the pinned TypeScript SDK
// v2's handler each serve the echo child, at both revisions (all but
// supergateway at 2026-07-28),
// every row and table is filled, the logs aegis wrote verify (the
// section checks that itself), and the plot is written. It asserts
// nothing about the figures themselves. It runs beside TestQuickRun, on
// the programs built once for both.
func TestHTTPSection(t *testing.T) {
	t.Parallel()
	aegis, child := prebuilt(t) // bench_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	res, err := Run(ctx, Config{Dir: t.TempDir(), Out: out, Quick: true, Scale: testScale, Only: []string{"http"}, Progress: tlog{t}, Aegis: aegis, child: child})
	if err != nil {
		t.Fatalf("Run -only http: %v", err)
	}
	hr := res.HTTP
	if hr == nil {
		t.Fatal("Run -only http: no http results")
	}
	if hr.Supergateway == "" {
		t.Errorf("supergateway version = %q; want the pinned one", hr.Supergateway)
	}
	if hr.V2 == "" {
		t.Errorf("TypeScript SDK v2 version = %q; want the pinned one", hr.V2)
	}
	for _, row := range hr.rows() {
		targets := map[string]Stats{"direct": row.Direct, "floor": row.Floor, "aegis": row.Aegis, "TS SDK v2": row.V2}
		if row.Revision == "2025-11-25" {
			targets["supergateway"] = row.Supergateway
		} else if row.Revision != modernRevision || row.Supergateway.N != 0 {
			t.Errorf("%s row: revision %q, supergateway %d samples; want 2025-11-25, or 2026-07-28 without supergateway", row.Mode, row.Revision, row.Supergateway.N)
		}
		for name, s := range targets {
			if s.N == 0 || s.Median <= 0 {
				t.Errorf("%s %s %s = %+v; want samples", row.Mode, row.Revision, name, s)
			}
		}
	}
	if got := len(hr.Levels); got != len(levels) {
		t.Errorf("levels = %d; want %d", got, len(levels))
	}
	for _, lv := range hr.Levels {
		if lv.Log.Intents != lv.Call.N {
			t.Errorf("level %s: %d intents in the log for %d calls", lv.Level, lv.Log.Intents, lv.Call.N)
		}
	}
	if got := len(hr.Sessions); got != 4 {
		t.Errorf("session rows = %d; want 4 (floor, aegis none, aegis strict, supergateway)", got)
	}
	for _, s := range hr.Sessions {
		if s.Base <= 0 || s.Load.N != s.Calls || s.Calls < s.Sessions {
			t.Errorf("sessions %s = %+v; want a base RSS and every call timed", s.Target, s)
		}
	}
	// A lock-step row's ratio is a number unless the overhead it divides
	// by was not positive (a direct round trip that a short run on a busy
	// machine measured slower than the front: nothing to judge by, and
	// the row says so).
	lockStep := map[string]HTTPRow{}
	for _, row := range hr.rows() {
		if row.Window <= 1 {
			lockStep[row.Revision] = row
		}
	}
	rows := 0
	for _, r := range res.Summary {
		if strings.Contains(r.Figure, "wrap --listen") {
			rows++
			if !math.IsNaN(float64(r.Ratio)) || strings.Contains(r.Figure, "pipelined") {
				continue
			}
			rev := "2025-11-25"
			if strings.Contains(r.Figure, modernRevision) {
				rev = modernRevision
			}
			row := lockStep[rev]
			divisor := row.FloorOverhead
			switch {
			case strings.Contains(r.Figure, "supergateway"):
				divisor = row.SupergatewayOverhead
			case strings.Contains(r.Figure, "TypeScript SDK v2"):
				divisor = row.V2Overhead
			}
			if float64(divisor) > 0 {
				t.Errorf("target row %q: ratio = NaN with an overhead of %v ns to divide by; want a number", r.Figure, float64(divisor))
			} else {
				t.Logf("target row %q: not judged, the overhead it divides by is %v ns", r.Figure, float64(divisor))
			}
		}
	}
	if rows != 7 {
		t.Errorf("http target rows = %d; want 7 (lock-step and pipelined at each revision; beside supergateway, and the TypeScript SDK v2 at each revision)", rows)
	}
	for _, name := range []string{"results.json", "results.md", "http_cdf.png"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v; want a non-empty file", name, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(md), "## Streamable HTTP") {
		t.Errorf("results.md has no Streamable HTTP section")
	}
}
