package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"gonum.org/v1/plot/plotutil"
)

// httpLimit is the target of the unrecorded round trip through aegis
// wrap --listen, lock-step and pipelined, at both revisions: its overhead
// at most this many times the HTTP floor's.
const httpLimit = 1.1

// httpRows are the http section's rows of the targets table: the
// unrecorded round trip through aegis wrap --listen against the HTTP
// floor (lock-step and pipelined, both revisions), and beside
// supergateway and the TypeScript SDK v2's handler (lock-step, each
// revision it serves).
func httpRows(res *Results) []TargetRow {
	hr := res.HTTP
	if hr == nil {
		return nil
	}
	var rows []TargetRow
	for _, rt := range hr.rows() {
		r := TargetRow{
			Figure:   fmt.Sprintf("unrecorded round trip through wrap --listen (Streamable HTTP), %s, %s", httpMode(rt), rt.Revision),
			Floor:    fmt.Sprintf("HTTP floor's overhead %s (floor %s − direct stdio %s)", us(float64(rt.FloorOverhead)), us(rt.Floor.Median), us(rt.Direct.Median)),
			Target:   fmt.Sprintf("≤ %.1f× overhead", httpLimit),
			Measured: fmt.Sprintf("aegis's overhead %s (aegis %s); CPU/msg aegis %s, floor %s", us(float64(rt.AegisOverhead)), us(rt.Aegis.Median), us(float64(rt.AegisCPU)), us(float64(rt.FloorCPU))),
			Ratio:    rt.Ratio,
		}
		r.judge("le", httpLimit, true)
		rows = append(rows, r)
	}
	for _, x := range []struct {
		rt       HTTPRow
		front    string
		overhead Num
		median   float64
		cpu      Num
		vs       Ratio
	}{
		{hr.LockStep, "supergateway " + hr.Supergateway + " (stateful)", hr.LockStep.SupergatewayOverhead, hr.LockStep.Supergateway.Median, hr.LockStep.SupergatewayCPU, hr.LockStep.VsSupergateway},
		{hr.LockStep, "the TypeScript SDK v2's handler (@modelcontextprotocol/server " + hr.V2 + ")", hr.LockStep.V2Overhead, hr.LockStep.V2.Median, hr.LockStep.V2CPU, hr.LockStep.VsV2},
		{hr.Modern, "the TypeScript SDK v2's handler (@modelcontextprotocol/server " + hr.V2 + ")", hr.Modern.V2Overhead, hr.Modern.V2.Median, hr.Modern.V2CPU, hr.Modern.VsV2},
	} {
		r := TargetRow{
			Figure:   fmt.Sprintf("unrecorded round trip through wrap --listen beside %s, lock-step, %s", x.front, x.rt.Revision),
			Floor:    fmt.Sprintf("its overhead %s (%s − direct stdio %s)", us(float64(x.overhead)), us(x.median), us(x.rt.Direct.Median)),
			Target:   "faster: < 1×",
			Measured: fmt.Sprintf("aegis's overhead %s; CPU/msg aegis %s, it %s", us(float64(x.rt.AegisOverhead)), us(float64(x.rt.AegisCPU)), us(float64(x.cpu))),
			Ratio:    x.vs,
		}
		r.judge("le", 1, true)
		rows = append(rows, r)
	}
	return rows
}

// rows are the unrecorded round trip's rows: lock-step and pipelined at
// 2025-11-25, then at 2026-07-28.
func (hr *HTTPResult) rows() []HTTPRow {
	return []HTTPRow{hr.LockStep, hr.Pipelined, hr.Modern, hr.ModernPipelined}
}

func httpMode(r HTTPRow) string {
	if r.Window > 1 {
		return fmt.Sprintf("pipelined ×%d", r.Window)
	}
	return r.Mode
}

// writeHTTP writes the http section's tables.
func (res *Results) writeHTTP(w io.Writer) {
	hr := res.HTTP
	if hr == nil {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\n## Streamable HTTP: aegis wrap --listen, its floor, supergateway %s, the TypeScript SDK v2 %s\n\n", hr.Supergateway, hr.V2)
	p("Every target fronts the same echo child. Direct is the request straight to the child over pipes; the floor is net/http and a pipe to one child (internal/httpfloor); ")
	p("aegis is `wrap --listen` with its default bearer token; supergateway runs `--outputTransport streamableHttp --stateful` (a child per session); ")
	p("the TypeScript SDK v2 is its own Streamable HTTP transport (@modelcontextprotocol/node's NodeStreamableHTTPServerTransport for a 2025-11-25 session, a child per session; ")
	p("classifyInboundRequest and PerRequestHTTPServerTransport for a 2026-07-28 request, one child for all) handing each message to the child through @modelcontextprotocol/client's StdioClientTransport (bench/node/v2front.mjs). ")
	p("At 2025-11-25 the request is a ping in a session; at 2026-07-28, which has no ping, a stateless resources/list with the revision's _meta and headers (supergateway serves no 2026-07-28 request). ")
	p("Each HTTP client sends what a conforming client sends (Accept: application/json, text/event-stream) and reads the response to its end; aegis, supergateway and the SDK answer with an SSE stream, the floor with a JSON body. ")
	p("Overhead = median − direct median; CPU/msg is the serving process's own (its children's not counted).\n\n")
	p("| mode | revision | direct | floor | aegis | supergateway | TS SDK v2 | floor overhead | aegis overhead | aegis ÷ floor | aegis ÷ supergateway | aegis ÷ TS SDK v2 | CPU/msg floor | CPU/msg aegis | CPU/msg supergateway | CPU/msg TS SDK v2 |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range hr.rows() {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", httpMode(r), r.Revision, mp(r.Direct), mp(r.Floor), mp(r.Aegis), mpOr(r.Supergateway), mpOr(r.V2),
			us(float64(r.FloorOverhead)), us(float64(r.AegisOverhead)), fx(r.Ratio), fx(r.VsSupergateway), fx(r.VsV2), us(float64(r.FloorCPU)), us(float64(r.AegisCPU)), us(float64(r.SupergatewayCPU)), us(float64(r.V2CPU)))
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

// mpOr is mp, or "–" for a target not run.
func mpOr(s Stats) string {
	if s.N == 0 {
		return "–"
	}
	return mp(s)
}
