package bench

import (
	"context"
	"math"
	"time"
)

// RTResult is one row of the unrecorded round trip: the same ping, in
// the same run, straight to the echo child, through the floor relay, the
// C floor relay and aegis wrap.
type RTResult struct {
	Transport Transport `json:"transport"`
	// Mode is "lock-step" (Stats per round trip) or "pipelined" (Window
	// messages in flight; Stats of elapsed ÷ messages, per round).
	Mode   string `json:"mode"`
	Window int    `json:"window"`
	Direct Stats  `json:"direct"`
	Floor  Stats  `json:"floor_relay"`
	// CRelay is the C floor relay (crelay/relay.c); zero when it could not
	// be built, and CRelayMissing says why.
	CRelay        Stats  `json:"c_relay"`
	CRelayMissing string `json:"c_relay_missing,omitempty"`
	Wrap          Stats  `json:"wrap"`
	// Overheads are differences of medians, in ns: the relay's cost beyond
	// talking to the child directly.
	FloorOverhead float64 `json:"floor_overhead_ns"`
	WrapOverhead  float64 `json:"wrap_overhead_ns"`
	// Ratio is WrapOverhead ÷ FloorOverhead; the target is ≤ 1.5.
	Ratio Ratio `json:"ratio"`
	// WrapVsFloor is the plain ratio of medians, wrap ÷ floor relay;
	// WrapVsC the same against the C floor relay.
	WrapVsFloor Ratio `json:"wrap_vs_floor"`
	WrapVsC     Ratio `json:"wrap_vs_c_relay"`
	// CPU time per message of the relay process itself (not its child),
	// ns: what the relay costs when the machine's load is taken out.
	FloorCPU  Num   `json:"floor_cpu_ns"`
	CRelayCPU Num   `json:"c_relay_cpu_ns"`
	WrapCPU   Num   `json:"wrap_cpu_ns"`
	CPURatio  Ratio `json:"cpu_ratio"`      // WrapCPU ÷ FloorCPU
	CPUVsC    Ratio `json:"cpu_vs_c_relay"` // WrapCPU ÷ CRelayCPU: the figure the C floor judges
}

// rtTargets are the round trip's processes, in the order of their samples.
var rtTargets = []string{"direct", "floor", "crelay", "wrap"}

// Indexes into rtTargets.
const (
	rtDirect = iota
	rtFloor
	rtC
	rtWrap
)

func (h *harness) roundTripSection(ctx context.Context) error {
	h.buildCRelay(ctx) // crelay.go
	for _, t := range []Transport{Pipes, Socketpairs} {
		if err := h.roundTrips(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// roundTrips measures lock-step and pipelined pings over t, the
// targets alive together and interleaved in blocks. Without the C floor
// relay its slot stays nil and its columns empty.
func (h *harness) roundTrips(ctx context.Context, t Transport) error {
	procs := make([]*proc, len(rtTargets))
	defer func() { stopAll(procs...) }()
	for i, target := range rtTargets {
		if i == rtC && h.crelay == "" {
			continue
		}
		p, err := h.startTarget(ctx, target, t, "strict", h.newAudit("roundtrip-"+string(t)), echoOpts{})
		if err != nil {
			return err
		}
		procs[i] = p
		if err := p.warm(pingReq, h.it.warm(200)); err != nil {
			return err
		}
	}

	lock := make([]samples, len(procs))
	meters := meterAll(procs)
	for round := 0; lock[0].n() < h.it.rtLock && ctx.Err() == nil; round++ {
		for k := range procs {
			i := (round + k) % len(procs) // rotate who goes first
			if procs[i] == nil {
				continue
			}
			for range h.it.block {
				d, _, err := procs[i].roundTrip(pingReq)
				if err != nil {
					return err
				}
				lock[i].add(d)
			}
		}
	}
	row := h.rtRow(t, "lock-step", 1, lock)
	row.cpu(meters, lock[0].n())
	h.res.RoundTrip = append(h.res.RoundTrip, row)
	h.res.rtSamples = append(h.res.rtSamples, rtSamples{t, lock})
	h.logRow(row)

	// Pipelined: rounds of rtPipe/rounds messages each, window rtWindow;
	// one sample per round is its time per message.
	const rounds = 10
	per := max(h.it.rtPipe/rounds, 2*h.it.rtWindow)
	pipe := make([]samples, len(procs))
	meters = meterAll(procs)
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		for k := range procs {
			i := (round + k) % len(procs)
			if procs[i] == nil {
				continue
			}
			d, err := procs[i].pipeline(pingReq, per, h.it.rtWindow, nil)
			if err != nil {
				return err
			}
			pipe[i].add(d / time.Duration(per))
		}
	}
	row = h.rtRow(t, "pipelined", h.it.rtWindow, pipe)
	row.cpu(meters, pipe[0].n()*per)
	h.res.RoundTrip = append(h.res.RoundTrip, row)
	h.logRow(row)
	err := stopAll(procs...)
	procs = nil
	return err
}

func (h *harness) rtRow(t Transport, mode string, window int, s []samples) RTResult {
	r := RTResult{Transport: t, Mode: mode, Window: window, Direct: s[rtDirect].stats(), Floor: s[rtFloor].stats(), Wrap: s[rtWrap].stats(),
		CRelayMissing: h.crelayMissing}
	r.FloorOverhead = r.Floor.Median - r.Direct.Median
	r.WrapOverhead = r.Wrap.Median - r.Direct.Median
	r.Ratio = ratio(r.WrapOverhead, r.FloorOverhead)
	r.WrapVsFloor = ratio(r.Wrap.Median, r.Floor.Median)
	r.WrapVsC = Ratio(math.NaN())
	if s[rtC].n() > 0 {
		r.CRelay = s[rtC].stats()
		r.WrapVsC = ratio(r.Wrap.Median, r.CRelay.Median)
	}
	return r
}

// cpu fills the CPU columns from meters over the targets (nil where a
// target did not run), after ops messages each.
func (r *RTResult) cpu(m []*cpuMeter, ops int) {
	r.FloorCPU, r.WrapCPU, r.CRelayCPU = Num(m[rtFloor].per(ops)), Num(m[rtWrap].per(ops)), Num(math.NaN())
	if m[rtC] != nil {
		r.CRelayCPU = Num(m[rtC].per(ops))
	}
	r.CPURatio = ratio(float64(r.WrapCPU), float64(r.FloorCPU))
	r.CPUVsC = ratio(float64(r.WrapCPU), float64(r.CRelayCPU))
}

// cMedian is the C floor relay's median, NaN when it did not run.
func (r RTResult) cMedian() float64 {
	if r.CRelay.N == 0 {
		return math.NaN()
	}
	return r.CRelay.Median
}

func (h *harness) logRow(r RTResult) {
	h.logf("   %s %s: direct %s, floor %s, C relay %s, wrap %s per msg; overhead ratio %s; CPU/msg floor %s, C relay %s, wrap %s: wrap ÷ C %s, ÷ floor %s",
		r.Transport, modeName(r), us(r.Direct.Median), us(r.Floor.Median), us(r.cMedian()), us(r.Wrap.Median), fx(r.Ratio),
		us(float64(r.FloorCPU)), us(float64(r.CRelayCPU)), us(float64(r.WrapCPU)), fx(r.CPUVsC), fx(r.CPURatio))
}

func meterAll(ps []*proc) []*cpuMeter {
	m := make([]*cpuMeter, len(ps))
	for i, p := range ps {
		if p != nil {
			m[i] = meter(p)
		}
	}
	return m
}

// rtSamples keeps the lock-step samples of one transport for the plots.
type rtSamples struct {
	t Transport
	s []samples
}
