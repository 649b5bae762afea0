package bench

import (
	"fmt"
	"math"
	"time"
)

// Results is everything one run measured; results.json is this, encoded.
type Results struct {
	Machine    Machine           `json:"machine"`
	Command    string            `json:"command"`
	Quick      bool              `json:"quick"`
	Scale      float64           `json:"scale"`
	Started    time.Time         `json:"started"`
	ElapsedSec float64           `json:"elapsed_s"`
	LoadStart  string            `json:"load_avg_start"`
	LoadEnd    string            `json:"load_avg_end"`
	Summary    []TargetRow       `json:"targets"`
	Fsync      FsyncResult       `json:"fsync"`
	RoundTrip  []RTResult        `json:"round_trip"`
	Durability *DurabilityResult `json:"durability,omitempty"`
	InFlight   []InFlightResult  `json:"in_flight"`
	Sizes      []SizeResult      `json:"sizes"`
	Scan       []ScanResult      `json:"scan"`
	Verify     *VerifyResult     `json:"verify,omitempty"`
	// VerifyLockStep is verify on the log a sequential agent makes.
	VerifyLockStep *VerifyResult  `json:"verify_lock_step,omitempty"`
	RSS            []RSSResult    `json:"rss"`
	Start          []StartResult  `json:"start"`
	Clients        []ClientResult `json:"clients"`
	HTTP           *HTTPResult    `json:"http,omitempty"` // http.go
	Profiles       []Profile      `json:"profiles,omitempty"`

	// Samples kept for the plots.
	fsyncSamples    []time.Duration
	rtSamples       []rtSamples
	durSamples      map[string][]time.Duration
	inFlightSamples [][]time.Duration
	startSamples    map[string][]time.Duration // by target
	clientSamples   map[string][]time.Duration // by clientKey(client, target)
	profilePaths    []string
}

// TargetRow is one row of the targets table (BENCHMARKS.md), as measured.
type TargetRow struct {
	Figure   string `json:"figure"`
	Floor    string `json:"floor"`    // the floor, with its value in this run
	Target   string `json:"target"`   // e.g. "≤ 1.5×"
	Measured string `json:"measured"` // the figure itself
	Ratio    Ratio  `json:"ratio"`
	// Pass is null when the figure could not be judged (not measured, or
	// a floor lost in noise).
	Pass *bool  `json:"pass"`
	Miss string `json:"miss,omitempty"` // by how much, when missed
}

// judge fills Pass and Miss: want is "le" (ratio ≤ t) or "ge" (ratio ≥ t).
func (r *TargetRow) judge(want string, t float64, extra bool) {
	v := float64(r.Ratio)
	if math.IsNaN(v) {
		return
	}
	var ok bool
	if want == "le" {
		ok = v <= t && extra
		if v > t {
			r.Miss = fmt.Sprintf("%.2f× over target (%.0f%% too slow)", v/t, (v/t-1)*100)
		}
	} else {
		ok = v >= t && extra
		if v < t {
			r.Miss = fmt.Sprintf("%.0f%% of target (needs %.2f× more)", v/t*100, t/v)
		}
	}
	r.Pass = &ok
}

// summarise builds the targets table from the sections that ran.
func summarise(res *Results) []TargetRow {
	var rows []TargetRow
	for _, rt := range res.RoundTrip {
		r := TargetRow{
			Figure:   fmt.Sprintf("unrecorded round trip through wrap, %s, %s", rt.Transport, modeName(rt)),
			Floor:    fmt.Sprintf("floor relay's overhead %s (floor %s − direct %s)", us(rt.FloorOverhead), us(rt.Floor.Median), us(rt.Direct.Median)),
			Target:   "≤ 1.5× overhead",
			Measured: fmt.Sprintf("wrap's overhead %s (wrap %s); CPU/msg wrap %s, floor relay %s", us(rt.WrapOverhead), us(rt.Wrap.Median), us(float64(rt.WrapCPU)), us(float64(rt.FloorCPU))),
			Ratio:    rt.Ratio,
		}
		r.judge("le", 1.5, true)
		rows = append(rows, r)
	}
	for _, rt := range res.RoundTrip {
		if rt.Mode != "pipelined" {
			continue
		}
		floor := fmt.Sprintf("C poll/read/write relay, %s/msg", us(float64(rt.CRelayCPU)))
		if rt.CRelayMissing != "" {
			floor = "C poll/read/write relay: not measured, " + rt.CRelayMissing
		}
		r := TargetRow{
			Figure:   fmt.Sprintf("unrecorded messages, %d in flight: relay CPU per message, %s", rt.Window, rt.Transport),
			Floor:    floor,
			Target:   "≤ 1.3×",
			Measured: fmt.Sprintf("wrap %s/msg (Go floor relay %s/msg, wrap ÷ Go floor %s)", us(float64(rt.WrapCPU)), us(float64(rt.FloorCPU)), fx(rt.CPURatio)),
			Ratio:    rt.CPUVsC,
		}
		r.judge("le", 1.3, true)
		rows = append(rows, r)
	}
	if d := res.Durability; d != nil {
		for _, lv := range d.Levels {
			switch lv.Level {
			case "strict", "reply":
				// Issue 27's rows: recording ÷ syncs × fdatasync over
				// pre-zeroed space, the journal's own means, each sync
				// taken after a hop between processes as the journal's are.
				r := TargetRow{
					Figure: "recorded tools/call at " + lv.Level,
					Floor:  fmt.Sprintf("%d × fdatasync over pre-zeroed space, each after a hop = %s", lv.Syncs, us(float64(lv.Syncs)*d.AfterHop.Median)),
					Target: "≤ 1.15×",
					Measured: fmt.Sprintf("recording costs %s (call %s − unrecorded %s); %s of %d × the pre-zeroed floor taken in bursts (%s), %s of %d × fdatasync appended (%s); the whole call is %s of the appended floor (p99 %s; wrap CPU/call %s)",
						us(lv.OverUnrecorded), us(lv.Call.Median), us(d.Unrecorded.Median), fx(lv.VsOverwrite), lv.Syncs, us(d.Overwrite.Median), fx(lv.Recording), lv.Syncs, us(d.Fsync.Median), fx(lv.Ratio), us(lv.Call.P99), us(float64(lv.CPU))),
					Ratio: lv.VsAfterHop,
				}
				if lv.Level == "reply" && d.ReplyShape.Median > 0 {
					r.Measured += fmt.Sprintf("; its shape without aegis (append, round trip, append, fdatasync) costs %s of the appended floor", fx(ratio(d.ReplyShape.Median, d.Fsync.Median)))
				}
				r.judge("le", 1.15, true)
				rows = append(rows, r)
			case "none":
				// Issue 27's row: at most 20 µs over the unrecorded call.
				const limit = 20e3
				r := TargetRow{
					Figure:   "recorded tools/call at none",
					Floor:    fmt.Sprintf("the unrecorded call %s", us(d.Unrecorded.Median)),
					Target:   "≤ +" + us(limit),
					Measured: fmt.Sprintf("%s: +%s over unrecorded (wrap CPU %s over a ping's; 2 records' sign+hash+write need %s)", us(lv.Call.Median), us(lv.OverUnrecorded), us(float64(lv.CPUOverUnrecorded)), us(d.Needed)),
					Ratio:    Ratio(lv.OverUnrecorded / limit),
				}
				r.judge("le", 1, true)
				rows = append(rows, r)
			}
		}
	}
	for _, f := range res.InFlight {
		if f.InFlight != 32 {
			continue
		}
		r := TargetRow{
			Figure:   "group commit: 32 calls in flight at strict",
			Floor:    "calls per fdatasync (signed groups in the log)",
			Target:   "≥ 15.5",
			Measured: fmt.Sprintf("%d calls in %d groups, %.0f calls/s", f.Calls, f.Groups, f.PerSec),
			Ratio:    f.CallsPerSync,
		}
		r.judge("ge", 15.5, true)
		rows = append(rows, r)
	}
	for _, s := range res.Sizes {
		if s.Bytes < 16<<20 {
			continue
		}
		for _, k := range []struct {
			what string
			mbps float64
			r    Ratio
			t    float64
		}{{"unrecorded", s.UnrecordedMBps, s.UnrecordedRatio, 0.8}, {"recorded (strict)", s.RecordedMBps, s.RecordedRatio, 0.5}} {
			r := TargetRow{
				Figure:   "16 MiB response relayed, " + k.what,
				Floor:    fmt.Sprintf("floor relay %.0f MB/s", s.FloorMBps),
				Target:   fmt.Sprintf("≥ %.1f×", k.t),
				Measured: fmt.Sprintf("%.0f MB/s", k.mbps),
				Ratio:    k.r,
			}
			r.judge("ge", k.t, true)
			rows = append(rows, r)
		}
	}
	for _, s := range res.Scan {
		r := TargetRow{
			Figure:   "frame scan, " + s.Frame,
			Floor:    fmt.Sprintf("encoding/json %.0f ns/frame", s.JSON.Median),
			Target:   "≥ 5× faster, 0 allocs/frame",
			Measured: fmt.Sprintf("%.0f ns/frame, %g allocs/frame", s.Classify.Median, s.FrameAllocs),
			Ratio:    s.Speedup,
		}
		r.judge("ge", 5, s.FrameAllocs == 0)
		if r.Pass != nil && !*r.Pass && s.FrameAllocs != 0 {
			r.Miss = fmt.Sprintf("%s %g allocs/frame", r.Miss, s.FrameAllocs)
		}
		rows = append(rows, r)
	}
	for _, v := range []*VerifyResult{res.Verify, res.VerifyLockStep} {
		if v == nil {
			continue
		}
		r := TargetRow{
			Figure:   "verify, log made " + v.Shape,
			Floor:    fmt.Sprintf("sha256sum %.0f MB/s", v.ShaMBps),
			Target:   fmt.Sprintf("≥ %.2g× by CPU time", v.Target),
			Measured: fmt.Sprintf("%.0f MB/s (%d records, %d signed); by wall time %s, verify on every core, sha256sum on one", v.VerifyMBps, v.Log.Records, v.Log.Signed, fx(v.Ratio)),
			Ratio:    v.CPURatio,
		}
		r.judge("ge", v.Target, true)
		rows = append(rows, r)
	}
	for _, c := range res.Clients {
		// strict's limit is the fsync section's floor; a run without that
		// section (-only clients) leaves the row unjudged.
		strict, strictText := math.NaN(), "≤ 2 × pre-zeroed fdatasync + 100 µs (floor not measured: the fsync section did not run)"
		if pre := res.Fsync.Overwrite; pre.N > 0 {
			strict, strictText = 2*pre.Median+100e3, fmt.Sprintf("≤ 2 × pre-zeroed fdatasync + 100 µs = +%s", us(2*pre.Median+100e3))
		}
		none := TargetRow{
			Figure:   fmt.Sprintf("%s client → server-everything, tools/call through wrap at none", c.Client),
			Floor:    fmt.Sprintf("direct + the C relay's two hops: the same client through the C floor relay placed where wrap is, median %s (direct %s)", us(c.CRelay.Median), us(c.Direct.Median)),
			Target:   fmt.Sprintf("≤ %.1f× of that", clientNoneLimit),
			Measured: fmt.Sprintf("median %s (+%s over direct; the C relay +%s)", us(c.None.Median), us(c.NoneOverhead), us(float64(c.CRelayOverhead))),
			Ratio:    c.NoneVsCRelay,
		}
		if c.CRelay.N == 0 {
			none.Floor = "direct + the C relay's two hops (not measured: the C floor relay was not built)"
		}
		none.judge("le", clientNoneLimit, true)
		r := TargetRow{
			Figure:   fmt.Sprintf("%s client → server-everything, tools/call through wrap at strict", c.Client),
			Floor:    fmt.Sprintf("the same client → server directly, median %s", us(c.Direct.Median)),
			Target:   strictText,
			Measured: fmt.Sprintf("+%s", us(c.StrictOverhead)),
			Ratio:    Ratio(c.StrictOverhead / strict),
		}
		r.judge("le", 1, true)
		rows = append(rows, none, r)
	}
	for _, st := range res.Start {
		// Issue 27's targets: +5 ms over a direct spawn for wrap at any
		// durability, +8 ms confined.
		limit := map[string]float64{"wrap none": 5e6, "wrap strict": 5e6, "wrap strict --confine": 8e6}[st.Target]
		if limit == 0 {
			continue
		}
		r := TargetRow{
			Figure:   "start (spawn → initialize answered), " + st.Target,
			Floor:    fmt.Sprintf("the child spawned directly, median %s", us(res.Start[0].Stats.Median)),
			Target:   "≤ +" + us(limit),
			Measured: fmt.Sprintf("+%s (median %s)", us(st.Overhead), us(st.Stats.Median)),
			Ratio:    Ratio(st.Overhead / limit),
		}
		r.judge("le", 1, true)
		rows = append(rows, r)
	}
	return append(rows, httpRows(res)...) // httpreport.go
}

func modeName(rt RTResult) string {
	if rt.Mode == "pipelined" {
		return fmt.Sprintf("pipelined ×%d", rt.Window)
	}
	return rt.Mode
}

// us formats ns as µs (or ms above 10 ms).
func us(ns float64) string {
	switch {
	case math.IsNaN(ns):
		return "–"
	case math.Abs(ns) >= 10e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case math.Abs(ns) >= 100e3:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
	return fmt.Sprintf("%.1f µs", ns/1e3)
}
