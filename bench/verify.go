package bench

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// VerifyResult is aegis verify against sha256sum reading the same log,
// from the page cache, in the same rounds.
type VerifyResult struct {
	Shape      string    `json:"shape"` // how the log was made: "64 in flight" or "lock-step"
	Log        logCounts `json:"log"`   // made by wrap at none
	Verify     Stats     `json:"verify"`
	Sha256sum  Stats     `json:"sha256sum"`
	VerifyMBps float64   `json:"verify_mb_s"`
	ShaMBps    float64   `json:"sha256sum_mb_s"`
	// Ratio is verify's throughput ÷ sha256sum's by wall time; Target is
	// the least the targets table asks of CPURatio, the one judged:
	// verify checks on every core, sha256sum hashes on one.
	Ratio  Ratio   `json:"ratio"`
	Target float64 `json:"target"`
	// CPU time (user + system) per run, and the ratio of throughputs by
	// CPU time: what a loaded machine's scheduling does not change, but
	// which counts all of verify's parallel workers' time against it.
	VerifyCPU Stats `json:"verify_cpu"`
	ShaCPU    Stats `json:"sha256sum_cpu"`
	CPURatio  Ratio `json:"cpu_ratio"`
}

// verifyShapes are the logs verify reads: the one many calls in flight
// make (few signatures: one per commit group) and the one a sequential
// agent makes (every record signed).
var verifyShapes = []struct {
	name   string
	window int
	target float64 // the least ratio to sha256sum's throughput by CPU time
}{{"64 in flight", 64, 0.5}, {"lock-step", 1, 0.5}}

func (h *harness) verifySection(ctx context.Context) error {
	for _, shape := range verifyShapes {
		r, err := h.verifyShape(ctx, shape.name, shape.window)
		if err != nil {
			return err
		}
		r.Target = shape.target
		if shape.window == 1 {
			h.res.VerifyLockStep = r
		} else {
			h.res.Verify = r
		}
	}
	return nil
}

// verifyShape makes a log of verifyCalls calls through wrap at none with
// window calls in flight, and times verify and sha256sum on it.
func (h *harness) verifyShape(ctx context.Context, name string, window int) (*VerifyResult, error) {
	audit := h.newAudit("verify")
	if window > 1 {
		h.verifyAudit = audit
	}
	p, err := h.startTarget(ctx, "wrap", Pipes, "none", audit, echoOpts{})
	if err != nil {
		return nil, err
	}
	defer p.stop()
	h.logf("   writing a log of %d calls through wrap (none, %s)", h.it.verifyCalls, name)
	if _, err := p.pipeline(callReq, h.it.verifyCalls, window, nil); err != nil {
		return nil, err
	}
	if err := p.stop(); err != nil {
		return nil, err
	}
	c, err := h.verifyLog(ctx, audit) // also warms the page cache
	if err != nil {
		return nil, err
	}
	if c.Intents != h.it.verifyCalls {
		return nil, fmt.Errorf("verify log holds %d intents; want %d", c.Intents, h.it.verifyCalls)
	}
	verify := []string{h.aegis, "verify", "--key", "@" + h.key + ".pub", audit}
	sha := []string{"sha256sum", audit}
	var vs, ss, vc, sc samples
	for round := 0; round < h.it.verifyRuns && ctx.Err() == nil; round++ {
		// Alternate which goes first.
		for k := range 2 {
			argv, s, c := verify, &vs, &vc
			if (round+k)%2 == 1 {
				argv, s, c = sha, &ss, &sc
			}
			d, cpu, err := timeCmd(ctx, argv)
			if err != nil {
				return nil, err
			}
			s.add(d)
			c.add(cpu)
		}
	}
	r := &VerifyResult{Shape: name, Log: c, Verify: vs.stats(), Sha256sum: ss.stats(), VerifyCPU: vc.stats(), ShaCPU: sc.stats()}
	r.CPURatio = ratio(r.ShaCPU.Median, r.VerifyCPU.Median)
	r.VerifyMBps = float64(c.Bytes) / r.Verify.Median * 1e3
	r.ShaMBps = float64(c.Bytes) / r.Sha256sum.Median * 1e3
	r.Ratio = ratio(r.VerifyMBps, r.ShaMBps)
	h.logf("   %s: %d records (%d signed), %.1f MB: verify %.0f MB/s, sha256sum %.0f MB/s: %.2f× (by CPU time %.2f×)",
		name, c.Records, c.Signed, float64(c.Bytes)/1e6, r.VerifyMBps, r.ShaMBps, r.Ratio, r.CPURatio)
	return r, nil
}

// timeCmd runs argv to completion, output discarded, and returns its
// wall time and CPU time (user + system); a non-zero exit is an error.
func timeCmd(ctx context.Context, argv []string) (wall, cpu time.Duration, err error) {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	t0 := time.Now()
	out, err := c.CombinedOutput()
	wall = time.Since(t0)
	if err != nil {
		return 0, 0, fmt.Errorf("%v: %w\n%s", argv, err, out)
	}
	return wall, c.ProcessState.UserTime() + c.ProcessState.SystemTime(), nil
}
