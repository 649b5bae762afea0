package journal

// Benchmarks of the journal against its floors (BENCHMARKS.md, "Method and targets"):
// every figure is reported beside a floor measured in the same benchmark
// function, on the same filesystem (b.TempDir), as a ratio.
//
//	go test -run XXX -bench 'FdatasyncFloor|Append|Concurrent|Verify|Sign' -count 3 ./journal/
//
// The floor is the raw cost of making a small append durable: write(2) of
// a ~300-byte line to an O_APPEND file, then fdatasync(2), with no Go
// wrapper in between.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aegisrelay/aegis/internal/interleave"
	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// floorLine is the floor's payload: a 300-byte line, about the size of an
// intent record with its signature.
var floorLine = append(bytes.Repeat([]byte("x"), 299), '\n')

// floorFile is an O_APPEND file for the raw write+fdatasync floor.
type floorFile struct{ fd int }

func openFloor(tb testing.TB, dir string) *floorFile {
	tb.Helper()
	f, err := os.CreateTemp(dir, "floor-*.log")
	if err != nil {
		tb.Fatal(err)
	}
	name := f.Name()
	f.Close()
	fd, err := unix.Open(name, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	return &floorFile{fd: fd}
}

// op is one floor operation: one small append made durable.
func (f *floorFile) op(tb testing.TB) {
	if _, err := unix.Write(f.fd, floorLine); err != nil {
		tb.Fatal(err)
	}
	if err := floorSync(f.fd); err != nil {
		tb.Fatal(err)
	}
}

// measureFloor times n floor operations (after a short warm-up) on a fresh
// file in dir and returns their mean in ns.
func measureFloor(tb testing.TB, dir string, n int) float64 {
	tb.Helper()
	f := openFloor(tb, dir)
	for range 5 {
		f.op(tb)
	}
	start := time.Now()
	for range n {
		f.op(tb)
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkFdatasyncFloor is the floor on its own: one ~300-byte append
// made durable by fdatasync, per op.
func BenchmarkFdatasyncFloor(b *testing.B) {
	f := openFloor(b, b.TempDir())
	b.ReportAllocs()
	b.SetBytes(int64(len(floorLine)))
	for b.Loop() {
		f.op(b)
	}
}

// callRecords builds the records of one recorded tools/call as the relay
// does (journaltest.Calls), and records them (call).
type callRecords struct{ *journaltest.Calls }

func newCallRecords() *callRecords { return &callRecords{journaltest.NewCalls()} }

// call records one tools/call as the relay does: intent, Wait before the
// request moves; outcome, Wait before the response moves.
func (c *callRecords) call(j *Journal, n int) error {
	seq, err := j.AppendHint(c.Intent(n), Hint{Awaits: true})
	if err == nil {
		err = j.Wait(seq, BeforeRequest)
	}
	if err == nil {
		seq, err = j.AppendHint(c.Outcome(seq), Hint{Answers: true, Answered: seq})
	}
	if err == nil {
		err = j.Wait(seq, BeforeResponse)
	}
	return err
}

// openBench opens a journal in dir with a session_start already written
// and synced, so that the timed loop sees only calls.
func openBench(tb testing.TB, dir string, dur string, fs vfs.FS) (*Journal, string) {
	tb.Helper()
	path := filepath.Join(dir, "audit.jsonl")
	j, err := Open(path, Options{Durability: mustDurability(tb, dur), Key: benchKey, FS: fs})
	if err != nil {
		tb.Fatal(err)
	}
	seq, err := j.Append(&record.SessionStart{Aegis: "bench", Argv: []string{"server"}, Durability: dur, PolicySet: record.PassThroughSet})
	if err == nil {
		err = j.Wait(seq, BeforeResponse)
	}
	if err == nil && j.Durability().Level == None {
		err = j.f.Sync() // start every level from a clean page cache state
	}
	if err != nil {
		tb.Fatal(err)
	}
	return j, path
}

var benchKey = func() ed25519.PrivateKey {
	k, err := record.GenerateKey()
	if err != nil {
		panic(err)
	}
	return k
}()

// contentSize returns the bytes of records in j's file (not its
// pre-zeroed space).
func contentSize(tb testing.TB, j *Journal) int64 {
	tb.Helper()
	n, err := j.f.Size()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func fileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// BenchmarkAppend records one tools/call per op (intent + Wait before the
// request, outcome + Wait before the response: two records) with one
// appender, at every level, beside the raw fdatasync floor.
//
// The baselines are timed in the same sub-benchmark, interleaved with its
// loop (8 ops each after every 16 calls, timer stopped) so that drift of
// the shared machine is shared:
//
//	strict, reply    floor-ns: the fdatasync floor, on a file in the same directory;
//	                 ratio = ns/op ÷ (syncs the level needs × floor-ns).
//	                 targets: strict ≤ 1.10 × 2 floors, reply ≤ 1.10 × 1 floor.
//	every level      sign-ns: ed25519.Sign of a 300-byte record; rest-ns = ns/op −
//	                 syncs × floor-ns − 2 × sign-ns: what a call costs beyond its
//	                 syncs and its two signatures (one appender: every record
//	                 ends a commit group, so every record is signed).
func BenchmarkAppend(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		f := openFloor(b, b.TempDir())
		b.ReportAllocs()
		b.SetBytes(int64(len(floorLine)))
		for b.Loop() {
			f.op(b)
		}
	})
	for _, lv := range []struct {
		name  string
		syncs int // fdatasyncs per call the level needs
	}{
		{"strict", 2},
		{"reply", 1},
		{"interval", 0},
		{"none", 0},
	} {
		b.Run(lv.name, func(b *testing.B) {
			dir := b.TempDir()
			il := &interleave.Sampler{Every: 16, Per: 8}
			kf := -1
			if lv.syncs > 0 {
				ff := openFloor(b, dir)
				kf = il.Add(func() { ff.op(b) })
			}
			ks := il.Add(func() { ed25519.Sign(benchKey, floorLine[:299]) })
			il.Sample(20)
			j, _ := openBench(b, dir, lv.name, nil)
			loopCalls(b, j, il)
			nsop, sign := interleave.NsPerOp(b), il.Mean(ks)
			var floor float64
			if kf >= 0 {
				floor = il.Mean(kf)
				b.ReportMetric(floor, "floor-ns")
				b.ReportMetric(nsop/(float64(lv.syncs)*floor), "ratio")
			}
			b.ReportMetric(sign, "sign-ns")
			b.ReportMetric(nsop-float64(lv.syncs)*floor-2*sign, "rest-ns")
		})
	}
}

// countFS is vfs.OS counting the writes and syncs of the files opened
// as a log is (the log, the checkpoint history).
type countFS struct {
	vfs.FS
	writes, syncs atomic.Int64
}

type countFile struct {
	vfs.File
	fs *countFS
}

func (fs *countFS) OpenLocked(path string, mode vfs.OpenMode) (vfs.File, bool, error) {
	f, created, err := fs.FS.OpenLocked(path, mode)
	if err != nil || mode != vfs.OpenOrCreate {
		return f, created, err
	}
	return &countFile{File: f, fs: fs}, created, nil
}

func (f *countFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.writes.Add(1)
	return f.File.WriteAt(p, off)
}

func (f *countFile) Sync() error {
	f.fs.syncs.Add(1)
	return f.File.Sync()
}

// percentile returns the p-th percentile (0..1) of sorted durations, in µs.
func percentile(sorted []int64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return float64(sorted[i]) / 1e3
}

// BenchmarkConcurrent runs N goroutines at strict, each appending a record
// and waiting for it (intents before the request, outcomes before the
// response, alternately) in a loop; one op is one record, so N goroutines
// are N calls in flight. records/sync is the group commit's batching;
// calls/sync is records/sync ÷ 2 (the target: ≥ 16, the most possible, with 32 calls in flight);
// p50-us and p99-us are the latency of one Append+Wait; floor-ns is the raw
// fdatasync floor timed in the same sub-benchmark (100 syncs before the
// loop and 100 after, mean).
func BenchmarkConcurrent(b *testing.B) {
	for _, g := range []int{1, 8, 32, 128} {
		b.Run(strconv.Itoa(g), func(b *testing.B) {
			dir := b.TempDir()
			floor := measureFloor(b, dir, 100)
			fs := &countFS{FS: vfs.OS}
			j, _ := openBench(b, dir, "strict", fs)
			size0 := contentSize(b, j)
			lat := make([][]int64, g)
			var next atomic.Int64
			var wg sync.WaitGroup
			ready := make(chan struct{})
			for w := range g {
				lat[w] = make([]int64, 0, b.N/g+1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := newCallRecords()
					var intent uint64
					<-ready
					for k := 0; ; k++ {
						if next.Add(1) > int64(b.N) {
							return
						}
						var body record.Body
						bar, hint := BeforeRequest, Hint{Awaits: true}
						if k%2 == 0 {
							body = c.Intent(w<<32 | k)
						} else {
							body, bar, hint = c.Outcome(intent), BeforeResponse, Hint{Answers: true, Answered: intent}
						}
						t0 := time.Now()
						seq, err := j.AppendHint(body, hint)
						if err == nil {
							err = j.Wait(seq, bar)
						}
						lat[w] = append(lat[w], time.Since(t0).Nanoseconds())
						if err != nil {
							b.Error(err)
							return
						}
						intent = seq
					}
				}()
			}
			w0, s0 := fs.writes.Load(), fs.syncs.Load()
			b.ReportAllocs()
			b.ResetTimer()
			close(ready)
			wg.Wait()
			b.StopTimer()
			writes, syncs := fs.writes.Load()-w0, fs.syncs.Load()-s0
			j.mu.Lock()
			timeouts := j.lingerTimeouts
			j.mu.Unlock()
			b.ReportMetric(float64(timeouts)/float64(max(syncs, 1)), "linger-timeouts/sync")
			b.SetBytes((contentSize(b, j) - size0) / int64(b.N))
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
			floor = (floor + measureFloor(b, dir, 100)) / 2
			all := slices.Concat(lat...)
			slices.Sort(all)
			b.ReportMetric(float64(b.N)/float64(max(syncs, 1)), "records/sync")
			// The target counts calls: a call is two records (intent, outcome).
			b.ReportMetric(float64(b.N)/2/float64(max(syncs, 1)), "calls/sync")
			b.ReportMetric(float64(b.N)/float64(max(writes, 1)), "records/write")
			b.ReportMetric(percentile(all, 0.50), "p50-us")
			b.ReportMetric(percentile(all, 0.99), "p99-us")
			b.ReportMetric(floor, "floor-ns")
		})
	}
}

// buildLog writes one complete session of about records records through
// the API and returns the file's bytes: appenders goroutines each record
// calls (intent + outcome) at level dur.
func buildLog(tb testing.TB, dur string, appenders, records int) []byte {
	tb.Helper()
	dir := tb.TempDir()
	j, path := openBench(tb, dir, dur, nil)
	calls := (records - 2) / 2
	var wg sync.WaitGroup
	for w := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newCallRecords()
			for k := w; k < calls; k += appenders {
				if err := c.call(j, k); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	seq, err := j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: uint64(calls), Outcomes: uint64(calls)}})
	if err == nil {
		err = j.Wait(seq, BeforeResponse)
	}
	if err == nil {
		err = j.Close()
	}
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkVerify verifies a ~20k-record log from memory, beside SHA-256
// of the same bytes: Go's crypto/sha256, and the sha256sum binary on a file
// holding them (the target's baseline; its figure includes starting the
// process). Two logs: one written at none by 32 concurrent appenders
// (commit groups as under load, a signature per group), one at strict by
// one appender (a signature on every record: the worst case for verify).
// ratio-sha256 and ratio-sha256sum are verify's throughput ÷ the
// baseline's, the baselines timed in the same sub-benchmark, interleaved
// with its loop (the target: ≥ 0.5 × sha256sum).
func BenchmarkVerify(b *testing.B) {
	logs := []struct {
		name      string
		dur       string
		appenders int
	}{
		{"none-32", "none", 32},
		{"strict-1", "strict", 1},
	}
	for _, l := range logs {
		data := buildLog(b, l.dur, l.appenders, 20000)
		sigs := bytes.Count(data, []byte(`,"sig":"`))
		lines := bytes.Count(data, []byte("\n"))
		rep, err := verify.Stream(bytes.NewReader(data), verify.Options{})
		if err != nil || rep.Status != verify.Valid {
			b.Fatalf("Verify(%s) = %v, %v %v; want valid", l.name, rep.Status, err, rep.Problems)
		}
		b.Run("sha256/"+l.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				sha256.Sum256(data)
			}
		})
		b.Run("sha256sum/"+l.name, func(b *testing.B) {
			bin, err := exec.LookPath("sha256sum")
			if err != nil {
				b.Skip("no sha256sum")
			}
			file := filepath.Join(b.TempDir(), "audit.jsonl")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := exec.Command(bin, file).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("verify/"+l.name, func(b *testing.B) {
			// The baselines, interleaved so that the ratios are of one run.
			il := &interleave.Sampler{Every: 1, Per: 1}
			kh := il.Add(func() { sha256.Sum256(data) })
			ksum := -1
			if bin, err := exec.LookPath("sha256sum"); err == nil {
				file := filepath.Join(b.TempDir(), "audit.jsonl")
				if err := os.WriteFile(file, data, 0o600); err != nil {
					b.Fatal(err)
				}
				ksum = il.Add(func() {
					if err := exec.Command(bin, file).Run(); err != nil {
						b.Fatal(err)
					}
				})
			}
			il.Sample(2)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				rep, err := verify.Stream(bytes.NewReader(data), verify.Options{})
				if err != nil || rep.Status != verify.Valid {
					b.Fatalf("Verify = %v, %v; want valid", rep.Status, err)
				}
				il.Tick(b)
			}
			nsop := interleave.NsPerOp(b)
			b.ReportMetric(il.Mean(kh)/nsop, "ratio-sha256")
			if ksum >= 0 {
				b.ReportMetric(il.Mean(ksum)/nsop, "ratio-sha256sum")
			}
			b.ReportMetric(float64(lines), "records")
			b.ReportMetric(float64(sigs), "sigs")
		})
	}
}

// BenchmarkSign is the cost of what the journal does per commit group
// (a signature of the last record) and per record (sha256 for the chain),
// on a 300-byte record, beside signature verification (verify's cost per
// signature) and the fdatasync floor each strict group also pays.
// ed25519.Sign is what a signature costs on the leader's path (sign.go).
func BenchmarkSign(b *testing.B) {
	rec := floorLine[:299]
	b.Run("floor", func(b *testing.B) {
		f := openFloor(b, b.TempDir())
		b.ReportAllocs()
		b.SetBytes(int64(len(floorLine)))
		for b.Loop() {
			f.op(b)
		}
	})
	b.Run("ed25519.Sign", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			ed25519.Sign(benchKey, rec)
		}
	})
	b.Run("ed25519.Verify", func(b *testing.B) {
		sig := ed25519.Sign(benchKey, rec)
		pub := benchKey.Public().(ed25519.PublicKey)
		b.ReportAllocs()
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if !ed25519.Verify(pub, rec, sig) {
				b.Fatal("signature does not verify")
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			sha256.Sum256(rec)
		}
	})
}

// loopCalls makes one lock-step call (intent, then outcome) per op on j,
// il's floors interleaved with the loop, then closes j and reports the
// log's bytes per op.
func loopCalls(b *testing.B, j *Journal, il *interleave.Sampler) {
	c := newCallRecords()
	size0 := contentSize(b, j)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := c.call(j, n); err != nil {
			b.Fatal(err)
		}
		n++
		il.Tick(b)
	}
	b.SetBytes((contentSize(b, j) - size0) / int64(b.N))
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
}
