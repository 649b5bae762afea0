package bench

import (
	"context"
	"fmt"
	"time"
)

// levels are the durability levels, strictest first, with the
// fdatasyncs a lock-step call waits for on its path: strict syncs the
// intent before the request reaches the child and the outcome before the
// response reaches the client; reply syncs once, before the response;
// interval and none never wait (interval syncs in the background every
// 50ms).
var levels = []struct {
	name  string
	syncs int
}{{"strict", 2}, {"reply", 1}, {"interval", 0}, {"none", 0}}

// DurabilityResult is the recorded tools/call at every durability level,
// lock-step over pipes, beside its floors from the same rounds.
type DurabilityResult struct {
	Unrecorded Stats `json:"unrecorded"` // a ping through a wrap process of its own
	Fsync      Stats `json:"fdatasync"`  // the raw floor, in the same rounds
	// Overwrite is the floor of the journal's own means: fdatasync after
	// a write over pre-zeroed space (FsyncResult.Overwrite).
	Overwrite Stats `json:"fdatasync_overwrite"`
	// AfterHop is the same floor taken the way the journal takes its
	// syncs, each after a round trip between processes rather than
	// after another sync (syncFile.overwriteAfterHops): the floor the
	// strict and reply rows are judged by.
	AfterHop Stats `json:"fdatasync_overwrite_after_hop"`
	// HopAfterSync and HopAfterHop are a lock-step round trip to the
	// echo server alone right after such a sync and right after another
	// round trip: their difference is what a sync's idle costs the hop
	// after it, in processes that are not aegis.
	HopAfterSync Stats `json:"hop_after_sync"`
	HopAfterHop  Stats `json:"hop_after_hop"`
	Write        Stats `json:"write"`     // a write of the same append, no sync
	SignHash     Stats `json:"sign_hash"` // ed25519.Sign + sha256 of one record
	// ReplyShape is reply's sync without aegis: an append, a round trip
	// to the echo server (not counted), another append, fdatasync.
	ReplyShape Stats `json:"reply_shape"`
	// Needed is what recording a call needs at none, in ns: two records,
	// each signed, hashed and written.
	Needed float64 `json:"needed_ns"`
	// UnrecordedCPU is the wrap process's CPU time per ping, ns.
	UnrecordedCPU Num           `json:"unrecorded_cpu_ns"`
	Levels        []LevelResult `json:"levels"`
}

// LevelResult is one durability level.
type LevelResult struct {
	Level string `json:"level"`
	Syncs int    `json:"syncs"` // fdatasyncs on the call's path
	Call  Stats  `json:"call"`
	// Ratio is Call.Median ÷ (Syncs × fdatasync); for Syncs = 0, ÷ the
	// unrecorded round trip.
	Ratio    Ratio `json:"ratio"`
	P99Ratio Ratio `json:"p99_ratio"` // the same with both p99s
	// VsOneSync is Call.Median ÷ one fdatasync, for every level.
	VsOneSync Ratio `json:"vs_one_fdatasync"`
	// OverUnrecorded is Call.Median − Unrecorded.Median, ns: what recording
	// costs a call, beyond relaying it.
	OverUnrecorded float64 `json:"over_unrecorded_ns"`
	// Recording is OverUnrecorded ÷ (Syncs × fdatasync), for Syncs > 0:
	// the cost of recording against its physical floor (the strict and
	// reply rows of BENCHMARKS.md's targets).
	Recording Ratio `json:"recording_ratio"`
	// VsOverwrite is OverUnrecorded ÷ (Syncs × Overwrite): recording
	// against the floor of the means the journal chose, which no target
	// judges and which shows what aegis adds to it.
	VsOverwrite Ratio `json:"recording_vs_overwrite"`
	// VsAfterHop is OverUnrecorded ÷ (Syncs × AfterHop): the strict and
	// reply rows' figure (issue 27: ≤ 1.15×).
	VsAfterHop Ratio `json:"recording_vs_overwrite_after_hop"`
	// Rest is what is left of OverUnrecorded after the syncs and what the
	// two records need (Needed), ns: the cost no floor explains.
	Rest float64 `json:"rest_ns"`
	// CPU is the wrap process's CPU time per call, ns (its child's not
	// counted); CPUOverUnrecorded subtracts a ping's.
	CPU               Num       `json:"cpu_ns"`
	CPUOverUnrecorded Num       `json:"cpu_over_unrecorded_ns"`
	Log               logCounts `json:"log"`
}

func (h *harness) durabilitySection(ctx context.Context) error {
	// One wrap per level, and one more for the unrecorded pings, so that
	// each process's CPU time belongs to one kind of op.
	procs := make([]*proc, len(levels)+2)
	audits := make([]string, len(levels))
	defer func() { stopAll(procs...) }()
	for i := range procs {
		target, name, audit := "wrap", "strict", h.newAudit("durability-unrecorded")
		if i < len(levels) {
			name = levels[i].name
			audits[i] = h.newAudit("durability-" + name)
			audit = audits[i]
		}
		if i == len(levels)+1 {
			target = "direct" // the echo server alone, for the reply shape
		}
		p, err := h.startTarget(ctx, target, Pipes, name, audit, echoOpts{})
		if err != nil {
			return err
		}
		procs[i] = p
		if err := p.warm(pingReq, h.it.warm(100)); err != nil {
			return err
		}
	}
	sf, err := openSyncFile(h.work)
	if err != nil {
		return err
	}
	defer sf.close()
	sh := newSignHasher()
	sh.op(1000)

	block := max(2, min(h.it.block, 10))
	calls := make([]samples, len(levels))
	var unrec, syncs, overwrites, afterHops, hopsAfterSync, hopsAfterHop, writes, signs, shapes samples
	meters := meterAll(procs)
	// One op kind per slot; the order rotates round by round.
	slots := len(levels) + 7
	for round := 0; calls[0].n() < h.it.durability && ctx.Err() == nil; round++ {
		for k := range slots {
			i := (round + k) % slots
			for range block {
				var d time.Duration
				var err error
				switch {
				case i < len(levels):
					d, _, err = procs[i].roundTrip(callReq)
					calls[i].add(d)
				case i == len(levels):
					d, _, err = procs[i].roundTrip(pingReq)
					unrec.add(d)
				case i == len(levels)+1:
					d, err = sf.sync()
					syncs.add(d)
				case i == len(levels)+2:
					d, err = sf.write()
					writes.add(d)
				case i == len(levels)+3:
					d, err = sf.replyShape(procs[len(levels)+1])
					shapes.add(d)
				case i == len(levels)+4:
					d, err = sf.overwrite()
					overwrites.add(d)
				case i == len(levels)+5:
					var two [2]time.Duration
					var hs, hh time.Duration
					two, hs, hh, err = sf.overwriteAfterHops(procs[len(levels)+1])
					afterHops.add(two[0])
					afterHops.add(two[1])
					hopsAfterSync.add(hs)
					hopsAfterHop.add(hh)
				default:
					signs.add(sh.op(20))
				}
				if err != nil {
					return err
				}
			}
		}
	}
	cpu := make([]Num, len(procs))
	for i, m := range meters[:len(levels)+1] {
		n := unrec.n()
		if i < len(levels) {
			n = calls[i].n()
		}
		cpu[i] = Num(m.per(n))
	}
	err = stopAll(procs...)
	procs = nil
	if err != nil {
		return err
	}

	r := &DurabilityResult{Unrecorded: unrec.stats(), Fsync: syncs.stats(), Overwrite: overwrites.stats(), AfterHop: afterHops.stats(), HopAfterSync: hopsAfterSync.stats(), HopAfterHop: hopsAfterHop.stats(), Write: writes.stats(), SignHash: signs.stats(), ReplyShape: shapes.stats(), UnrecordedCPU: cpu[len(levels)]}
	r.Needed = 2 * (r.SignHash.Median + r.Write.Median)
	fs := r.Fsync.Median
	for i, lv := range levels {
		c, err := h.verifyLog(ctx, audits[i])
		if err != nil {
			return err
		}
		if c.Intents != calls[i].n() || c.Outcomes != calls[i].n() {
			return fmt.Errorf("%s log holds %d intents, %d outcomes; want %d of each", lv.name, c.Intents, c.Outcomes, calls[i].n())
		}
		st := calls[i].stats()
		lr := LevelResult{Level: lv.name, Syncs: lv.syncs, Call: st, Log: c, CPU: cpu[i], CPUOverUnrecorded: cpu[i] - r.UnrecordedCPU}
		if lv.syncs > 0 {
			lr.Ratio = ratio(st.Median, float64(lv.syncs)*fs)
			lr.P99Ratio = ratio(st.P99, float64(lv.syncs)*r.Fsync.P99)
		} else {
			lr.Ratio = ratio(st.Median, r.Unrecorded.Median)
			lr.P99Ratio = ratio(st.P99, r.Unrecorded.P99)
		}
		lr.VsOneSync = ratio(st.Median, fs)
		lr.OverUnrecorded = st.Median - r.Unrecorded.Median
		if lv.syncs > 0 {
			lr.Recording = ratio(lr.OverUnrecorded, float64(lv.syncs)*fs)
			lr.VsOverwrite = ratio(lr.OverUnrecorded, float64(lv.syncs)*r.Overwrite.Median)
			lr.VsAfterHop = ratio(lr.OverUnrecorded, float64(lv.syncs)*r.AfterHop.Median)
		}
		lr.Rest = lr.OverUnrecorded - float64(lv.syncs)*fs - r.Needed
		r.Levels = append(r.Levels, lr)
		h.logf("   %-8s median %8.1f µs  p99 %8.1f µs  ratio %.2f  CPU/call %.1f µs", lv.name, st.Median/1e3, st.P99/1e3, lr.Ratio, lr.CPU/1e3)
	}
	h.logf("   unrecorded %.1f µs (CPU %.1f µs), fdatasync %.1f µs (over pre-zeroed space %.1f µs, each after a hop %.1f µs), write %.1f µs, sign+hash %.1f µs",
		r.Unrecorded.Median/1e3, r.UnrecordedCPU/1e3, fs/1e3, r.Overwrite.Median/1e3, r.AfterHop.Median/1e3, r.Write.Median/1e3, r.SignHash.Median/1e3)
	h.res.Durability = r
	h.res.durSamples = map[string][]time.Duration{"unrecorded": unrec.d, "fdatasync": syncs.d}
	for i, lv := range levels {
		h.res.durSamples[lv.name] = calls[i].d
	}
	return nil
}
