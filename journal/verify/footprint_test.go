package verify

import (
	"bytes"
	"crypto/ed25519"
	"runtime"
	"testing"
)

// TestVerifyFootprint: verifying a log of megabytes allocates a small
// bound, whatever the log's size: the chunks in flight are few and
// small, and recycled (read.go). What verify allocates is what its
// process touches for the first time, a page fault a page, and what the
// collector scans; most of verify's CPU time but the hashing went there
// when chunks were large and many were queued.
func TestVerifyFootprint(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	const bound = 3 << 20
	for _, tt := range []struct {
		name            string
		inFlight, calls int
	}{
		{"lock-step", 1, 10000},
		{"inflight-64", 64, 10000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := buildLog(t, key, tt.inFlight, tt.calls)
			if len(data) < 2*bound {
				t.Fatalf("the log holds %d bytes; want more than the bound's %d", len(data), bound)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			rep, err := Stream(bytes.NewReader(data), Options{Key: pub, Workers: 2})
			runtime.ReadMemStats(&m1)
			if err != nil || rep.Status != Valid {
				t.Fatalf("Stream = %v, %v %v; want valid", rep.Status, err, rep.Problems)
			}
			if n := m1.TotalAlloc - m0.TotalAlloc; n > bound {
				t.Errorf("verifying %d bytes allocated %d bytes; want at most %d", len(data), n, bound)
			} else {
				t.Logf("verifying %d bytes allocated %d bytes", len(data), n)
			}
		})
	}
}
