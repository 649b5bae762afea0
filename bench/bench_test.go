package bench

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/jsonbaseline"
)

// TestQuickRun runs the whole harness with a tiny iteration count, to keep
// it from rotting: every section must produce its figures, every row of the
// targets table must be present with a ratio, and the report files and
// every plot must be written. It asserts nothing about the figures
// themselves (benchmarks, never timed tests).
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds aegis and starts some hundred processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	out := t.TempDir()
	res, err := Run(ctx, Config{Dir: t.TempDir(), Out: out, Quick: true, Scale: 0.02, Pprof: true, Progress: tlog{t}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	if got := len(res.RoundTrip); got != 4 {
		t.Errorf("round trip rows = %d; want 4 (pipe, socketpair × lock-step, pipelined)", got)
	}
	// The C floor relay runs wherever gcc does; without gcc its rows say
	// why instead.
	_, gccErr := exec.LookPath("gcc")
	for _, r := range res.RoundTrip {
		if measured := r.CRelay.N > 0 && !math.IsNaN(float64(r.CPUVsC)); measured != (gccErr == nil) || measured == (r.CRelayMissing != "") {
			t.Errorf("%s %s: C floor relay %d samples, CPU ratio %v, missing %q; want it measured = %v (gcc: %v)",
				r.Transport, r.Mode, r.CRelay.N, r.CPUVsC, r.CRelayMissing, gccErr == nil, gccErr)
		}
	}
	if res.Durability == nil || len(res.Durability.Levels) != len(levels) {
		t.Errorf("durability = %+v; want %d levels", res.Durability, len(levels))
	}
	if got := len(res.InFlight); got != 4 {
		t.Errorf("in-flight rows = %d; want 4", got)
	}
	if got := len(res.Sizes); got != 3 {
		t.Errorf("size rows = %d; want 3", got)
	}
	if got := len(res.Scan); got != len(jsonbaseline.Frames) {
		t.Errorf("scan rows = %d; want %d", got, len(jsonbaseline.Frames))
	}
	for _, v := range []*VerifyResult{res.Verify, res.VerifyLockStep} {
		if v == nil || v.Log.Intents == 0 {
			t.Errorf("verify = %+v; want a log with intents, of each shape", v)
		}
	}
	if got := len(res.RSS); got != 2 {
		t.Errorf("rss rows = %d; want 2", got)
	}
	if got := len(res.Clients); got != 2 {
		t.Errorf("client rows = %d; want 2 (the TypeScript and Go SDKs)", got)
	}
	if got := len(res.Start); got != len(startTargets) {
		t.Errorf("start rows = %d; want %d", got, len(startTargets))
	}
	// The CDF plots draw every sample the rows summarise.
	for _, r := range res.Start {
		if got := len(res.startSamples[r.Target]); got == 0 || got != r.Stats.N {
			t.Errorf("start %s: %d samples kept for the plot; want the row's %d", r.Target, got, r.Stats.N)
		}
	}
	for _, c := range res.Clients {
		for i, st := range []Stats{c.Direct, c.None, c.Strict} {
			key := clientKey(c.Client, clientTargets[i].name)
			if got := len(res.clientSamples[key]); got == 0 || got != st.N {
				t.Errorf("%s: %d samples kept for the plot; want the row's %d", key, got, st.N)
			}
		}
	}
	if got := len(res.Profiles); got != 8 {
		t.Errorf("profiles = %d; want 8 (seven of wrap, one of verify)", got)
	}
	if res.Machine.FsyncFloor <= 0 || res.Machine.FS == "" {
		t.Errorf("machine = %+v; want a fdatasync floor and a filesystem", res.Machine)
	}

	// Every figure of the targets table: 4 round trip rows, relay CPU per
	// message against the C floor relay over each transport, strict,
	// reply, none, group commit, 16 MiB ×2, a scan row per frame, verify
	// of two logs, each real client at none and strict, start at strict
	// with and without --confine.
	want := 4 + 2 + 3 + 1 + 2 + len(jsonbaseline.Frames) + 2 + 4 + 2
	if got := len(res.Summary); got != want {
		t.Errorf("target rows = %d; want %d", got, want)
	}
	for _, r := range res.Summary {
		// A round trip's floor overhead (floor relay − direct) may be lost
		// in the noise of a tiny run; every other floor is a number.
		// The C floor relay's rows are NaN where gcc is missing (checked above).
		if math.IsNaN(float64(r.Ratio)) && !strings.HasPrefix(r.Figure, "unrecorded round trip") && !strings.Contains(r.Floor, "not measured") {
			t.Errorf("target row %q: ratio = NaN; want a number", r.Figure)
		}
	}

	for _, name := range []string{"results.json", "results.md", "latency_durability.png", "roundtrip_cdf.png",
		"inflight_throughput.png", "inflight_calls_per_fdatasync.png", "response_throughput.png",
		"verify_throughput.png", "start_cdf.png", "clients_cdf.png", "wrap-1.pprof"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v; want a non-empty file", name, err)
		}
	}
}

// tlog writes progress lines to the test log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
