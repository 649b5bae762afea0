package segment_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// TestFollowAcrossRotations: records appended while Follow runs, through
// rotations to compressed segments, reach fn each once, in seq order.
func TestFollowAcrossRotations(t *testing.T) {
	key, err := record.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: key, MaxSize: 4 << 10, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	// sealed counts the sealed segments, each once whether plain,
	// compressed or both (while a compression finishes), and no
	// unfinished copy: a count that never goes down.
	sealed := func() int {
		m, _ := filepath.Glob(path + ".*.jsonl*")
		ranges := map[[2]uint64]bool{}
		for _, p := range m {
			if s, ok := segment.ParseName(p); ok { // not a .tmp copy
				ranges[[2]uint64{s.First, s.Last}] = true
			}
		}
		return len(ranges)
	}
	appendOne := func(i int) {
		t.Helper()
		var b record.Body = &record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, Tool: []byte("read_file"), HasTool: true}
		if i == 0 {
			b = &record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet}
		}
		seq, err := j.Append(b)
		if err == nil {
			err = j.Wait(seq, journal.BeforeResponse)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Rotations happen when the sealer has a spare ready: append until
	// they have, before Follow starts and while it runs.
	const most = 1 << 16
	n := 0
	for ; sealed() < 2 && n < most/2; n++ {
		appendOne(n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seqs := make(chan uint64, most)
	done := make(chan error, 1)
	go func() {
		done <- segment.Follow(ctx, path, segment.FollowOptions{Poll: time.Millisecond}, func(r *record.Record) error {
			seqs <- r.Seq
			return nil
		})
	}()
	for before := sealed(); sealed() < before+2 && n < most; n++ {
		appendOne(n)
	}
	if sealed() < 4 {
		t.Fatalf("%d sealed segments after %d records; want rotations before and while Follow runs", sealed(), n)
	}
	for want := uint64(0); want < uint64(n); want++ {
		select {
		case s := <-seqs:
			if s != want {
				t.Fatalf("Follow passed seq %d; want %d (each once, in order)", s, want)
			}
		case err := <-done:
			t.Fatalf("Follow = %v before seq %d", err, want)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow = %v; want context.Canceled", err)
	}
	select {
	case s := <-seqs:
		t.Fatalf("Follow passed seq %d; the log ends at %d", s, n-1)
	default:
	}
}
