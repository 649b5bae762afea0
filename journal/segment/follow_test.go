package segment_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
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

// hideOnce is a file system whose first listing of a folder leaves out
// one name, as a listing made while a rotation renames that file may.
type hideOnce struct {
	vfs.FS
	name   string
	hidden atomic.Bool
}

func (h *hideOnce) ReadDir(dir string) ([]string, error) {
	names, err := h.FS.ReadDir(dir)
	if err != nil || h.hidden.Swap(true) {
		return names, err
	}
	out := names[:0:0]
	for _, n := range names {
		if n != h.name {
			out = append(out, n)
		}
	}
	return out, nil
}

// TestFollowMissedSegmentEmptyLive: a listing that missed the segment
// sealed last, while the live file holds no record yet (right after a
// rotation, on a log that then goes quiet), does not leave Follow waiting
// for a record that never comes: it lists again and passes the records.
func TestFollowMissedSegmentEmptyLive(t *testing.T) {
	key, err := record.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		var b record.Body = &record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, Tool: []byte("read_file"), HasTool: true}
		if i == 0 {
			b = &record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet}
		}
		if _, err := j.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// The state right after a rotation (here the first): the live file's
	// records sealed in a segment, the live file empty.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\x00\n"), []byte("\n"))
	var dec record.Decoder
	first, err := dec.Decode(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	lastRec, err := dec.Decode(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	last := lastRec.Seq
	sealed := fmt.Sprintf("%s.%d-%d.jsonl", path, first.Seq, last)
	if err := os.WriteFile(sealed, bytes.TrimRight(data, "\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	fsys := &hideOnce{FS: vfs.OS, name: filepath.Base(sealed)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got uint64
	err = segment.Follow(ctx, path, segment.FollowOptions{Poll: time.Millisecond, FS: fsys}, func(r *record.Record) error {
		if got = r.Seq; got == last {
			cancel()
		}
		return nil
	})
	if got != last || !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow = %v, passing seqs up to %d; want every record, to %d (the segment sealed last was missed by the first listing)", err, got, last)
	}
}
