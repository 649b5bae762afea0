package bench

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/jsonbaseline"
)

// testScale is the tests' Config.Scale: every count at its least, the
// harness's figures noise; the tests check that every section runs and
// fills its rows, never the figures.
const testScale = 0.01

// programs are aegis and aegis-bench-child, built once (as the harness
// builds them) for every run of the package's tests, so that the runs
// start at once, in parallel, instead of each building its own.
var programs struct {
	once         sync.Once
	dir          string
	aegis, child string
	err          error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if programs.dir != "" {
		os.RemoveAll(programs.dir)
	}
	os.Exit(code)
}

// prebuilt returns the paths of the programs, building them on the
// first call.
func prebuilt(t *testing.T) (aegis, child string) {
	t.Helper()
	programs.once.Do(func() {
		gobin, err := goTool()
		if err != nil {
			programs.err = err
			return
		}
		if programs.dir, programs.err = os.MkdirTemp("", "aegis-bench-test-"); programs.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		programs.aegis = filepath.Join(programs.dir, "aegis")
		programs.child = filepath.Join(programs.dir, "aegis-bench-child")
		for out, pkg := range map[string]string{programs.aegis: "./cmd/aegis", programs.child: "./bench/cmd/aegis-bench-child"} {
			if programs.err = buildProgram(ctx, gobin, "..", out, pkg); programs.err != nil {
				return
			}
		}
	})
	if programs.err != nil {
		t.Fatalf("building aegis and aegis-bench-child: %v", programs.err)
	}
	return programs.aegis, programs.child
}

// TestQuickRun runs the whole harness with a tiny iteration count, to keep
// it from rotting: every section must produce its figures, every row of the
// targets table must be present with a ratio, and the report files and
// every plot must be written. It asserts nothing about the figures
// themselves (benchmarks, never timed tests).
//
// It runs beside TestHTTPSection, which runs the http section; the scan
// section runs alone first, in TestScanSection, because it counts
// allocations, which testing.AllocsPerRun counts over the whole process.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds aegis and starts some hundred processes")
	}
	t.Parallel()
	aegis, child := prebuilt(t)
	// Not a time limit on the harness (a loaded machine runs it slowly),
	// a bound on a run that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	var only []string
	for _, s := range Sections {
		if s != "scan" && s != "http" {
			only = append(only, s)
		}
	}
	res, err := Run(ctx, Config{Dir: t.TempDir(), Out: out, Quick: true, Scale: testScale, Only: only, Progress: tlog{t}, Aegis: aegis, child: child})
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
	if d := res.Durability; d != nil && (d.AfterHop.N == 0 || d.AfterHop.N != 2*(d.AfterHop.N/2) || math.IsNaN(float64(d.Levels[0].VsAfterHop))) {
		t.Errorf("pre-zeroed floor after a hop: %d samples, strict ratio %v; want an even number > 0 and a ratio", d.AfterHop.N, d.Levels[0].VsAfterHop)
	}
	if got := len(res.InFlight); got != 4 {
		t.Errorf("in-flight rows = %d; want 4", got)
	}
	if got := len(res.Sizes); got != 3 {
		t.Errorf("size rows = %d; want 3", got)
	}
	for _, v := range []*VerifyResult{res.Verify, res.VerifyLockStep} {
		if v == nil || v.Log.Intents == 0 {
			t.Errorf("verify = %+v; want a log with intents, of each shape", v)
		}
	}
	if got := len(res.RSS); got != 2 {
		t.Errorf("rss rows = %d; want 2", got)
	}
	if got := len(res.Clients); got != 3 {
		t.Errorf("client rows = %d; want 3 (the TypeScript SDK v1 and v2, the Go SDK)", got)
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
		for i, st := range []Stats{c.Direct, c.CRelay, c.None, c.Strict} {
			if clientTargets[i].name == "crelay" && gccErr != nil {
				continue // not built: checked with the round trips' rows
			}
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

	// Every figure of the targets table but the scan's: 4 round trip rows,
	// relay CPU per message against the C floor relay over each
	// transport, strict, reply, none, group commit, 16 MiB ×2, verify of
	// two logs, each of three real clients at none and strict, start at
	// none, at strict, and at strict with --confine.
	want := 4 + 2 + 3 + 1 + 2 + 2 + 6 + 3
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

// TestScanSection runs the scan section alone (-only scan), before the
// parallel tests start (see TestQuickRun): a row per frame with its
// allocations counted, a row of the targets table per frame, and the
// report's table.
func TestScanSection(t *testing.T) {
	aegis, child := prebuilt(t)
	out := t.TempDir()
	res, err := Run(context.Background(), Config{Dir: t.TempDir(), Out: out, Quick: true, Scale: testScale, Only: []string{"scan"}, Progress: tlog{t}, Aegis: aegis, child: child})
	if err != nil {
		t.Fatalf("Run -only scan: %v", err)
	}
	if got := len(res.Scan); got != len(jsonbaseline.Frames) {
		t.Errorf("scan rows = %d; want %d", got, len(jsonbaseline.Frames))
	}
	for _, s := range res.Scan {
		if s.Classify.N == 0 || s.JSON.N == 0 || s.JSONAllocs == 0 {
			t.Errorf("scan %s = %+v; want both timed and encoding/json's allocations counted", s.Frame, s)
		}
	}
	rows := 0
	for _, r := range res.Summary {
		if strings.HasPrefix(r.Figure, "frame scan, ") {
			rows++
			if math.IsNaN(float64(r.Ratio)) || r.Pass == nil {
				t.Errorf("target row %q: ratio %v, pass %v; want it judged", r.Figure, r.Ratio, r.Pass)
			}
		}
	}
	if rows != len(jsonbaseline.Frames) || len(res.Summary) != rows {
		t.Errorf("target rows = %d, of them scan rows %d; want %d scan rows only", len(res.Summary), rows, len(jsonbaseline.Frames))
	}
	md, _ := os.ReadFile(filepath.Join(out, "results.md"))
	if !strings.Contains(string(md), "## Frame scan") {
		t.Errorf("results.md has no Frame scan section")
	}
}

// tlog writes progress lines to the test log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
