package bench

import (
	"context"
	"fmt"
	"strings"
)

// RSSResult is the peak resident set (VmHWM, read from /proc while the
// process still runs) of aegis wrap at strict under one load.
type RSSResult struct {
	Case string `json:"case"`
	Wrap int64  `json:"wrap_hwm_bytes"`
	// Idle is a wrap that relayed a few pings, started the same way.
	Idle int64 `json:"idle_hwm_bytes"`
	// Floor is the floor relay's under the same load, where it applies.
	Floor int64 `json:"floor_hwm_bytes,omitempty"`
}

// bigCallReq is a tools/call whose arguments carry 16 MiB.
var bigCallReq = [2]string{`{"jsonrpc":"2.0","id":`, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("y", 16<<20) + `"}}}` + "\n"}

func (h *harness) rssSection(ctx context.Context) error {
	idle, err := h.idleHWM(ctx)
	if err != nil {
		return err
	}

	// 1,000 calls in flight: the child answers none until it holds all.
	n := h.it.rssInFlight
	audit := h.newAudit("rss-inflight")
	p, err := h.startTarget(ctx, "wrap", Pipes, "strict", audit, echoOpts{hold: n})
	if err != nil {
		return err
	}
	defer p.stop()
	if _, err := p.pipeline(callReq, n, n, nil); err != nil {
		return err
	}
	hwm, err := p.hwm()
	if err != nil {
		return err
	}
	if err := p.stop(); err != nil {
		return err
	}
	if c, err := h.verifyLog(ctx, audit); err != nil {
		return err
	} else if c.Intents != n {
		return fmt.Errorf("rss log holds %d intents; want %d", c.Intents, n)
	}
	h.res.RSS = append(h.res.RSS, RSSResult{Case: fmt.Sprintf("%d calls in flight", n), Wrap: hwm, Idle: idle})
	h.logf("   %d in flight: wrap VmHWM %.1f MiB (idle %.1f MiB)", n, mib(hwm), mib(idle))

	// A 16 MiB response and a 16 MiB request, both recorded, and a 16 MiB
	// response unrecorded.
	audit = h.newAudit("rss-16mib")
	w, err := h.startTarget(ctx, "wrap", Pipes, "strict", audit, echoOpts{size: 16 << 20})
	if err != nil {
		return err
	}
	defer w.stop()
	f, err := h.startTarget(ctx, "floor", Pipes, "", "", echoOpts{size: 16 << 20})
	if err != nil {
		return err
	}
	defer f.stop()
	var hw [2]int64
	for i, p := range []*proc{w, f} {
		for _, req := range [][2]string{callReq, bigCallReq, bigReq} {
			if _, _, err := p.roundTrip(req); err != nil {
				return err
			}
		}
		if hw[i], err = p.hwm(); err != nil {
			return err
		}
	}
	if err := stopAll(w, f); err != nil {
		return err
	}
	if _, err := h.verifyLog(ctx, audit); err != nil {
		return err
	}
	h.res.RSS = append(h.res.RSS, RSSResult{Case: "16 MiB frames", Wrap: hw[0], Idle: idle, Floor: hw[1]})
	h.logf("   16 MiB frames: wrap VmHWM %.1f MiB, floor relay %.1f MiB", mib(hw[0]), mib(hw[1]))
	return nil
}

// idleHWM is the peak RSS of a wrap that relayed a few pings.
func (h *harness) idleHWM(ctx context.Context) (int64, error) {
	p, err := h.startTarget(ctx, "wrap", Pipes, "strict", h.newAudit("rss-idle"), echoOpts{})
	if err != nil {
		return 0, err
	}
	defer p.stop()
	if err := p.warm(pingReq, 10); err != nil {
		return 0, err
	}
	hwm, err := p.hwm()
	if err != nil {
		return 0, err
	}
	return hwm, p.stop()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
