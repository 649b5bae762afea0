package bench

import (
	"context"
	"fmt"
	"time"
)

// StartResult is the time from spawning a server to its answer to
// initialize: what a harness pays each time it starts one. Direct is the
// echo child spawned alone; each wrap row is the same child spawned
// through aegis wrap, its log continued from one start to the next as a
// server's default log is.
type StartResult struct {
	Target string `json:"target"` // "direct", "wrap none", "wrap strict", "wrap strict --confine"
	Stats  Stats  `json:"stats"`
	// Overhead is the difference of medians with the direct start, ns.
	Overhead float64 `json:"overhead_ns"`
	// Faults and CPU are the medians of what the kernel counted for one
	// start (its process and the child it waited for, from spawn to
	// exit, the stop included): minor page faults, and CPU time in ns.
	// Counted, not timed, they move far less than Stats with the load
	// of a shared machine; FaultsOver and CPUOver are the differences
	// of medians with the direct start. Zero where the system has no
	// rusage.
	Faults     float64 `json:"faults_median"`
	FaultsOver float64 `json:"faults_overhead"`
	CPU        float64 `json:"cpu_median_ns"`
	CPUOver    float64 `json:"cpu_overhead_ns"`
}

// startTargets are the rows, with wrap's flags.
var startTargets = []struct {
	name  string
	flags []string
}{
	{"direct", nil},
	{"wrap none", []string{"--durability", "none"}},
	{"wrap strict", []string{"--durability", "strict"}},
	{"wrap strict --confine", []string{"--durability", "strict", "--confine"}},
}

var initReq = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"aegis-bench","version":"1"}}}` + "\n"}

// startSection spawns each target in turn, rotating who goes first, and
// times spawn → initialize answered over pipes; each process is then
// ended (stdin closed, exit awaited) outside the timed part.
func (h *harness) startSection(ctx context.Context) error {
	audits := make([]string, len(startTargets))
	for i, t := range startTargets {
		if t.flags != nil {
			audits[i] = h.newAudit("start")
		}
	}
	s := make([]samples, len(startTargets))
	faults := make([]samples, len(startTargets)) // counts, kept as Durations for Stats
	cpu := make([]samples, len(startTargets))
	for round := 0; round < h.it.starts && ctx.Err() == nil; round++ {
		for k := range startTargets {
			i := (round + k) % len(startTargets)
			u, err := h.startOnce(ctx, i, audits[i])
			if err != nil {
				return err
			}
			if round > 0 { // the first start of each warms the page cache
				s[i].add(u.elapsed)
				if u.counted {
					faults[i].add(time.Duration(u.faults))
					cpu[i].add(u.cpu)
				}
			}
		}
	}
	direct := s[0].stats()
	directFaults, directCPU := faults[0].stats().Median, cpu[0].stats().Median
	h.res.startSamples = map[string][]time.Duration{}
	for i, t := range startTargets {
		h.res.startSamples[t.name] = s[i].d
		r := StartResult{Target: t.name, Stats: s[i].stats()}
		r.Overhead = r.Stats.Median - direct.Median
		r.Faults, r.CPU = faults[i].stats().Median, cpu[i].stats().Median
		r.FaultsOver, r.CPUOver = r.Faults-directFaults, r.CPU-directCPU
		h.res.Start = append(h.res.Start, r)
		h.logf("   start %-22s median %s, p99 %s, overhead %s; page faults %.0f (%+.0f), CPU %s (%+.2f ms)", t.name, us(r.Stats.Median), us(r.Stats.P99), us(r.Overhead),
			r.Faults, r.FaultsOver, us(r.CPU), r.CPUOver/1e6)
	}
	for i, a := range audits {
		if a == "" {
			continue
		}
		if _, err := h.verifyLog(ctx, a); err != nil {
			return fmt.Errorf("%s: %w", startTargets[i].name, err)
		}
	}
	return nil
}

// startUsage is one start: spawn → initialize answered, and what the
// kernel counted for the process from spawn to exit (counted: the
// system has rusage).
type startUsage struct {
	elapsed time.Duration
	faults  int64
	cpu     time.Duration
	counted bool
}

func (h *harness) startOnce(ctx context.Context, i int, audit string) (startUsage, error) {
	t := startTargets[i]
	argv := h.echoArgv(echoOpts{})
	if t.flags != nil {
		argv = append(append(append([]string{h.aegis, "wrap", "--audit", audit, "--signing-key", h.key}, t.flags...), "--"), argv...)
	}
	t0 := time.Now()
	p, err := startProc(ctx, "start/"+t.name, Pipes, argv, nil)
	if err != nil {
		return startUsage{}, err
	}
	if err := p.send(initReq[0], 1, initReq[1]); err != nil {
		p.stop()
		return startUsage{}, err
	}
	if _, err := p.expect(1); err != nil {
		p.stop()
		return startUsage{}, err
	}
	u := startUsage{elapsed: time.Since(t0)}
	if err := p.stop(); err != nil {
		return u, err
	}
	u.faults, u.cpu, u.counted = usageOf(p.cmd.ProcessState)
	if u.counted && u.faults == 0 {
		return u, fmt.Errorf("start %s: the kernel counted no page faults for a process that ran: its rusage is not what usageOf reads", t.name)
	}
	return u, nil
}
