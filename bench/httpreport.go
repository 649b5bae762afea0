package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"gonum.org/v1/plot/plotutil"
)

// httpRows are the http section's rows of the targets table: the
// unrecorded round trip through aegis wrap --listen against the HTTP
// floor (lock-step and pipelined), and beside supergateway.
func httpRows(res *Results) []TargetRow {
	hr := res.HTTP
	if hr == nil {
		return nil
	}
	var rows []TargetRow
	for _, x := range []struct {
		row   HTTPRow
		limit float64
	}{{hr.LockStep, 1.2}, {hr.Pipelined, 1.5}} {
		rt := x.row
		mode := rt.Mode
		if rt.Window > 1 {
			mode = fmt.Sprintf("pipelined ×%d", rt.Window)
		}
		r := TargetRow{
			Figure:   "unrecorded round trip through wrap --listen (Streamable HTTP), " + mode,
			Floor:    fmt.Sprintf("HTTP floor relay's overhead %s (floor %s − direct stdio %s)", us(rt.FloorOverhead), us(rt.Floor.Median), us(rt.Direct.Median)),
			Target:   fmt.Sprintf("≤ %.1f× overhead", x.limit),
			Measured: fmt.Sprintf("aegis's overhead %s (aegis %s); CPU/msg aegis %s, floor %s", us(rt.AegisOverhead), us(rt.Aegis.Median), us(float64(rt.AegisCPU)), us(float64(rt.FloorCPU))),
			Ratio:    rt.Ratio,
		}
		r.judge("le", x.limit, true)
		rows = append(rows, r)
	}
	rt := hr.LockStep
	r := TargetRow{
		Figure:   "unrecorded round trip through wrap --listen beside supergateway " + hr.Supergateway + " (Streamable HTTP, stateful), lock-step",
		Floor:    fmt.Sprintf("supergateway's overhead %s (supergateway %s − direct stdio %s)", us(rt.SupergatewayOverhead), us(rt.Supergateway.Median), us(rt.Direct.Median)),
		Target:   "a fraction (< 1×)",
		Measured: fmt.Sprintf("aegis's overhead %s; CPU/msg aegis %s, supergateway %s", us(rt.AegisOverhead), us(float64(rt.AegisCPU)), us(float64(rt.SupergatewayCPU))),
		Ratio:    rt.VsSupergateway,
	}
	r.judge("le", 1, true)
	return append(rows, r)
}

// writeHTTP writes the http section's tables.
func (res *Results) writeHTTP(w io.Writer) {
	hr := res.HTTP
	if hr == nil {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\n## Streamable HTTP: aegis wrap --listen, its floor, supergateway %s\n\n", hr.Supergateway)
	p("Every target fronts the same echo child. Direct is a ping straight to the child over pipes; the floor is net/http and a pipe to one child (internal/httpfloor); ")
	p("aegis is `wrap --listen` with its default bearer token; supergateway runs `--outputTransport streamableHttp --stateful` (a child per session). ")
	p("Each HTTP client sends what a conforming client sends (Accept: application/json, text/event-stream) and reads the response to its end; aegis and supergateway answer with an SSE stream, the floor with a JSON body. ")
	p("Overhead = median − direct median; CPU/msg is the serving process's own (its children's not counted).\n\n")
	p("| mode | direct | floor | aegis | supergateway | floor overhead | aegis overhead | aegis ÷ floor | aegis ÷ supergateway | CPU/msg floor | CPU/msg aegis | CPU/msg supergateway |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range []HTTPRow{hr.LockStep, hr.Pipelined} {
		mode := r.Mode
		if r.Window > 1 {
			mode = fmt.Sprintf("pipelined ×%d", r.Window)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mode, mp(r.Direct), mp(r.Floor), mp(r.Aegis), mp(r.Supergateway),
			us(r.FloorOverhead), us(r.AegisOverhead), fx(r.Ratio), fx(r.VsSupergateway), us(float64(r.FloorCPU)), us(float64(r.AegisCPU)), us(float64(r.SupergatewayCPU)))
	}
	if len(hr.Levels) > 0 {
		p("\nRecorded tools/call through aegis wrap --listen, lock-step, in the same rounds:\n\n")
		p("| level | median / p99 | overhead | overhead ÷ floor's | over unrecorded | aegis CPU/call | log records |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, lv := range hr.Levels {
			p("| %s | %s | %s | %s | %s | %s | %d |\n", lv.Level, mp(lv.Call), us(lv.Overhead), fx(lv.Ratio), us(lv.OverUnrecorded), us(float64(lv.CPU)), lv.Log.Records)
		}
	}
	if len(hr.Sessions) > 0 {
		n := hr.Sessions[0].Sessions
		p("\n%d sessions at once, each front on its own: memory per session is the serving process's resident set over its own before any session, ÷ %d ", n, n)
		p("(idle: after each session made one call; active: its peak, VmHWM, under load); with children adds every process below it. ")
		p("Under load every session makes tools/call lock-step, all at once. The floor has no sessions: its clients share its one child.\n\n")
		p("| front | base RSS | idle / session | active / session | idle / session with children | under load / session with children | calls | median / p99 under load | calls/s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range hr.Sessions {
			p("| %s | %s | %s | %s | %s | %s | %d | %s | %.0f |\n", s.Target, mibs(s.Base), mibs(s.IdlePer), mibs(s.ActivePer), mibs(s.TreeIdlePer), mibs(s.TreeLoadPer),
				s.Calls, mp(s.Load), s.CallsPerSec)
		}
	}
}

// mibs formats bytes in KiB or MiB, one decimal.
func mibs(n int64) string {
	if n >= 1<<20 || n <= -1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
}

// plotHTTP draws http_cdf.png: the CDF of the lock-step round trip per
// HTTP target, and the recorded call at each level.
func plotHTTP(res *Results, dir string) error {
	hr := res.HTTP
	if hr == nil || len(hr.samples) == 0 {
		return nil
	}
	p := cdfPlot("Streamable HTTP round trip (lock-step)")
	var lines []any
	for _, k := range slices.Sorted(maps.Keys(hr.samples)) {
		lines = append(lines, k, cdfXYs(hr.samples[k]))
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	return save(p, dir, "http_cdf.png") // plot.go
}
