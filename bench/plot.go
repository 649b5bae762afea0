package bench

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plot draws the run's figures into dir as PNG files, each when its
// section ran:
//
//	latency_durability.png          CDF of a recorded call's latency per level, with its floors
//	roundtrip_cdf.png               CDF of the unrecorded lock-step round trip per target and client side
//	inflight_throughput.png         calls/s against calls in flight (strict)
//	inflight_calls_per_fdatasync.png  calls per fdatasync against calls in flight, with the target
//	response_throughput.png         MB/s against response size
//	verify_throughput.png           verify's MB/s beside sha256sum's on the same log, per log shape
//	start_cdf.png                   CDF of spawn → initialize answered per start target
//	clients_cdf.png                 CDF of a real client's lock-step tools/call per client and target
//	http_cdf.png                    CDF of the Streamable HTTP round trip per front and level (httpreport.go)
func (h *harness) plot(dir string) error {
	draws := []func(*Results, string) error{plotDurability, plotRoundTrip, plotInFlight, plotSizes,
		plotVerify, plotStart, plotClients, plotHTTP /* httpreport.go */}
	// The plots share nothing but gonum's font cache, which is safe for
	// concurrent use; drawn at once they take a fraction of the time on
	// more than one core.
	errs := make([]error, len(draws))
	var wg sync.WaitGroup
	for i, draw := range draws {
		wg.Go(func() { errs[i] = draw(h.res, dir) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// plotDurability draws latency_durability.png.
func plotDurability(res *Results, dir string) error {
	if len(res.durSamples) == 0 {
		return nil
	}
	p := cdfPlot("Recorded tools/call by durability (lock-step, pipes)")
	var lines []any
	for _, k := range []string{"fdatasync", "unrecorded", "none", "interval", "reply", "strict"} {
		name := k
		if k == "fdatasync" {
			name = "raw fdatasync (floor)"
		} else if k == "unrecorded" {
			name = "unrecorded ping"
		}
		lines = append(lines, name, cdfXYs(res.durSamples[k]))
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	return save(p, dir, "latency_durability.png")
}

// plotRoundTrip draws roundtrip_cdf.png.
func plotRoundTrip(res *Results, dir string) error {
	if len(res.rtSamples) == 0 {
		return nil
	}
	p := cdfPlot("Unrecorded round trip (ping, lock-step)")
	var lines []any
	for _, rs := range res.rtSamples {
		for i, target := range []string{"direct", "floor relay", "C floor relay", "wrap"} {
			if rs.s[i].n() > 0 { // the C floor relay may not have been built
				lines = append(lines, target+" / "+string(rs.t), cdfXYs(rs.s[i].d))
			}
		}
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	return save(p, dir, "roundtrip_cdf.png")
}

// plotInFlight draws inflight_throughput.png and
// inflight_calls_per_fdatasync.png.
func plotInFlight(res *Results, dir string) error {
	if len(res.InFlight) == 0 {
		return nil
	}
	tp, lt, cps := make(plotter.XYs, len(res.InFlight)), make(plotter.XYs, len(res.InFlight)), make(plotter.XYs, len(res.InFlight))
	for i, f := range res.InFlight {
		tp[i] = plotter.XY{X: float64(f.InFlight), Y: f.PerSec}
		lt[i] = plotter.XY{X: float64(f.InFlight), Y: f.LittlePerSec}
		cps[i] = plotter.XY{X: float64(f.InFlight), Y: float64(f.CallsPerSync)}
	}
	p := plot.New()
	p.Title.Text = "Throughput against calls in flight (strict, pipes)"
	p.X.Label.Text, p.Y.Label.Text = "calls in flight", "calls/s"
	p.Y.Min = 0
	inFlightTicks(p, res.InFlight)
	p.Legend.Top, p.Legend.Left = true, true
	if err := plotutil.AddLinePoints(p, "calls ÷ elapsed", tp, "in flight ÷ median latency (Little)", lt); err != nil {
		return err
	}
	if err := save(p, dir, "inflight_throughput.png"); err != nil {
		return err
	}
	p = plot.New()
	p.Title.Text = "Group commit: calls per fdatasync (strict, pipes)"
	p.X.Label.Text, p.Y.Label.Text = "calls in flight", "calls per fdatasync"
	p.Y.Min = 0
	inFlightTicks(p, res.InFlight)
	target := plotter.NewFunction(func(float64) float64 { return 16 })
	if err := plotutil.AddLinePoints(p, "measured (signed groups in the log)", cps); err != nil {
		return err
	}
	target.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(target)
	p.Legend.Add("target at 32 in flight (16)", target)
	p.Legend.Top, p.Legend.Left = true, true
	return save(p, dir, "inflight_calls_per_fdatasync.png")
}

// plotSizes draws response_throughput.png.
func plotSizes(res *Results, dir string) error {
	if len(res.Sizes) == 0 {
		return nil
	}
	var d, f, u, r plotter.XYs
	for _, s := range res.Sizes {
		x := float64(s.Bytes)
		d = append(d, plotter.XY{X: x, Y: s.DirectMBps})
		f = append(f, plotter.XY{X: x, Y: s.FloorMBps})
		u = append(u, plotter.XY{X: x, Y: s.UnrecordedMBps})
		r = append(r, plotter.XY{X: x, Y: s.RecordedMBps})
	}
	p := plot.New()
	p.Title.Text = "Response throughput (lock-step, pipes)"
	p.X.Label.Text, p.Y.Label.Text = "response size", "MB/s"
	p.Y.Min = 0
	logX(p)
	var ticks []plot.Tick
	for _, s := range res.Sizes {
		ticks = append(ticks, plot.Tick{Value: float64(s.Bytes), Label: size(s.Bytes)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top, p.Legend.Left = true, true
	if err := plotutil.AddLinePoints(p, "direct", d, "floor relay", f, "wrap unrecorded", u, "wrap recorded (strict)", r); err != nil {
		return err
	}
	return save(p, dir, "response_throughput.png")
}

// save writes p to dir/name, at the one size every plot has.
func save(p *plot.Plot, dir, name string) error {
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	return nil
}

// plotVerify draws verify_throughput.png: for each log shape, verify's
// throughput beside sha256sum's (the median run, whiskers from the
// slowest run to the fastest), the ratio and its target under the bars.
func plotVerify(res *Results, dir string) error {
	var shapes []*VerifyResult
	for _, v := range []*VerifyResult{res.Verify, res.VerifyLockStep} {
		if v != nil {
			shapes = append(shapes, v)
		}
	}
	if len(shapes) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "verify beside sha256sum, reading the same log (page cache warm)"
	p.Y.Label.Text = "MB/s (median run; whiskers: slowest to fastest)"
	p.Y.Min = 0
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	const shift = 0.18 // each bar's distance from its group's centre, in groups
	top := 0.0
	for k, who := range []struct {
		name  string
		stats func(*VerifyResult) Stats
	}{
		{"aegis verify", func(v *VerifyResult) Stats { return v.Verify }},
		{"sha256sum", func(v *VerifyResult) Stats { return v.Sha256sum }},
	} {
		var mbps plotter.Values
		var runs errXYs
		for i, v := range shapes {
			st := who.stats(v)
			mb := func(ns float64) float64 { return float64(v.Log.Bytes) / ns * 1e3 }
			m, slowest, fastest := mb(st.Median), mb(st.Max), mb(st.Min)
			mbps = append(mbps, m)
			runs.XYs = append(runs.XYs, plotter.XY{X: float64(i) + (float64(k)-0.5)*2*shift, Y: m})
			runs.YErrors = append(runs.YErrors, struct{ Low, High float64 }{m - slowest, fastest - m})
			top = max(top, fastest)
		}
		bars, err := plotter.NewBarChart(mbps, vg.Points(56))
		if err != nil {
			return err
		}
		bars.XMin = (float64(k) - 0.5) * 2 * shift
		bars.Color = plotutil.Color(k)
		bars.LineStyle.Width = 0
		whiskers, err := plotter.NewYErrorBars(runs)
		if err != nil {
			return err
		}
		p.Add(bars, whiskers)
		p.Legend.Add(who.name, bars)
	}
	p.Y.Max = 1.3 * top // room for the legend above the bars
	p.Y.Tick.Marker = linTicks125{}
	p.Legend.Top = true
	var groups []string
	for _, v := range shapes {
		groups = append(groups, fmt.Sprintf("log made %s\n%d records, %d signed, %.1f MB\nverify %s sha256sum, target ≥ %g×\nby CPU time %s",
			v.Shape, v.Log.Records, v.Log.Signed, float64(v.Log.Bytes)/1e6, fx(v.Ratio), v.Target, fx(v.CPURatio)))
	}
	p.NominalX(groups...)
	// A group a unit wide, whatever NominalX pads for its first label.
	p.Y.Padding = vg.Points(5)
	p.X.Min, p.X.Max = -0.5, float64(len(shapes))-0.5
	return save(p, dir, "verify_throughput.png")
}

// errXYs are points with vertical error bars.
type errXYs struct {
	plotter.XYs
	plotter.YErrors
}

// plotStart draws start_cdf.png: the CDF of spawn → initialize answered
// per start target.
func plotStart(res *Results, dir string) error {
	if len(res.Start) == 0 {
		return nil
	}
	p := cdfPlot("Start: spawn → initialize answered (pipes)")
	p.X.Label.Text, p.Y.Label.Text = "spawn → initialize answered (ms, log scale)", "fraction of starts ≤ time"
	p.X.Tick.Marker = logTicks125{}
	var lines []any
	for _, r := range res.Start {
		xys := cdfXYs(res.startSamples[r.Target])
		for i := range xys {
			xys[i].X /= 1e3 // µs to ms
		}
		lines = append(lines, r.Target, xys)
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	return save(p, dir, "start_cdf.png")
}

// plotClients draws clients_cdf.png: the CDF of a lock-step tools/call
// as each real client times it, a colour per target and a dash pattern
// per client.
func plotClients(res *Results, dir string) error {
	if len(res.Clients) == 0 {
		return nil
	}
	p := cdfPlot("Real clients → server-everything: tools/call (lock-step)")
	p.X.Tick.Marker = logTicks125{}
	for ci, c := range res.Clients {
		for ti, t := range clientTargets {
			key := clientKey(c.Client, t.name)
			if len(res.clientSamples[key]) == 0 {
				continue // the C relay, not built
			}
			l, err := plotter.NewLine(cdfXYs(res.clientSamples[key]))
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			l.Color = plotutil.Color(ti)
			l.Dashes = plotutil.Dashes(ci)
			p.Add(l)
			p.Legend.Add(key, l)
		}
	}
	return save(p, dir, "clients_cdf.png")
}

// logTicks125 marks a logarithmic axis at every integer multiple of each
// power of ten, labelling 1, 2 and 5 times it where the axis spans less
// than three decades, the powers alone where it spans more, and every
// mark where that labels fewer than two: a CDF of starts or of a real
// client's calls spans one or two decades, which plot.LogTicks would
// label once or not at all.
type logTicks125 struct{}

// Ticks implements plot.Ticker.
func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi < lo {
		return nil
	}
	wide := hi/lo > 1000
	var ticks []plot.Tick
	labelled := 0
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow10(e)
			if e < 0 {
				v = float64(m) / math.Pow10(-e) // 0.6, not 6 × 0.1
			}
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || !wide && (m == 2 || m == 5) {
				t.Label = tickLabel(v)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if labelled < 2 {
		for i := range ticks {
			ticks[i].Label = tickLabel(ticks[i].Value)
		}
	}
	return ticks
}

// linTicks125 marks a linear axis at most six times, at multiples of 1,
// 2 or 5 times a power of ten, labelled as plain numbers (plot.DefaultTicks
// may mark a bar chart's axis twice, with decimals it has not got).
type linTicks125 struct{}

// Ticks implements plot.Ticker.
func (linTicks125) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / 5
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for k := math.Ceil(lo / step); k*step <= hi; k++ {
		v := k * step
		ticks = append(ticks, plot.Tick{Value: v, Label: tickLabel(v)})
	}
	return ticks
}

func tickLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// cdfPlot is an empty CDF plot with a logarithmic latency axis.
func cdfPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "latency (µs, log scale)", "fraction of calls ≤ latency"
	logX(p)
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	return p
}

func logX(p *plot.Plot) {
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
}

// inFlightTicks puts a log axis with a tick at each level on p's X axis.
func inFlightTicks(p *plot.Plot, levels []InFlightResult) {
	logX(p)
	var ticks []plot.Tick
	for _, f := range levels {
		ticks = append(ticks, plot.Tick{Value: float64(f.InFlight), Label: fmt.Sprint(f.InFlight)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
}

// cdfXYs is the CDF of durations (sorted here if they are not), in µs,
// with non-positive values dropped for the log axis.
func cdfXYs(d []time.Duration) plotter.XYs {
	if !slices.IsSorted(d) {
		d = slices.Clone(d)
		slices.Sort(d)
	}
	var xys plotter.XYs
	for _, pt := range cdf(d, 400) {
		if pt[0] > 0 {
			xys = append(xys, plotter.XY{X: pt[0], Y: pt[1]})
		}
	}
	return xys
}
