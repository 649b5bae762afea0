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
	const records = 400
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
	for i := range records / 2 {
		appendOne(i)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seqs := make(chan uint64, records)
	done := make(chan error, 1)
	go func() {
		done <- segment.Follow(ctx, path, segment.FollowOptions{Poll: time.Millisecond}, func(r *record.Record) error {
			seqs <- r.Seq
			if r.Seq == records-1 {
				cancel()
			}
			return nil
		})
	}()
	for i := records / 2; i < records; i++ {
		appendOne(i)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow = %v; want context.Canceled after seq %d", err, records-1)
	}
	close(seqs)
	var want uint64
	for s := range seqs {
		if s != want {
			t.Fatalf("Follow passed seq %d; want %d (each once, in order)", s, want)
		}
		want++
	}
	if want != records {
		t.Fatalf("Follow passed %d records; want %d", want, records)
	}
	if m, _ := filepath.Glob(path + ".*.jsonl*"); len(m) < 2 {
		t.Fatalf("%d sealed segments; want rotations to have happened", len(m))
	}
}
