package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// BenchmarkVerify verifies two logs of 100,002 records, written by the
// journal's writer at none, from memory, beside SHA-256 of the same
// bytes — Go's crypto/sha256 in this process, and the sha256sum binary
// on a file holding them (the target's baseline; its figure includes
// starting the process) — timed in the same sub-benchmark, one of each
// after every verify (timer stopped), so that the ratios are of one run
// on one machine state:
//
//	inflight-64  64 calls in flight (a signature per commit group of
//	             64 intents or 64 outcomes)
//	lockstep     one call at a time (every record its own commit
//	             group, so signed)
//
// ratio-sha256sum and ratio-sha256 are verify's throughput ÷ the
// baseline's by wall time; cpu-ratio-sha256sum by CPU time (user +
// system, every thread: verify's workers count against it), the one the
// target (≥ 0.5× for both logs) is judged by. Verify here runs in a warm
// process; aegis-bench's verify section times the command, whose first
// touches of memory count too.
//
//	go test -run XXX -bench Verify -benchtime 10x ./journal/verify/
func BenchmarkVerify(b *testing.B) {
	key := testKey(b)
	pub := key.Public().(ed25519.PublicKey)
	logs := []struct {
		name     string
		inFlight int
	}{
		{"inflight-64", 64},
		{"lockstep", 1},
	}
	const calls = 50000 // + session_start and session_end: 100,002 records
	for _, l := range logs {
		data := buildLog(b, key, l.inFlight, calls)
		sigs := bytes.Count(data, []byte(record.SigField))
		lines := bytes.Count(data, []byte("\n"))
		file := filepath.Join(b.TempDir(), "audit.jsonl")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			b.Fatal(err)
		}
		sum, sumErr := exec.LookPath("sha256sum")
		b.Run(l.name, func(b *testing.B) {
			var shaWall, sumWall, sumCPU, verifyCPU time.Duration
			var n int
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				c0 := cpuSelf()
				rep, err := Stream(bytes.NewReader(data), Options{Key: pub})
				verifyCPU += cpuSelf() - c0
				if err != nil || rep.Status != Valid {
					b.Fatalf("Verify = %v, %v %v; want valid", rep.Status, err, rep.Problems)
				}
				b.StopTimer()
				t0 := time.Now()
				sha256.Sum256(data)
				shaWall += time.Since(t0)
				if sumErr == nil {
					cmd := exec.Command(sum, file)
					t0 = time.Now()
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
					sumWall += time.Since(t0)
					sumCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}
				n++
				b.StartTimer()
			}
			per := float64(b.Elapsed()) / float64(b.N)
			b.ReportMetric(float64(shaWall)/float64(n)/per, "ratio-sha256")
			if sumErr == nil {
				b.ReportMetric(float64(sumWall)/float64(n)/per, "ratio-sha256sum")
				b.ReportMetric(float64(sumCPU)/float64(verifyCPU), "cpu-ratio-sha256sum")
			}
			b.ReportMetric(float64(lines), "records")
			b.ReportMetric(float64(sigs), "sigs")
		})
	}
}

// cpuSelf is the CPU time (user + system) this process has used.
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// buildLog writes one session of calls tools/calls through the journal
// at none, inFlight at a time as a relay records them when a client sends
// that many requests in one write: their intents, one Wait before the
// requests move, their outcomes, one Wait before the responses move. One
// in flight is a sequential client: every record its own commit group.
// It returns the file's bytes.
func buildLog(tb testing.TB, key ed25519.PrivateKey, inFlight, calls int) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "audit.jsonl")
	j, err := journal.Open(path, journal.Options{Durability: mustDurability(tb, "none"), Key: key})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := j.Append(&record.SessionStart{Aegis: "bench", Argv: []string{"server"}, Durability: "none", PolicySet: record.PassThroughSet}); err != nil {
		tb.Fatal(err)
	}
	c := journaltest.NewCalls()
	intents := make([]uint64, inFlight)
	for base := 0; base < calls && err == nil; base += inFlight {
		n := min(inFlight, calls-base)
		var seq uint64
		for i := 0; i < n && err == nil; i++ {
			intents[i], err = j.Append(c.Intent(base + i))
		}
		if err == nil {
			err = j.Wait(intents[n-1], journal.BeforeRequest)
		}
		for i := 0; i < n && err == nil; i++ {
			c.Intent(base + i) // the call the outcome names
			seq, err = j.Append(c.Outcome(intents[i]))
		}
		if err == nil {
			err = j.Wait(seq, journal.BeforeResponse)
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	seq, err := j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: uint64(calls), Outcomes: uint64(calls)}})
	if err == nil {
		err = j.Wait(seq, journal.BeforeResponse)
	}
	if cerr := j.Close(); err == nil {
		err = cerr
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
