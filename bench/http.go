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
	"strings"
	"sync"
	"time"
)

// HTTPResult is the Streamable HTTP front (aegis wrap --listen) beside
// its floor (package httpfloor: net/http and a pipe, nothing else),
// supergateway's Streamable HTTP mode and the official TypeScript SDK
// v2's own Streamable HTTP transport (bench/node/v2front.mjs), all in
// front of the same echo child, in the same run.
type HTTPResult struct {
	Supergateway string `json:"supergateway"` // the version run
	V2           string `json:"ts_sdk_v2"`    // @modelcontextprotocol/server's version run
	// LockStep and Pipelined are the unrecorded round trip of revision
	// 2025-11-25 (a ping in a session); Modern and ModernPipelined of
	// revision 2026-07-28 (a stateless resources/list, the revision
	// having no ping), where supergateway, which serves no 2026-07-28
	// request, has no figures.
	LockStep        HTTPRow `json:"lock_step"`
	Pipelined       HTTPRow `json:"pipelined"`
	Modern          HTTPRow `json:"lock_step_2026"`
	ModernPipelined HTTPRow `json:"pipelined_2026"`
	// Levels are the recorded tools/call, lock-step, at each durability
	// level, in the lock-step rounds.
	Levels []HTTPLevel `json:"levels"`
	// Sessions are many sessions at once, each target on its own.
	Sessions []HTTPSessions `json:"sessions"`

	samples map[string][]time.Duration // lock-step, for the plot
}

// HTTPRow is one mode of the unrecorded round trip at one revision:
// straight to the echo child over pipes (direct), and over HTTP through
// the floor, aegis, supergateway and the TypeScript SDK v2's handler.
type HTTPRow struct {
	Mode         string `json:"mode"`
	Revision     string `json:"revision"`
	Window       int    `json:"window"` // requests in flight, pipelined
	Direct       Stats  `json:"direct"`
	Floor        Stats  `json:"floor"`
	Aegis        Stats  `json:"aegis"`
	Supergateway Stats  `json:"supergateway"`
	V2           Stats  `json:"ts_sdk_v2"`
	// Overheads are differences of medians with Direct, ns (NaN for a
	// target not run).
	FloorOverhead        Num `json:"floor_overhead_ns"`
	AegisOverhead        Num `json:"aegis_overhead_ns"`
	SupergatewayOverhead Num `json:"supergateway_overhead_ns"`
	V2Overhead           Num `json:"ts_sdk_v2_overhead_ns"`
	// Ratio is AegisOverhead ÷ FloorOverhead: ≤ 1.1.
	Ratio Ratio `json:"ratio"`
	// VsSupergateway and VsV2 are AegisOverhead ÷ each one's overhead.
	VsSupergateway Ratio `json:"vs_supergateway"`
	VsV2           Ratio `json:"vs_ts_sdk_v2"`
	// CPU time per message of each serving process (not its children), ns.
	FloorCPU        Num `json:"floor_cpu_ns"`
	AegisCPU        Num `json:"aegis_cpu_ns"`
	SupergatewayCPU Num `json:"supergateway_cpu_ns"`
	V2CPU           Num `json:"ts_sdk_v2_cpu_ns"`
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
// trip lock-step and pipelined at both revisions, the recorded call at
// each level, against the floor, supergateway and the TypeScript SDK
// v2's handler in the same rounds; then many sessions.
func (h *harness) httpSection(ctx context.Context) error {
	sg, sgVersion, err := h.supergateway()
	if err != nil {
		return err
	}
	v2, v2Version, err := h.v2Front()
	if err != nil {
		return err
	}
	r := &HTTPResult{Supergateway: sgVersion, V2: v2Version, samples: map[string][]time.Duration{}}
	if err := h.httpRoundTrips(ctx, r, sg, v2); err != nil {
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
	return []string{node, entry, "--outputTransport", "streamableHttp", "--stateful", "--logLevel", "none", "--port"}, npmVersion(filepath.Dir(filepath.Dir(entry))), nil
}

// v2Front is the command line that starts the TypeScript SDK v2's
// Streamable HTTP handler in front of a stdio child (node/v2front.mjs),
// to which the port and the child's argv are appended, and the version
// of @modelcontextprotocol/server it runs.
func (h *harness) v2Front() (argv []string, version string, err error) {
	script, err := h.nodeScript("v2front.mjs")
	if err != nil {
		return nil, "", err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, "", fmt.Errorf("node is not on PATH: the http section runs the TypeScript SDK v2 on Node.js 20 or later")
	}
	return []string{node, script}, npmVersion(filepath.Join(h.root, "interop", "node_modules", "@modelcontextprotocol", "server")), nil
}

// npmVersion is the version in an installed npm package's package.json,
// "" when unreadable.
func npmVersion(dir string) string {
	var pkg struct{ Version string }
	if data, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		json.Unmarshal(data, &pkg)
	}
	return pkg.Version
}

// httpStarter starts the HTTP targets of a run.
type httpStarter struct {
	h      *harness
	sg, v2 []string
}

// start starts one target in front of an echo child: "floor", "aegis"
// (wrap --listen with the default bearer token, at durability d, writing
// audit), "supergateway" (stateful, a child per session) or "v2" (the
// TypeScript SDK v2's handler: a child per session, one for every
// stateless request).
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
	case "v2":
		argv := append(append(append([]string{}, s.v2...), fmt.Sprint(port)), echo...)
		return startHTTPTarget(ctx, "ts-sdk-v2", argv, port, "", true, true)
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

// httpKind is one serving process of the round trips: its target kind,
// the durability level of an aegis, and whether its clients speak
// revision 2026-07-28.
type httpKind struct {
	name, kind, level string
	modern            bool
}

// httpUnrecorded are the processes the unrecorded round trips go to, in
// the order of the rows' columns: floor, aegis, supergateway, v2 at
// 2025-11-25, then floor, aegis, v2 at 2026-07-28. Each has a process of
// its own, so that each process's CPU time belongs to one kind of
// request.
var httpUnrecorded = []httpKind{
	{"floor", "floor", "", false}, {"aegis", "aegis", "strict", false}, {"supergateway", "supergateway", "", false}, {"v2", "v2", "", false},
	{"floor 2026", "floor", "", true}, {"aegis 2026", "aegis", "strict", true}, {"v2 2026", "v2", "", true},
}

// httpRoundTrips runs the lock-step and pipelined rounds: every target
// alive together, interleaved in blocks, the order rotating.
func (h *harness) httpRoundTrips(ctx context.Context, r *HTTPResult, sg, v2 []string) error {
	st := httpStarter{h, sg, v2}
	direct, err := h.startTarget(ctx, "direct", Pipes, "", "", echoOpts{})
	if err != nil {
		return err
	}
	defer direct.stop()
	kinds := append([]httpKind{}, httpUnrecorded...)
	unrec := len(kinds)
	for _, lv := range levels {
		kinds = append(kinds, httpKind{lv.name, "aegis", lv.name, false})
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
			audits[i] = h.newAudit("http-" + strings.ReplaceAll(k.name, " ", "-"))
		}
		t, err := st.start(ctx, k.kind, k.level, audits[i])
		if err != nil {
			return err
		}
		targets[i] = t
		if workers[i], err = t.worker(k.modern); err != nil {
			return err
		}
		for range h.it.warm(200) {
			if _, err := workers[i].roundTrip(unrecordedReq(k.modern)); err != nil {
				return err
			}
		}
	}
	if err := direct.warm(pingReq, h.it.warm(200)); err != nil {
		return err
	}

	// Lock-step: slot 0 is the direct ping, slot 1 the direct 2026-07-28
	// request, slot i+2 target i.
	n := max(10, h.it.rtLock/4)
	lock := make([]samples, len(kinds)+2)
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
				case i < 2:
					d, _, err = direct.roundTrip(unrecordedReq(i == 1).line)
				case i-2 >= unrec:
					d, err = workers[i-2].roundTrip(httpCall)
				default:
					d, err = workers[i-2].roundTrip(unrecordedReq(kinds[i-2].modern))
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
		cpu[i] = Num(m.per(lock[i+2].n()))
	}
	var none samples
	r.LockStep = httpRow("lock-step", "2025-11-25", 1, lock[0], lock[2:6], cpu[0:4])
	r.Modern = httpRow("lock-step", modernRevision, 1, lock[1], []samples{lock[6], lock[7], none, lock[8]}, []Num{cpu[4], cpu[5], Num(math.NaN()), cpu[6]})
	r.samples["direct (stdio), ping"] = lock[0].d
	for i, name := range []string{"HTTP floor, ping", "aegis, ping (unrecorded)", "supergateway, ping", "TS SDK v2, ping"} {
		r.samples[name] = lock[i+2].d
	}
	for _, row := range []HTTPRow{r.LockStep, r.Modern} {
		h.logf("   lock-step %s: direct %s, floor %s, aegis %s, supergateway %s, TS SDK v2 %s; overhead ratio %.2f (≤ 1.1), ÷ supergateway's %.2f, ÷ v2's %.2f; CPU/msg floor %s, aegis %s, supergateway %s, v2 %s",
			row.Revision, us(row.Direct.Median), us(row.Floor.Median), us(row.Aegis.Median), us(row.Supergateway.Median), us(row.V2.Median),
			row.Ratio, row.VsSupergateway, row.VsV2, us(float64(row.FloorCPU)), us(float64(row.AegisCPU)), us(float64(row.SupergatewayCPU)), us(float64(row.V2CPU)))
	}

	// Pipelined: the unrecorded targets, window requests in flight.
	window := h.it.rtWindow
	rounds := h.it.httpRounds
	per := max(h.it.rtPipe/20, 2*window) // messages per round and target
	pool := make([][]*httpWorker, unrec)
	for i := range pool {
		pool[i] = make([]*httpWorker, window)
		for j := range pool[i] {
			// One session, as one client pipelining its requests.
			pool[i][j] = targets[i].join(workers[i].sid, kinds[i].modern)
		}
	}
	pipe := make([]samples, unrec+2)
	meters = meters[:unrec]
	for i := range meters {
		meters[i] = meter(targets[i].p)
	}
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		for k := range pipe {
			i := (round + k) % len(pipe)
			var d time.Duration
			var err error
			if i < 2 {
				d, err = direct.pipeline(unrecordedReq(i == 1).line, per, window, nil)
			} else {
				d, err = targets[i-2].pipeline(pool[i-2], unrecordedReq(kinds[i-2].modern), per)
			}
			if err != nil {
				return err
			}
			pipe[i].add(d / time.Duration(per))
		}
	}
	pcpu := make([]Num, unrec)
	for i, m := range meters {
		pcpu[i] = Num(m.per(pipe[i+2].n() * per))
	}
	r.Pipelined = httpRow("pipelined", "2025-11-25", window, pipe[0], pipe[2:6], pcpu[0:4])
	r.ModernPipelined = httpRow("pipelined", modernRevision, window, pipe[1], []samples{pipe[6], pipe[7], none, pipe[8]}, []Num{pcpu[4], pcpu[5], Num(math.NaN()), pcpu[6]})
	for _, row := range []HTTPRow{r.Pipelined, r.ModernPipelined} {
		h.logf("   pipelined ×%d %s: direct %s/msg, floor %s, aegis %s, supergateway %s, TS SDK v2 %s; overhead ratio %.2f (≤ 1.1), ÷ supergateway's %.2f, ÷ v2's %.2f",
			window, row.Revision, us(row.Direct.Median), us(row.Floor.Median), us(row.Aegis.Median), us(row.Supergateway.Median), us(row.V2.Median),
			row.Ratio, row.VsSupergateway, row.VsV2)
	}

	var errs []error
	for i, t := range targets {
		errs = append(errs, t.stopChecked(kinds[i].kind == "aegis"))
	}
	targets = nil
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, k := range kinds[unrec:] {
		i += unrec
		c, err := h.verifyLog(ctx, audits[i])
		if err != nil {
			return err
		}
		calls := lock[i+2].n()
		if c.Intents != calls || c.Outcomes != calls {
			return fmt.Errorf("http %s log holds %d intents, %d outcomes; want %d of each", k.name, c.Intents, c.Outcomes, calls)
		}
		s := lock[i+2].stats()
		lv := HTTPLevel{Level: k.name, Call: s, Overhead: s.Median - r.LockStep.Direct.Median, OverUnrecorded: s.Median - r.LockStep.Aegis.Median, CPU: cpu[i], Log: c}
		lv.Ratio = ratio(lv.Overhead, float64(r.LockStep.FloorOverhead))
		r.Levels = append(r.Levels, lv)
		r.samples["aegis, tools/call at "+k.name] = lock[i+2].d
		h.logf("   tools/call at %-8s median %s p99 %s; overhead ÷ floor's %.2f; over unrecorded %s; CPU/call %s",
			k.name, us(s.Median), us(s.P99), lv.Ratio, us(lv.OverUnrecorded), us(float64(lv.CPU)))
	}
	for i, k := range kinds[:unrec] {
		if k.kind == "aegis" {
			if _, err := h.verifyLog(ctx, audits[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// httpRow makes a row from the direct samples and the floor's, aegis's,
// supergateway's and v2's (in that order) with each one's CPU per
// message; a target without samples has NaN figures.
func httpRow(mode, revision string, window int, direct samples, fronts []samples, cpu []Num) HTTPRow {
	r := HTTPRow{Mode: mode, Revision: revision, Window: window, Direct: direct.stats(),
		Floor: fronts[0].stats(), Aegis: fronts[1].stats(), Supergateway: fronts[2].stats(), V2: fronts[3].stats(),
		FloorCPU: cpu[0], AegisCPU: cpu[1], SupergatewayCPU: cpu[2], V2CPU: cpu[3]}
	over := func(s Stats) float64 {
		if s.N == 0 {
			return math.NaN()
		}
		return s.Median - r.Direct.Median
	}
	r.FloorOverhead, r.AegisOverhead, r.SupergatewayOverhead, r.V2Overhead = Num(over(r.Floor)), Num(over(r.Aegis)), Num(over(r.Supergateway)), Num(over(r.V2))
	r.Ratio = ratio(float64(r.AegisOverhead), float64(r.FloorOverhead))
	r.VsSupergateway = ratio(float64(r.AegisOverhead), float64(r.SupergatewayOverhead))
	r.VsV2 = ratio(float64(r.AegisOverhead), float64(r.V2Overhead))
	return r
}

// httpManySessions runs h.httpSessions() sessions at once through each
// front, one front at a time so that each one's memory is its own: the
// floor (its one child serving every client; no sessions to count),
// aegis at none and at strict, and supergateway.
func (h *harness) httpManySessions(ctx context.Context, r *HTTPResult, sg []string) error {
	st := httpStarter{h: h, sg: sg}
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
			if ws[i], errs[i] = t.worker(false); errs[i] == nil {
				_, errs[i] = ws[i].roundTrip(httpCall)
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
				d, err := w.roundTrip(httpCall)
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
