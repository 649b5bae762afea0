package journal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOverlaps(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	for _, tt := range []struct {
		name, file string
		want       bool
	}{
		{"the log", audit, true},
		{"the log, relative spelling", filepath.Join(dir, ".", "audit.jsonl"), true},
		{"a segment", audit + ".1-9.jsonl", true},
		{"a compressed segment", audit + ".1-9.jsonl.zst", true},
		{"the log's own history name", audit + HistoryExt, true},
		{"beside it", filepath.Join(dir, "audit.head"), false},
		{"a longer name", audit + "x", false},
	} {
		if got := Overlaps(audit, tt.file); got != tt.want {
			t.Errorf("Overlaps(%s, %s) [%s] = %v; want %v", audit, tt.file, tt.name, got, tt.want)
		}
	}
}

// TestOpenClash: Open refuses a head or checkpoint file that is the log,
// one of its segments, or the head file, and creates nothing.
func TestOpenClash(t *testing.T) {
	key := testKey(t)
	for _, tt := range []struct {
		name     string
		head, cp string
		want     error
	}{
		{"head file is the log", "audit.jsonl", "", ErrClash},
		{"head file is a segment", "audit.jsonl.1-2.jsonl", "", ErrClash},
		{"checkpoint file is the log", "", "audit.jsonl", ErrClash},
		{"checkpoint file is the head file", "audit.head", "audit.head", ErrClash},
		{"checkpoint history is the head file", "audit.cp.history", "audit.cp", ErrClash},
		{"head file is the spare", "audit.jsonl.next", "", ErrClash},
		{"checkpoint file is a compressed segment's temporary copy", "", "audit.jsonl.1-2.jsonl.zst.tmp", ErrClash},
		{"apart", "audit.head", "audit.cp", nil},
		{"a name beside the log", "audit.jsonl.head", "audit.jsonl.checkpoint", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			o := Options{Durability: mustDurability(t, "none"), Key: key}
			if tt.head != "" {
				o.HeadFile = filepath.Join(dir, tt.head)
			}
			if tt.cp != "" {
				o.Checkpoint.File = filepath.Join(dir, tt.cp)
			}
			j, err := Open(path, o)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Open = %v; want it open", err)
				}
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v; want %v", err, tt.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Open refused, yet the log exists (%v)", err)
			}
		})
	}
}
