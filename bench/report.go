package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// WriteMarkdown writes the results as Markdown tables, ready to paste
// into BENCHMARKS.md.
func (res *Results) WriteMarkdown(w io.Writer) {
	m := res.Machine
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	mode := "full"
	if res.Quick {
		mode = "quick (-quick)"
	}
	if res.Scale != 1 {
		mode += fmt.Sprintf(", iterations ×%g", res.Scale)
	}
	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s (%d logical CPUs, GOMAXPROCS %d) |\n", m.CPU, m.Cores, m.GOMAXPROCS)
	p("| kernel | %s |\n", m.Kernel)
	p("| audit directory | %s: %s on %s at %s (%s) |\n", m.AuditDir, m.FS, m.Device, m.Mount, m.MountOpts)
	p("| fdatasync floor | %s median, %s p99, %s CPU of the syncing thread (%d-byte append, %d samples) |\n",
		us(res.Fsync.Sync.Median), us(res.Fsync.Sync.P99), us(float64(res.Fsync.SyncCPU)), res.Fsync.Bytes, res.Fsync.Sync.N)
	p("| fdatasync over pre-zeroed space | %s median, %s p99 (the same bytes written over zeros already synced: no size change to commit) |\n",
		us(res.Fsync.Overwrite.Median), us(res.Fsync.Overwrite.P99))
	p("| Go | %s (harness); %s |\n", m.Go, orDash(m.BuildGo))
	p("| aegis | %s |\n", orDash(m.Aegis))
	p("| load average | %s at start, %s at end |\n", res.LoadStart, res.LoadEnd)
	p("| run | %s, %s, %.0f s |\n\n", res.Command, mode, res.ElapsedSec)

	p("## Figures against their targets\n\nEvery ratio is to a floor measured in the same run.\n\n")
	p("| figure | floor (same run) | target | measured | ratio | verdict |\n|---|---|---|---|---:|---|\n")
	for _, r := range res.Summary {
		verdict := "not judged"
		if r.Pass != nil {
			verdict = "**miss**: " + r.Miss
			if *r.Pass {
				verdict = "meets"
			}
		}
		p("| %s | %s | %s | %s | %s | %s |\n", r.Figure, r.Floor, r.Target, r.Measured, fx(r.Ratio), verdict)
	}

	if len(res.RoundTrip) > 0 {
		p("\n## Unrecorded round trip (ping)\n\nMedian / p99 per message. Lock-step: one request, its answer, the next. ")
		p("Pipelined: elapsed ÷ messages with a window in flight, one sample per round. Overhead = median − direct median.\n\n")
		p("CPU/msg is the relay process's own CPU time per message (its child's not counted), which a loaded machine's waiting does not inflate. ")
		p("The floor relay is Go (internal/floorrelay); the C floor relay is one thread of poll, read and write (bench/crelay/relay.c), the floor of relay CPU per message.\n\n")
		p("| client side | mode | direct | floor relay | C floor relay | wrap | floor overhead | wrap overhead | ratio (≤ 1.5) | wrap ÷ floor | wrap ÷ C | CPU/msg floor | CPU/msg C | CPU/msg wrap | CPU wrap ÷ floor | CPU wrap ÷ C |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range res.RoundTrip {
			c := "–"
			if r.CRelay.N > 0 {
				c = mp(r.CRelay)
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Transport, modeName(r),
				mp(r.Direct), mp(r.Floor), c, mp(r.Wrap), us(r.FloorOverhead), us(r.WrapOverhead), fx(r.Ratio), fx(r.WrapVsFloor), fx(r.WrapVsC),
				us(float64(r.FloorCPU)), us(float64(r.CRelayCPU)), us(float64(r.WrapCPU)), fx(r.CPURatio), fx(r.CPUVsC))
		}
		for _, r := range res.RoundTrip {
			if r.CRelayMissing != "" {
				p("\nThe C floor relay did not run: %s.\n", r.CRelayMissing)
				break
			}
		}
	}

	if d := res.Durability; d != nil {
		p("\n## Recorded tools/call by durability (lock-step, pipes)\n\n")
		p("Floors from the same rounds: fdatasync %s (p99 %s); fdatasync over pre-zeroed space %s (p99 %s), and each after a hop between processes, as the journal's are, %s (p99 %s); unrecorded ping through wrap %s (wrap's CPU %s); ", us(d.Fsync.Median), us(d.Fsync.P99), us(d.Overwrite.Median), us(d.Overwrite.P99), us(d.AfterHop.Median), us(d.AfterHop.P99), us(d.Unrecorded.Median), us(float64(d.UnrecordedCPU)))
		p("write of a record %s; ed25519 sign + sha256 of a record %s; a call's two records need %s. ", us(d.Write.Median), us(d.SignHash.Median), us(d.Needed))
		p("A round trip to the echo server alone right after such a sync %s, right after another round trip %s: a sync's idle costs the hop after it %s. ", us(d.HopAfterSync.Median), us(d.HopAfterHop.Median), us(d.HopAfterSync.Median-d.HopAfterHop.Median))
		p("Reply's shape without aegis (append, a round trip to the echo server not counted, append, fdatasync): %s, %s of the fdatasync floor.\n\n", us(d.ReplyShape.Median), fx(ratio(d.ReplyShape.Median, d.Fsync.Median)))
		p("| level | fdatasyncs on path | median | p99 | floor | ratio | p99 ratio | ÷ 1 fdatasync | over unrecorded | recording ÷ floor | recording ÷ pre-zeroed floor | recording ÷ pre-zeroed floor after a hop | rest | wrap CPU/call | CPU over unrecorded |\n|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, lv := range d.Levels {
			floor := fmt.Sprintf("%d × fdatasync", lv.Syncs)
			if lv.Syncs == 0 {
				floor = "unrecorded"
			}
			rec, ow, ah := "–", "–", "–"
			if lv.Syncs > 0 {
				rec, ow, ah = fx(lv.Recording), fx(lv.VsOverwrite), fx(lv.VsAfterHop)
			}
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", lv.Level, lv.Syncs, us(lv.Call.Median), us(lv.Call.P99),
				floor, fx(lv.Ratio), fx(lv.P99Ratio), fx(lv.VsOneSync), us(lv.OverUnrecorded), rec, ow, ah, us(lv.Rest), us(float64(lv.CPU)), us(float64(lv.CPUOverUnrecorded)))
		}
		p("\nratio = the whole call ÷ its floor (for strict and reply that includes the unrecorded round trip, two process hops, which no recording removes); ")
		p("recording ÷ floor = (median − unrecorded) ÷ (syncs × fdatasync): what recording costs against what it must cost, the figure the targets table judges. ")
		p("At strict and reply the journal writes over pre-zeroed space (the means of syncing are the journal's choice), whose fdatasync commits no size change: recording ÷ pre-zeroed floor is the same cost against that cheaper sync, what aegis adds to the means it chose. ")
		p("The pre-zeroed floor after a hop takes each sync after a lock-step round trip to the echo server (not counted), as each of the journal's follows a hop between processes, not another sync: it is the floor issue 27's strict and reply rows are judged by (≤ 1.15×). ")
		p("rest = median − unrecorded − syncs × fdatasync − the two records' sign+hash+write: what no floor explains.\n")
	}

	if len(res.InFlight) > 0 {
		p("\n## Calls in flight (strict, pipes, pipelined ids on one session)\n\n")
		p("| in flight | calls | calls/s | calls/s (in flight ÷ p50) | latency p50 | p99 | commit groups | calls per fdatasync | elapsed ÷ fdatasync floor | wrap CPU/call |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, f := range res.InFlight {
			p("| %d | %d | %.0f | %.0f | %s | %s | %d | %s | %.0f (floor %s) | %s |\n", f.InFlight, f.Calls, f.PerSec, f.LittlePerSec, us(f.Latency.Median), us(f.Latency.P99),
				f.Groups, fx(f.CallsPerSync), f.ElapsedSyncs, us(f.FsyncFloor), us(float64(f.CPU)))
		}
		p("\nCommit groups are the signed records between session_start and session_end; at strict each group is one fdatasync. ")
		p("calls/s is calls ÷ elapsed, which a few long stalls of a loaded machine drag down; in flight ÷ p50 (Little's law) is not.\n")
	}

	if len(res.Sizes) > 0 {
		p("\n## Response size (lock-step, pipes)\n\nThroughput = response bytes ÷ median round trip. Recorded = tools/call at strict; unrecorded = an unknown method (bench/big).\n\n")
		p("| response | direct | floor relay | wrap unrecorded | ÷ floor | wrap recorded | ÷ floor | CPU/op floor | unrecorded | recorded |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range res.Sizes {
			p("| %s | %.0f MB/s | %.0f MB/s (%s) | %.0f MB/s (%s) | %s | %.0f MB/s (%s) | %s | %s | %s | %s |\n", size(s.Bytes),
				s.DirectMBps, s.FloorMBps, us(s.Floor.Median), s.UnrecordedMBps, us(s.Unrecorded.Median), fx(s.UnrecordedRatio),
				s.RecordedMBps, us(s.Recorded.Median), fx(s.RecordedRatio), us(float64(s.FloorCPU)), us(float64(s.UnrecordedCPU)), us(float64(s.RecordedCPU)))
		}
	}

	if len(res.Scan) > 0 {
		p("\n## Frame scan (in process)\n\n| frame | bytes | Classify | MB/s | allocs/frame | encoding/json | MB/s | allocs/frame | speedup |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range res.Scan {
			p("| %s | %d | %.0f ns | %.0f | %g | %.0f ns | %.0f | %g | %s |\n", s.Frame, s.Bytes, s.Classify.Median, s.FrameMBps, s.FrameAllocs,
				s.JSON.Median, s.JSONMBps, s.JSONAllocs, fx(s.Speedup))
		}
	}

	if res.Verify != nil || res.VerifyLockStep != nil {
		p("\n## verify (page cache warm)\n\nWall time per run, and CPU time (user + system, every thread) per run.\n\n")
		p("| log | records | signed | verify | sha256sum | ratio | verify CPU | sha256sum CPU | ratio by CPU |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, v := range []*VerifyResult{res.Verify, res.VerifyLockStep} {
			if v == nil {
				continue
			}
			p("| %.1f MB, made by wrap at none, %s | %d | %d | %.0f MB/s (%s) | %.0f MB/s (%s) | %s | %s | %s | %s |\n", float64(v.Log.Bytes)/1e6, v.Shape,
				v.Log.Records, v.Log.Signed, v.VerifyMBps, us(v.Verify.Median), v.ShaMBps, us(v.Sha256sum.Median), fx(v.Ratio),
				us(v.VerifyCPU.Median), us(v.ShaCPU.Median), fx(v.CPURatio))
		}
	}

	if len(res.RSS) > 0 {
		p("\n## Peak RSS of wrap (VmHWM, strict)\n\n| load | wrap | idle wrap | floor relay |\n|---|---:|---:|---:|\n")
		for _, r := range res.RSS {
			floor := "–"
			if r.Floor > 0 {
				floor = fmt.Sprintf("%.1f MiB", mib(r.Floor))
			}
			p("| %s | %.1f MiB | %.1f MiB | %s |\n", r.Case, mib(r.Wrap), mib(r.Idle), floor)
		}
	}

	if len(res.Start) > 0 {
		p("\n## Start (spawn → initialize answered, pipes)\n\nEach target spawned in turn, the first start of each not counted; a wrap's log is continued from start to start.\n\n| target | median | p99 | overhead (median − direct) |\n|---|---:|---:|---:|\n")
		for _, r := range res.Start {
			p("| %s | %s | %s | %s |\n", r.Target, us(r.Stats.Median), us(r.Stats.P99), us(r.Overhead))
		}
	}

	if len(res.Clients) > 0 {
		p("\n## Real clients (lock-step tools/call to server-everything on Node)\n\nEach call's round trip as the official SDK's call returns it, pooled over rounds that rotate the targets; the C relay (bench/crelay/relay.c) is placed where wrap is, so that its call is direct + a relay's two hops and nothing else.\n\n| client | revision | direct | C relay | overhead | wrap none | overhead | none ÷ C relay | wrap strict | overhead |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range res.Clients {
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Client, c.Revision, mp(c.Direct), mpOr(c.CRelay), us(float64(c.CRelayOverhead)),
				mp(c.None), us(c.NoneOverhead), fx(c.NoneVsCRelay), mp(c.Strict), us(c.StrictOverhead))
		}
	}

	res.writeHTTP(w) // httpreport.go

	if len(res.Profiles) > 0 {
		p("\n## Where wrap's time goes (pprof -top of wrap's wiring in process)\n")
		for _, pr := range res.Profiles {
			p("\n%s (%s):\n\n```text\n%s\n```\n", pr.Workload, pr.File, pr.Top)
		}
	}
}

// fx formats a ratio.
func fx(r Ratio) string {
	v := float64(r)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

// mp is "median / p99".
func mp(s Stats) string { return us(s.Median) + " / " + us(s.P99) }

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// write writes results.json, the plots and the profiles to dir.
func (h *harness) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(h.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	for _, p := range h.res.profilePaths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), data, 0o644); err != nil {
			return err
		}
	}
	var md strings.Builder
	h.res.WriteMarkdown(&md)
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	return h.plot(dir)
}
