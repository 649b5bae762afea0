package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// HTTPResult is the Streamable HTTP front (aegis wrap --listen) beside
// its floor (package httpfloor: net/http and a pipe, nothing else) and
// supergateway's Streamable HTTP mode, all in front of the same echo
// child, in the same run.
type HTTPResult struct {
	Supergateway string `json:"supergateway"` // the version run
	// LockStep and Pipelined are the unrecorded round trip (a ping).
	LockStep  HTTPRow `json:"lock_step"`
	Pipelined HTTPRow `json:"pipelined"`
	// Levels are the recorded tools/call, lock-step, at each durability
	// level, in the lock-step rounds.
	Levels []HTTPLevel `json:"levels"`
	// Sessions are many sessions at once, each target on its own.
	Sessions []HTTPSessions `json:"sessions"`

	samples map[string][]time.Duration // lock-step, for the plot
}

// HTTPRow is one mode of the unrecorded round trip: straight to the echo
// child over pipes (direct), and over HTTP through the floor, aegis and
// supergateway.
type HTTPRow struct {
	Mode         string `json:"mode"`
	Window       int    `json:"window"` // requests in flight, pipelined
	Direct       Stats  `json:"direct"`
	Floor        Stats  `json:"floor"`
	Aegis        Stats  `json:"aegis"`
	Supergateway Stats  `json:"supergateway"`
	// Overheads are differences of medians with Direct, ns.
	FloorOverhead        float64 `json:"floor_overhead_ns"`
	AegisOverhead        float64 `json:"aegis_overhead_ns"`
	SupergatewayOverhead float64 `json:"supergateway_overhead_ns"`
	// Ratio is AegisOverhead ÷ FloorOverhead: ≤ 1.2 lock-step, ≤ 1.5
	// pipelined.
	Ratio Ratio `json:"ratio"`
	// VsSupergateway is AegisOverhead ÷ SupergatewayOverhead.
	VsSupergateway Ratio `json:"vs_supergateway"`
	// CPU time per message of each serving process (not its children), ns.
	FloorCPU        Num `json:"floor_cpu_ns"`
	AegisCPU        Num `json:"aegis_cpu_ns"`
	SupergatewayCPU Num `json:"supergateway_cpu_ns"`
}

// HTTPLevel is a recorded tools/call through aegis wrap --listen at one
// durability level.
type HTTPLevel struct {
	Level string `json:"level"`
	Call  Stats  `json:"call"`
	// Overhead is Call's median − the direct ping's, ns; Ratio is it ÷
	// the floor's overhead.
	Overhead float64 `json:"overhead_ns"`
	Ratio    Ratio   `json:"ratio"`
	// OverUnrecorded is Call's median − the unrecorded ping's through
	// aegis, ns: what recording costs over HTTP.
	OverUnrecorded float64   `json:"over_unrecorded_ns"`
	CPU            Num       `json:"cpu_ns"`
	Log            logCounts `json:"log"`
}

// HTTPSessions is one target serving many sessions at once: its memory
// idle and under load, and the calls' latency under load.
type HTTPSessions struct {
	Target   string `json:"target"`
	Sessions int    `json:"sessions"`
	Calls    int    `json:"calls"` // tools/call made under load, all sessions
	// Base is the serving process's resident set before any session;
	// the per-session figures are increases over it ÷ Sessions: Idle
	// after every session made one call, Active the peak (VmHWM) under
	// load. Tree figures add the processes below it (the children).
	Base        int64   `json:"base_rss_bytes"`
	IdlePer     int64   `json:"idle_per_session_bytes"`
	ActivePer   int64   `json:"active_per_session_bytes"`
	TreeIdlePer int64   `json:"tree_idle_per_session_bytes"`
	TreeLoadPer int64   `json:"tree_load_per_session_bytes"`
	Load        Stats   `json:"load"` // each call's round trip under load
	CallsPerSec float64 `json:"calls_per_s"`
}

// fullSessions is how many sessions the sessions part runs at once; a
// run scaled down (Config.Scale < 1) runs fewer, down to 4.
const fullSessions = 64

func (h *harness) httpSessions() int {
	return max(4, min(fullSessions, int(math.Round(fullSessions*h.cfg.Scale))))
}

// supergatewayEntry is supergateway's program in interop's pinned npm
// packages.
const supergatewayEntry = "interop/node_modules/supergateway/dist/index.js"

// httpSection measures the Streamable HTTP front: the unrecorded round
// trip lock-step and pipelined, the recorded call at each level, against
// the floor and supergateway in the same rounds; then many sessions.
func (h *harness) httpSection(ctx context.Context) error {
	sg, sgVersion, err := h.supergateway()
	if err != nil {
		return err
	}
	r := &HTTPResult{Supergateway: sgVersion, samples: map[string][]time.Duration{}}
	if err := h.httpRoundTrips(ctx, r, sg); err != nil {
		return err
	}
	if err := h.httpManySessions(ctx, r, sg); err != nil {
		return err
	}
	h.res.HTTP = r
	return nil
}

// supergateway is the command line that starts supergateway's Streamable
// HTTP mode, which ends in its port, and its version.
func (h *harness) supergateway() (argv []string, version string, err error) {
	entry := filepath.Join(h.root, supergatewayEntry)
	if !fileExists(entry) {
		return nil, "", fmt.Errorf("%s is not installed: run npm ci in interop/ (the http section runs the pinned supergateway beside aegis)", entry)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, "", fmt.Errorf("node is not on PATH: the http section runs supergateway on Node.js 20 or later")
	}
	var pkg struct{ Version string }
	if data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(entry)), "package.json")); err == nil {
		json.Unmarshal(data, &pkg)
	}
	return []string{node, entry, "--outputTransport", "streamableHttp", "--stateful", "--logLevel", "none", "--port"}, pkg.Version, nil
}

// httpStarter starts the HTTP targets of a run.
type httpStarter struct {
	h  *harness
	sg []string
}

// start starts one target in front of an echo child: "floor", "aegis"
// (wrap --listen with the default bearer token, at durability d, writing
// audit) or "supergateway" (stateful, a child per session).
func (s httpStarter) start(ctx context.Context, kind, d, audit string) (*httpTarget, error) {
	h := s.h
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	echo := h.echoArgv(echoOpts{})
	switch kind {
	case "floor":
		argv := []string{h.child, "httpfloor", fmt.Sprintf("-listen=127.0.0.1:%d", port)}
		return startHTTPTarget(ctx, "httpfloor", argv, port, "", false, false)
	case "aegis":
		token := audit + ".token"
		argv := append([]string{h.aegis, "wrap", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--token-file", token,
			"--audit", audit, "--signing-key", h.key, "--durability", d, "--"}, echo...)
		return startHTTPTarget(ctx, "wrap --listen/"+d, argv, port, token, true, false)
	case "supergateway":
		argv := append(append([]string{}, s.sg...), fmt.Sprint(port), "--stdio", shellJoin(echo))
		// Its own process group, signalled as one: supergateway's
		// children (a shell and an echo child per session) end with it.
		return startHTTPTarget(ctx, "supergateway", argv, port, "", true, true)
	}
	return nil, fmt.Errorf("unknown HTTP target %q", kind)
}

// shellJoin quotes argv for sh -c, as supergateway runs its --stdio.
func shellJoin(argv []string) string {
	var s string
	for i, a := range argv {
		if i > 0 {
			s += " "
		}
		s += "'" + a + "'"
	}
	return s
}

// httpRoundTrips runs the lock-step and pipelined rounds: every target
// alive together, interleaved in blocks, the order rotating.
func (h *harness) httpRoundTrips(ctx context.Context, r *HTTPResult, sg []string) error {
	st := httpStarter{h, sg}
	direct, err := h.startTarget(ctx, "direct", Pipes, "", "", echoOpts{})
	if err != nil {
		return err
	}
	defer direct.stop()
	// The unrecorded pings go to an aegis of their own, so that each
	// process's CPU time belongs to one kind of request.
	kinds := []struct{ name, kind, level string }{
		{"floor", "floor", ""}, {"aegis", "aegis", "strict"}, {"supergateway", "supergateway", ""},
	}
	for _, lv := range levels {
		kinds = append(kinds, struct{ name, kind, level string }{lv.name, "aegis", lv.name})
	}
	targets := make([]*httpTarget, len(kinds))
	audits := make([]string, len(kinds))
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	workers := make([]*httpWorker, len(kinds))
	for i, k := range kinds {
		if k.kind == "aegis" {
			audits[i] = h.newAudit("http-" + k.name)
		}
		t, err := st.start(ctx, k.kind, k.level, audits[i])
		if err != nil {
			return err
		}
		targets[i] = t
		if workers[i], err = t.worker(); err != nil {
			return err
		}
		for range h.it.warm(200) {
			if _, err := workers[i].roundTrip(pingReq); err != nil {
				return err
			}
		}
	}
	if err := direct.warm(pingReq, h.it.warm(200)); err != nil {
		return err
	}

	// Lock-step: slot 0 is the direct ping, slot i+1 target i.
	n := max(10, h.it.rtLock/4)
	lock := make([]samples, len(kinds)+1)
	meters := make([]*cpuMeter, len(kinds))
	for i, t := range targets {
		meters[i] = meter(t.p)
	}
	block := max(2, min(h.it.block, 20))
	for round := 0; lock[0].n() < n && ctx.Err() == nil; round++ {
		for k := range lock {
			i := (round + k) % len(lock)
			for range block {
				var d time.Duration
				var err error
				switch {
				case i == 0:
					d, _, err = direct.roundTrip(pingReq)
				case kinds[i-1].kind == "aegis" && kinds[i-1].name != "aegis":
					d, err = workers[i-1].roundTrip(callReq)
				default:
					d, err = workers[i-1].roundTrip(pingReq)
				}
				if err != nil {
					return err
				}
				lock[i].add(d)
			}
		}
	}
	cpu := make([]Num, len(kinds))
	for i, m := range meters {
		cpu[i] = Num(m.per(lock[i+1].n()))
	}
	r.LockStep = httpRow("lock-step", 1, lock[0], lock[1], lock[2], lock[3])
	r.LockStep.FloorCPU, r.LockStep.AegisCPU, r.LockStep.SupergatewayCPU = cpu[0], cpu[1], cpu[2]
	r.samples["direct (stdio), ping"] = lock[0].d
	for i, name := range []string{"HTTP floor, ping", "aegis, ping (unrecorded)", "supergateway, ping"} {
		r.samples[name] = lock[i+1].d
	}
	h.logf("   lock-step ping: direct %s, floor %s, aegis %s, supergateway %s; overhead ratio %.2f (≤ 1.2), ÷ supergateway's %.2f; CPU/msg floor %s, aegis %s, supergateway %s",
		us(r.LockStep.Direct.Median), us(r.LockStep.Floor.Median), us(r.LockStep.Aegis.Median), us(r.LockStep.Supergateway.Median),
		r.LockStep.Ratio, r.LockStep.VsSupergateway, us(float64(cpu[0])), us(float64(cpu[1])), us(float64(cpu[2])))

	// Pipelined: the unrecorded targets, window requests in flight.
	window := h.it.rtWindow
	rounds := h.it.httpRounds
	per := max(h.it.rtPipe/20, 2*window) // messages per round and target
	pool := make([][]*httpWorker, 3)
	for i := range pool {
		pool[i] = make([]*httpWorker, window)
		for j := range pool[i] {
			// One session, as one client pipelining its requests.
			pool[i][j] = targets[i].join(workers[i].sid)
		}
	}
	pipe := make([]samples, 4)
	meters = []*cpuMeter{meter(targets[0].p), meter(targets[1].p), meter(targets[2].p)}
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		for k := range pipe {
			i := (round + k) % len(pipe)
			var d time.Duration
			var err error
			if i == 0 {
				d, err = direct.pipeline(pingReq, per, window, nil)
			} else {
				d, err = targets[i-1].pipeline(pool[i-1], pingReq, per)
			}
			if err != nil {
				return err
			}
			pipe[i].add(d / time.Duration(per))
		}
	}
	r.Pipelined = httpRow("pipelined", window, pipe[0], pipe[1], pipe[2], pipe[3])
	r.Pipelined.FloorCPU = Num(meters[0].per(pipe[1].n() * per))
	r.Pipelined.AegisCPU = Num(meters[1].per(pipe[2].n() * per))
	r.Pipelined.SupergatewayCPU = Num(meters[2].per(pipe[3].n() * per))
	h.logf("   pipelined ×%d ping: direct %s/msg, floor %s, aegis %s, supergateway %s; overhead ratio %.2f (≤ 1.5), ÷ supergateway's %.2f",
		window, us(r.Pipelined.Direct.Median), us(r.Pipelined.Floor.Median), us(r.Pipelined.Aegis.Median), us(r.Pipelined.Supergateway.Median),
		r.Pipelined.Ratio, r.Pipelined.VsSupergateway)

	var errs []error
	for i, t := range targets {
		errs = append(errs, t.stopChecked(kinds[i].kind == "aegis"))
	}
	targets = nil
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, k := range kinds[3:] {
		i += 3
		c, err := h.verifyLog(ctx, audits[i])
		if err != nil {
			return err
		}
		calls := lock[i+1].n()
		if c.Intents != calls || c.Outcomes != calls {
			return fmt.Errorf("http %s log holds %d intents, %d outcomes; want %d of each", k.name, c.Intents, c.Outcomes, calls)
		}
		s := lock[i+1].stats()
		lv := HTTPLevel{Level: k.name, Call: s, Overhead: s.Median - r.LockStep.Direct.Median, OverUnrecorded: s.Median - r.LockStep.Aegis.Median, CPU: cpu[i], Log: c}
		lv.Ratio = ratio(lv.Overhead, r.LockStep.FloorOverhead)
		r.Levels = append(r.Levels, lv)
		r.samples["aegis, tools/call at "+k.name] = lock[i+1].d
		h.logf("   tools/call at %-8s median %s p99 %s; overhead ÷ floor's %.2f; over unrecorded %s; CPU/call %s",
			k.name, us(s.Median), us(s.P99), lv.Ratio, us(lv.OverUnrecorded), us(float64(lv.CPU)))
	}
	if _, err := h.verifyLog(ctx, audits[1]); err != nil {
		return err
	}
	return nil
}

func httpRow(mode string, window int, direct, floor, aegis, sg samples) HTTPRow {
	r := HTTPRow{Mode: mode, Window: window, Direct: direct.stats(), Floor: floor.stats(), Aegis: aegis.stats(), Supergateway: sg.stats()}
	r.FloorOverhead = r.Floor.Median - r.Direct.Median
	r.AegisOverhead = r.Aegis.Median - r.Direct.Median
	r.SupergatewayOverhead = r.Supergateway.Median - r.Direct.Median
	r.Ratio = ratio(r.AegisOverhead, r.FloorOverhead)
	r.VsSupergateway = ratio(r.AegisOverhead, r.SupergatewayOverhead)
	return r
}

// httpManySessions runs h.httpSessions() sessions at once through each
// front, one front at a time so that each one's memory is its own: the
// floor (its one child serving every client; no sessions to count),
// aegis at none and at strict, and supergateway.
func (h *harness) httpManySessions(ctx context.Context, r *HTTPResult, sg []string) error {
	st := httpStarter{h, sg}
	calls := max(5, h.it.rtLock/80) // per session
	for _, k := range []struct{ name, kind, level string }{
		{"floor", "floor", ""}, {"aegis none", "aegis", "none"}, {"aegis strict", "aegis", "strict"}, {"supergateway", "supergateway", ""},
	} {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		audit := ""
		if k.kind == "aegis" {
			audit = h.newAudit("http-sessions-" + k.level)
		}
		res, err := h.httpSessionsOf(ctx, st, k.kind, k.level, audit, calls)
		if err != nil {
			return err
		}
		res.Target = k.name
		if audit != "" {
			c, err := h.verifyLog(ctx, audit)
			if err != nil {
				return err
			}
			if want := res.Sessions * (calls + 1); c.Intents != want {
				return fmt.Errorf("%s: the log holds %d intents; want %d", k.name, c.Intents, want)
			}
		}
		r.Sessions = append(r.Sessions, res)
		h.logf("   %d sessions, %s: idle %s/session (with children %s), active %s/session (with children %s); tools/call under load median %s p99 %s, %.0f calls/s",
			res.Sessions, k.name, size(int(res.IdlePer)), size(int(res.TreeIdlePer)), size(int(res.ActivePer)), size(int(res.TreeLoadPer)),
			us(res.Load.Median), us(res.Load.P99), res.CallsPerSec)
	}
	return nil
}

// httpSessionsOf starts one front, opens h.httpSessions() sessions, each
// making one call (idle), then has all of them make calls lock-step at
// once (active), reading its memory at each stage.
func (h *harness) httpSessionsOf(ctx context.Context, st httpStarter, kind, level, audit string, calls int) (HTTPSessions, error) {
	n := h.httpSessions()
	res := HTTPSessions{Sessions: n, Calls: n * calls}
	t, err := st.start(ctx, kind, level, audit)
	if err != nil {
		return res, err
	}
	defer t.stop()
	pid := t.p.cmd.Process.Pid
	if res.Base, err = rss(pid); err != nil {
		return res, err
	}
	tree0, err := treeRSS(pid)
	if err != nil {
		return res, err
	}
	ws := make([]*httpWorker, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range ws {
		wg.Go(func() {
			if ws[i], errs[i] = t.worker(); errs[i] == nil {
				_, errs[i] = ws[i].roundTrip(callReq)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	idle, err := rss(pid)
	if err != nil {
		return res, err
	}
	treeIdle, err := treeRSS(pid)
	if err != nil {
		return res, err
	}
	lat := make([]samples, n)
	t0 := time.Now()
	for i, w := range ws {
		wg.Go(func() {
			for range calls {
				d, err := w.roundTrip(callReq)
				if err != nil {
					errs[i] = err
					return
				}
				lat[i].add(d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	peak, err := statusKB(pid, "VmHWM:")
	if err != nil {
		return res, err
	}
	treeLoad, err := treeRSS(pid)
	if err != nil {
		return res, err
	}
	var all samples
	for _, s := range lat {
		all.d = append(all.d, s.d...)
	}
	res.Load = all.stats()
	res.CallsPerSec = float64(all.n()) / elapsed.Seconds()
	res.IdlePer = (idle - res.Base) / int64(n)
	res.ActivePer = (peak - res.Base) / int64(n)
	res.TreeIdlePer = (treeIdle - tree0) / int64(n)
	res.TreeLoadPer = (treeLoad - tree0) / int64(n)
	return res, t.stopChecked(kind == "aegis")
}
