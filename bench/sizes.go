package bench

import (
	"context"
	"fmt"
	"strconv"
)

// SizeResult is one response size, lock-step over pipes: the same answer
// straight from the echo child, through the floor relay, and through
// aegis wrap unrecorded (bench/big) and recorded (tools/call at strict).
type SizeResult struct {
	Bytes      int   `json:"response_bytes"`
	Direct     Stats `json:"direct"`
	Floor      Stats `json:"floor_relay"`
	Unrecorded Stats `json:"wrap_unrecorded"`
	Recorded   Stats `json:"wrap_recorded"`
	// Throughputs are response bytes ÷ median round trip, in MB/s (10^6).
	DirectMBps     float64 `json:"direct_mb_s"`
	FloorMBps      float64 `json:"floor_mb_s"`
	UnrecordedMBps float64 `json:"unrecorded_mb_s"`
	RecordedMBps   float64 `json:"recorded_mb_s"`
	// Ratios to the floor relay's throughput: the targets are ≥ 0.8
	// unrecorded and ≥ 0.5 recorded at 16 MiB.
	UnrecordedRatio Ratio `json:"unrecorded_ratio"`
	RecordedRatio   Ratio `json:"recorded_ratio"`
	// CPU time per round trip of the relay process itself, ns.
	FloorCPU      Num `json:"floor_cpu_ns"`
	UnrecordedCPU Num `json:"unrecorded_cpu_ns"`
	RecordedCPU   Num `json:"recorded_cpu_ns"`
}

func (h *harness) sizeSection(ctx context.Context) error {
	for i, size := range h.it.sizes {
		if err := h.size(ctx, size, h.it.sizeN[i]); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) size(ctx context.Context, size, n int) error {
	// Two wraps, one for the unrecorded and one for the recorded answers,
	// so that each process's CPU time belongs to one kind of op.
	targets := []string{"direct", "floor", "wrap", "wrap"}
	procs := make([]*proc, len(targets))
	defer func() { stopAll(procs...) }()
	audit := h.newAudit("size-" + strconv.Itoa(size))
	for i, target := range targets {
		a := audit
		if i == 2 {
			a = h.newAudit("size-unrecorded")
		}
		p, err := h.startTarget(ctx, target, Pipes, "strict", a, echoOpts{size: size})
		if err != nil {
			return err
		}
		procs[i] = p
		if err := p.warm(bigReq, h.it.warm(3)); err != nil {
			return err
		}
	}
	ops := []struct {
		p   *proc
		req [2]string
	}{{procs[0], bigReq}, {procs[1], bigReq}, {procs[2], bigReq}, {procs[3], callReq}}
	meters := meterAll(procs)
	s := make([]samples, len(ops))
	block := max(1, min(h.it.block, n/5))
	var respBytes int
	for round := 0; s[0].n() < n && ctx.Err() == nil; round++ {
		for k := range ops {
			i := (round + k) % len(ops)
			for range block {
				d, m, err := ops[i].p.roundTrip(ops[i].req)
				if err != nil {
					return err
				}
				s[i].add(d)
				respBytes = m
			}
		}
	}
	var cpu [4]Num
	for i, m := range meters {
		cpu[i] = Num(m.per(s[i].n()))
	}
	err := stopAll(procs...)
	procs = nil
	if err != nil {
		return err
	}
	r := SizeResult{FloorCPU: cpu[1], UnrecordedCPU: cpu[2], RecordedCPU: cpu[3], Bytes: respBytes, Direct: s[0].stats(), Floor: s[1].stats(), Unrecorded: s[2].stats(), Recorded: s[3].stats()}
	mbps := func(st Stats) float64 { return float64(respBytes) / st.Median * 1e3 }
	r.DirectMBps, r.FloorMBps = mbps(r.Direct), mbps(r.Floor)
	r.UnrecordedMBps, r.RecordedMBps = mbps(r.Unrecorded), mbps(r.Recorded)
	r.UnrecordedRatio = ratio(r.UnrecordedMBps, r.FloorMBps)
	r.RecordedRatio = ratio(r.RecordedMBps, r.FloorMBps)
	h.res.Sizes = append(h.res.Sizes, r)
	h.logf("   %8d B: direct %.0f MB/s, floor %.0f MB/s, wrap unrecorded %.0f MB/s (%.2f×), recorded %.0f MB/s (%.2f×)",
		respBytes, r.DirectMBps, r.FloorMBps, r.UnrecordedMBps, r.UnrecordedRatio, r.RecordedMBps, r.RecordedRatio)
	c, err := h.verifyLog(ctx, audit)
	if err != nil {
		return err
	}
	// The warm-up sends bench/big only, so every intent is a timed call.
	if c.Intents != s[3].n() || c.Outcomes != s[3].n() {
		return fmt.Errorf("%d-byte log holds %d intents, %d outcomes; want %d", size, c.Intents, c.Outcomes, s[3].n())
	}
	return nil
}
