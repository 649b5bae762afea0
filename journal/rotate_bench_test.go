package journal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/interleave"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// BenchmarkVerifySet verifies a rotated, compressed log of 200,000 records
// (1 MiB segments, written at none by 32 appenders), beside SHA-256 of the
// same uncompressed bytes. MB/s is of the uncompressed log, on every core
// (GOMAXPROCS). ratio-sha256 is verify's throughput ÷ crypto/sha256's.
//
//	go test -run XXX -bench VerifySet -benchtime 3x ./journal/
func BenchmarkVerifySet(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	key := testKey(b)
	j, err := Open(path, Options{Durability: mustDurability(b, "none"), Key: key, MaxSize: 1 << 20, Compress: true})
	if err != nil {
		b.Fatal(err)
	}
	const calls = 100_000
	seq, _ := j.Append(&record.SessionStart{Aegis: "bench", Durability: "none", PolicySet: record.PassThroughSet})
	j.Wait(seq, BeforeRequest)
	done := make(chan struct{})
	for w := range 32 {
		go func() {
			defer func() { done <- struct{}{} }()
			c := newCallRecords()
			for k := w; k < calls; k += 32 {
				if err := c.call(j, k); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for range 32 {
		<-done
	}
	seq, _ = j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: calls, Outcomes: calls}})
	j.Wait(seq, BeforeResponse)
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	sets, err := segment.Sets([]string{path}, true)
	if err != nil {
		b.Fatal(err)
	}
	files, _, _ := sets[0].OrderedFiles()
	var raw bytes.Buffer
	for _, f := range files {
		rc, err := segment.Open(f, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(&raw, rc)
		rc.Close()
	}
	var zsize int64
	for _, f := range files {
		st, _ := os.Stat(f)
		zsize += st.Size()
	}
	sigs := bytes.Count(raw.Bytes(), []byte(`,"sig":"`))
	pub := key.Public().(ed25519.PublicKey)
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(raw.Len()))
		for b.Loop() {
			sha256.Sum256(raw.Bytes())
		}
	})
	b.Run("verify", func(b *testing.B) {
		il := &interleave.Sampler{Every: 1, Per: 1}
		kh := il.Add(func() { sha256.Sum256(raw.Bytes()) })
		il.Sample(1)
		b.ReportAllocs()
		b.SetBytes(int64(raw.Len()))
		for b.Loop() {
			rep, err := verify.Set(sets[0], verify.Options{Key: pub})
			if err != nil || rep.Status != verify.Valid {
				b.Fatalf("VerifySet = %v, %v", rep.Status, err)
			}
			il.Tick(b)
		}
		b.ReportMetric(il.Mean(kh)/interleave.NsPerOp(b), "ratio-sha256")
		b.ReportMetric(float64(len(files)), "files")
		b.ReportMetric(float64(sigs), "sigs")
		b.ReportMetric(float64(raw.Len())/float64(zsize), "zstd-ratio")
	})
}

// BenchmarkRotate records one tools/call per op (as BenchmarkAppend) into a
// log that rotates every 256 KiB, with and without compression, beside the
// same calls into a log that never rotates, at none and at strict. Sealing
// happens beside the calls, never in their way: the rotating figures
// match the plain ones, and max-ns (the slowest call) stays within a group
// commit of the plain log's.
//
//	go test -run XXX -bench Rotate -benchtime 20000x ./journal/
func BenchmarkRotate(b *testing.B) {
	for _, level := range []string{"none", "strict"} {
		for _, mode := range []struct {
			name     string
			max      int64
			compress bool
		}{{"plain", 0, false}, {"rotating", 256 << 10, false}, {"rotating+zst", 256 << 10, true}} {
			b.Run(level+"/"+mode.name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "audit.jsonl")
				j, err := Open(path, Options{Durability: mustDurability(b, level), Key: benchKey, MaxSize: mode.max, Compress: mode.compress})
				if err != nil {
					b.Fatal(err)
				}
				seq, _ := j.Append(&record.SessionStart{Aegis: "bench", Durability: level, PolicySet: record.PassThroughSet})
				j.Wait(seq, BeforeResponse)
				c := newCallRecords()
				var slowest time.Duration
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					t0 := time.Now()
					if err := c.call(j, n); err != nil {
						b.Fatal(err)
					}
					slowest = max(slowest, time.Since(t0))
					n++
				}
				b.StopTimer()
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
				segs := 0
				if entries, err := segment.Siblings(vfs.OS, path); err == nil {
					segs = len(entries)
				}
				b.ReportMetric(float64(slowest.Nanoseconds()), "max-ns")
				b.ReportMetric(float64(segs), "segments")
			})
		}
	}
}
