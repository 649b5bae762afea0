package bench

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plot draws the run's figures into dir as PNG files:
//
//	latency_durability.png          CDF of a recorded call's latency per level, with its floors
//	roundtrip_cdf.png               CDF of the unrecorded lock-step round trip per target and client side
//	inflight_throughput.png         calls/s against calls in flight (strict)
//	inflight_calls_per_fdatasync.png  calls per fdatasync against calls in flight, with the target
//	response_throughput.png         MB/s against response size
func (h *harness) plot(dir string) error {
	res := h.res
	save := func(p *plot.Plot, name string) error {
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		return nil
	}
	if err := h.plotHTTP(dir); err != nil { // httpreport.go
		return err
	}
	if len(res.durSamples) > 0 {
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
		if err := save(p, "latency_durability.png"); err != nil {
			return err
		}
	}
	if len(res.rtSamples) > 0 {
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
		if err := save(p, "roundtrip_cdf.png"); err != nil {
			return err
		}
	}
	if len(res.InFlight) > 0 {
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
		if err := save(p, "inflight_throughput.png"); err != nil {
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
		if err := save(p, "inflight_calls_per_fdatasync.png"); err != nil {
			return err
		}
	}
	if len(res.Sizes) > 0 {
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
		if err := save(p, "response_throughput.png"); err != nil {
			return err
		}
	}
	return nil
}

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
