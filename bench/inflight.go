package bench

import (
	"context"
	"fmt"
	"time"
)

// InFlightResult is one level of pipelining: calls with ids pipelined on
// one session, at most InFlight unanswered, recorded at strict.
type InFlightResult struct {
	InFlight int     `json:"in_flight"`
	Calls    int     `json:"calls"`
	Elapsed  float64 `json:"elapsed_ns"`
	PerSec   float64 `json:"calls_per_sec"`
	Latency  Stats   `json:"latency"` // request written → its answer read
	// Groups is the number of commit groups (= fdatasyncs at strict) the
	// calls needed: signed records minus session_start's and
	// session_end's (the journal signs the last record of every group).
	Groups       int   `json:"groups"`
	CallsPerSync Ratio `json:"calls_per_fdatasync"`
	// FsyncFloor is the raw floor sampled before and after this level;
	// ElapsedSyncs = Elapsed ÷ FsyncFloor, the syncs that would fit in the
	// time taken: a cross-check of Groups that needs no log.
	FsyncFloor   float64 `json:"fsync_floor_ns"`
	ElapsedSyncs float64 `json:"elapsed_in_fdatasyncs"`
	// LittlePerSec is InFlight ÷ the median latency (Little's law): a
	// throughput that a few long stalls of a loaded machine do not drag
	// down, unlike PerSec.
	LittlePerSec float64   `json:"little_calls_per_sec"`
	CPU          Num       `json:"cpu_ns"` // the wrap process's CPU time per call
	Log          logCounts `json:"log"`
}

func (h *harness) inFlightSection(ctx context.Context) error {
	sf, err := openSyncFile(h.work)
	if err != nil {
		return err
	}
	defer sf.close()
	for _, w := range h.it.inFlight {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Fewer calls where each costs two syncs of its own.
		n := max(4*w, h.it.inFlightN*min(w, 32)/32, 20)
		r, lat, err := h.inFlight(ctx, sf, w, n)
		if err != nil {
			return err
		}
		h.res.InFlight = append(h.res.InFlight, r)
		h.res.inFlightSamples = append(h.res.inFlightSamples, lat)
		h.logf("   %3d in flight: %6.0f calls/s (%6.0f by Little), %5.2f calls/fdatasync (%d groups; elapsed = %.0f syncs), p50 %.0f µs, CPU/call %.1f µs",
			w, r.PerSec, r.LittlePerSec, r.CallsPerSync, r.Groups, r.ElapsedSyncs, r.Latency.Median/1e3, r.CPU/1e3)
	}
	return nil
}

func (h *harness) inFlight(ctx context.Context, sf *syncFile, w, n int) (InFlightResult, []time.Duration, error) {
	audit := h.newAudit(fmt.Sprintf("inflight-%d", w))
	p, err := h.startTarget(ctx, "wrap", Pipes, "strict", audit, echoOpts{})
	if err != nil {
		return InFlightResult{}, nil, err
	}
	defer p.stop()
	if err := p.warm(pingReq, h.it.warm(50)); err != nil {
		return InFlightResult{}, nil, err
	}
	var floor samples
	sampleFloor := func() error {
		for range 15 {
			d, err := sf.sync()
			if err != nil {
				return err
			}
			floor.add(d)
		}
		return nil
	}
	if err := sampleFloor(); err != nil {
		return InFlightResult{}, nil, err
	}
	var lat samples
	m := meter(p)
	elapsed, err := p.pipeline(callReq, n, w, &lat)
	if err != nil {
		return InFlightResult{}, nil, err
	}
	cpu := Num(m.per(n))
	if err := sampleFloor(); err != nil {
		return InFlightResult{}, nil, err
	}
	if err := p.stop(); err != nil {
		return InFlightResult{}, nil, err
	}
	c, err := h.verifyLog(ctx, audit)
	if err != nil {
		return InFlightResult{}, nil, err
	}
	if c.Intents != n || c.Outcomes != n {
		return InFlightResult{}, nil, fmt.Errorf("in flight %d: log holds %d intents, %d outcomes; want %d", w, c.Intents, c.Outcomes, n)
	}
	fl := floor.stats().Median
	r := InFlightResult{
		InFlight: w, Calls: n, Elapsed: float64(elapsed),
		PerSec:     float64(n) / elapsed.Seconds(),
		Latency:    lat.stats(),
		Groups:     c.Signed - 2,
		FsyncFloor: fl, ElapsedSyncs: float64(elapsed) / fl,
		Log: c, CPU: cpu,
	}
	r.CallsPerSync = ratio(float64(n), float64(r.Groups))
	r.LittlePerSec = float64(w) / r.Latency.Median * 1e9
	return r, lat.d, nil
}
