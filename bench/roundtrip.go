package bench

import (
	"context"
	"time"
)

// RTResult is one row of the unrecorded round trip: the same ping, in
// the same run, straight to the echo child, through the floor relay and
// through aegis wrap.
type RTResult struct {
	Transport Transport `json:"transport"`
	// Mode is "lock-step" (Stats per round trip) or "pipelined" (Window
	// messages in flight; Stats of elapsed ÷ messages, per round).
	Mode   string `json:"mode"`
	Window int    `json:"window"`
	Direct Stats  `json:"direct"`
	Floor  Stats  `json:"floor_relay"`
	Wrap   Stats  `json:"wrap"`
	// Overheads are differences of medians, in ns: the relay's cost beyond
	// talking to the child directly.
	FloorOverhead float64 `json:"floor_overhead_ns"`
	WrapOverhead  float64 `json:"wrap_overhead_ns"`
	// Ratio is WrapOverhead ÷ FloorOverhead; the target is ≤ 1.5.
	Ratio Ratio `json:"ratio"`
	// WrapVsFloor is the plain ratio of medians, wrap ÷ floor relay.
	WrapVsFloor Ratio `json:"wrap_vs_floor"`
	// CPU time per message of the relay process itself (not its child),
	// ns: what the relay costs when the machine's load is taken out.
	FloorCPU Num   `json:"floor_cpu_ns"`
	WrapCPU  Num   `json:"wrap_cpu_ns"`
	CPURatio Ratio `json:"cpu_ratio"` // WrapCPU ÷ FloorCPU
}

var rtTargets = []string{"direct", "floor", "wrap"}

func (h *harness) roundTripSection(ctx context.Context) error {
	for _, t := range []Transport{Pipes, Socketpairs} {
		if err := h.roundTrips(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// roundTrips measures lock-step and pipelined pings over t, the three
// targets alive together and interleaved in blocks.
func (h *harness) roundTrips(ctx context.Context, t Transport) error {
	procs := make([]*proc, len(rtTargets))
	defer func() { stopAll(procs...) }()
	for i, target := range rtTargets {
		p, err := h.startTarget(ctx, target, t, "strict", h.newAudit("roundtrip-"+string(t)), echoOpts{})
		if err != nil {
			return err
		}
		procs[i] = p
		if err := p.warm(pingReq, 200); err != nil {
			return err
		}
	}

	lock := make([]samples, len(procs))
	meters := meterAll(procs)
	for round := 0; lock[0].n() < h.it.rtLock && ctx.Err() == nil; round++ {
		for k := range procs {
			i := (round + k) % len(procs) // rotate who goes first
			for range h.it.block {
				d, _, err := procs[i].roundTrip(pingReq)
				if err != nil {
					return err
				}
				lock[i].add(d)
			}
		}
	}
	row := rtRow(t, "lock-step", 1, lock)
	row.cpu(meters, lock[0].n())
	h.res.RoundTrip = append(h.res.RoundTrip, row)
	h.res.rtSamples = append(h.res.rtSamples, rtSamples{t, lock})
	h.logf("   %s lock-step: direct %.1f µs, floor %.1f µs, wrap %.1f µs; overhead ratio %.2f; CPU/msg floor %.1f µs, wrap %.1f µs",
		t, row.Direct.Median/1e3, row.Floor.Median/1e3, row.Wrap.Median/1e3, row.Ratio, row.FloorCPU/1e3, row.WrapCPU/1e3)

	// Pipelined: rounds of rtPipe/rounds messages each, window rtWindow;
	// one sample per round is its time per message.
	const rounds = 10
	per := max(h.it.rtPipe/rounds, 2*h.it.rtWindow)
	pipe := make([]samples, len(procs))
	meters = meterAll(procs)
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		for k := range procs {
			i := (round + k) % len(procs)
			d, err := procs[i].pipeline(pingReq, per, h.it.rtWindow, nil)
			if err != nil {
				return err
			}
			pipe[i].add(d / time.Duration(per))
		}
	}
	row = rtRow(t, "pipelined", h.it.rtWindow, pipe)
	row.cpu(meters, pipe[0].n()*per)
	h.res.RoundTrip = append(h.res.RoundTrip, row)
	h.logf("   %s pipelined ×%d: direct %.1f µs/msg, floor %.1f, wrap %.1f; overhead ratio %.2f; CPU/msg floor %.1f µs, wrap %.1f µs",
		t, h.it.rtWindow, row.Direct.Median/1e3, row.Floor.Median/1e3, row.Wrap.Median/1e3, row.Ratio, row.FloorCPU/1e3, row.WrapCPU/1e3)
	err := stopAll(procs...)
	procs = nil
	return err
}

func rtRow(t Transport, mode string, window int, s []samples) RTResult {
	r := RTResult{Transport: t, Mode: mode, Window: window, Direct: s[0].stats(), Floor: s[1].stats(), Wrap: s[2].stats()}
	r.FloorOverhead = r.Floor.Median - r.Direct.Median
	r.WrapOverhead = r.Wrap.Median - r.Direct.Median
	r.Ratio = ratio(r.WrapOverhead, r.FloorOverhead)
	r.WrapVsFloor = ratio(r.Wrap.Median, r.Floor.Median)
	return r
}

// cpu fills the CPU columns from meters over the three targets, after
// ops messages each.
func (r *RTResult) cpu(m []*cpuMeter, ops int) {
	r.FloorCPU, r.WrapCPU = Num(m[1].per(ops)), Num(m[2].per(ops))
	r.CPURatio = ratio(float64(r.WrapCPU), float64(r.FloorCPU))
}

func meterAll(ps []*proc) []*cpuMeter {
	m := make([]*cpuMeter, len(ps))
	for i, p := range ps {
		m[i] = meter(p)
	}
	return m
}

// rtSamples keeps the lock-step samples of one transport for the plots.
type rtSamples struct {
	t Transport
	s []samples
}
