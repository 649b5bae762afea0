package journal

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// TestCallsExpected drives the leader's bookkeeping through the shapes of
// traffic it must tell apart.
func TestCallsExpected(t *testing.T) {
	type step struct {
		op   string // "intent", "outcome", "take", "synced"
		seq  uint64 // intent: its seq; outcome: its intent's seq; take: next seq
		n    int    // synced: outcomes in the group
		want int    // expected() after the step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"lone call never waits", []step{
			{op: "intent", seq: 0, want: 0},
			{op: "take", seq: 1, want: 0},
			{op: "synced", n: 0, want: 1}, // its request goes out: its outcome is expected
			{op: "outcome", seq: 0, want: 0},
			{op: "take", seq: 2, want: 0},
			{op: "synced", n: 1, want: 1}, // its caller may send the next call
			{op: "intent", seq: 2, want: 0},
		}},
		{"refused call: intent and outcome in one group", []step{
			{op: "intent", seq: 0, want: 0},
			{op: "outcome", seq: 0, want: 0},
			{op: "take", seq: 2, want: 0},
			{op: "synced", n: 1, want: 1},
		}},
		{"two cohorts", []step{
			{op: "intent", seq: 0, want: 0},
			{op: "intent", seq: 1, want: 0},
			{op: "take", seq: 2, want: 0},
			{op: "synced", n: 0, want: 2},
			{op: "outcome", seq: 0, want: 1}, // one more outcome to come
			{op: "intent", seq: 3, want: 1},  // a new call: not expected
			{op: "outcome", seq: 1, want: 0},
			{op: "take", seq: 5, want: 0},
			{op: "synced", n: 2, want: 3},   // the new call's outcome, two callers' next calls
			{op: "intent", seq: 6, want: 2}, // one of them
		}},
		{"a slow call is waited for once", []step{
			{op: "intent", seq: 0, want: 0},
			{op: "take", seq: 1, want: 0},
			{op: "synced", n: 0, want: 1},
			{op: "intent", seq: 1, want: 1},
			{op: "take", seq: 2, want: 1},
			{op: "synced", n: 0, want: 1}, // call 1's outcome; call 0's no longer
			{op: "outcome", seq: 1, want: 0},
			{op: "take", seq: 3, want: 0},
			{op: "synced", n: 1, want: 1},
			{op: "outcome", seq: 0, want: 1}, // the slow one at last: nothing changes
		}},
	}
	for _, tt := range tests {
		var c calls
		for i, s := range tt.steps {
			switch s.op {
			case "intent":
				c.appended(Hint{Awaits: true})
			case "outcome":
				c.appended(Hint{Answers: true, Answered: s.seq})
			case "take":
				c.taken(s.seq)
			case "synced":
				c.synced(s.n)
			}
			if got := c.expected(); got != s.want {
				t.Errorf("%s: step %d (%s %d): expected() = %d; want %d", tt.name, i, s.op, s.seq, got, s.want)
			}
		}
	}
}

// TestLoneCallsNeverLinger: one call at a time, the leader never waits
// before its sync (lock-step latency stays at the floor), and each call
// gets the fdatasyncs its level needs, no fewer.
func TestLoneCallsNeverLinger(t *testing.T) {
	for _, tt := range []struct {
		level string
		syncs int // per call
	}{{"strict", 2}, {"reply", 1}} {
		fsys, in := faultOS()
		j, err := Open(filepath.Join(t.TempDir(), "a.jsonl"), Options{Durability: mustDurability(t, tt.level), Key: testKey(t), FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		c := newCallRecords()
		for i := range 50 {
			if err := c.call(j, i); err != nil {
				t.Fatal(err)
			}
		}
		j.mu.Lock()
		lingers := j.lingers
		j.mu.Unlock()
		if lingers != 0 {
			t.Errorf("%s: 50 lone calls: the leader lingered %d times; want 0", tt.level, lingers)
		}
		if got := in.Count(errorfs.OpSync); got != 50*tt.syncs {
			t.Errorf("%s: 50 lone calls: %d fdatasyncs; want %d", tt.level, got, 50*tt.syncs)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLingerMerges: calls in flight make the leader wait for the records it
// expects, and every record still becomes durable (no waiter is stranded
// by a leader that lingers).
func TestLingerMerges(t *testing.T) {
	fsys, in := faultOS()
	path := filepath.Join(t.TempDir(), "a.jsonl")
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: testKey(t), FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
	if err == nil {
		err = j.Wait(seq, BeforeRequest)
	}
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newCallRecords()
			for k := range each {
				if err := c.call(j, w*each+k); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	j.mu.Lock()
	lingers := j.lingers
	j.mu.Unlock()
	if lingers == 0 {
		t.Errorf("%d workers in flight: the leader never lingered", workers)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if syncs := in.Count(errorfs.OpSync); syncs >= workers*each*2 {
		t.Errorf("%d records took %d fdatasyncs; want fewer than one each", workers*each*2, syncs)
	}
	// The session_start, the calls' records, and the close record Close
	// writes after the last group (doc.go).
	rep := verifyFile(t, path, verify.Options{Key: j.PublicKey()})
	if rep.Records != 1+workers*each*2+1 || len(rep.Problems) > 0 {
		t.Errorf("verify: %d records, problems %v; want %d, none", rep.Records, rep.Problems, 1+workers*each*2+1)
	}
}
