package tlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/segment"
)

// TestSegmentReadFaults: a sealed segment, plain or compressed, or the
// live file that cannot be read (EIO) makes a proof fail with that error,
// naming the file, never a finding about the log (ErrSet, ErrCut,
// ErrRewritten); with an index or without, and no file of the log is
// changed.
func TestSegmentReadFaults(t *testing.T) {
	leaves := synthChain(300)
	set := writeSegments(t, leaves, 64, 100, 200, 257)
	c := checkpointAt(leaves, 300)
	before := snapshot(t, filepath.Dir(set.Base))
	for _, tt := range []struct {
		name string
		file string // base name of the file whose reads fail
		op   errorfs.OpKind
	}{
		{"plain segment, read", "audit.jsonl.100-199.jsonl", errorfs.OpRead},
		{"plain segment, open", "audit.jsonl.100-199.jsonl", errorfs.OpOpen},
		{"compressed segment, read", "audit.jsonl.200-256.jsonl.zst", errorfs.OpRead},
		{"live file, read", "audit.jsonl", errorfs.OpRead},
		{"a segment's stat", "audit.jsonl.0-63.jsonl", errorfs.OpStat},
	} {
		for _, indexed := range []bool{false, true} {
			in := errorfs.New(errorfs.Fail(errorfs.And(errorfs.Kind(tt.op), errorfs.Base(tt.file)), errorfs.EIO))
			s := *set
			s.FS = errorfs.Wrap(vfs.OS, in)
			var opts []ProveOption
			if indexed {
				opts = append(opts, WithIndex(NewIndex(t.TempDir())))
			}
			_, err := ProveInclusion(&s, c, 150, opts...)
			if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), tt.file) {
				t.Errorf("%s (indexed %v): ProveInclusion = %v; want the EIO, naming %s", tt.name, indexed, err, tt.file)
			}
			if errors.Is(err, ErrSet) || errors.Is(err, ErrCut) || errors.Is(err, ErrRewritten) || errors.Is(err, segment.ErrCorruptSegment) {
				t.Errorf("%s (indexed %v): ProveInclusion = %v; want an I/O error, not a finding about the log", tt.name, indexed, err)
			}
			if in.Injected() == 0 {
				t.Errorf("%s (indexed %v): no fault injected", tt.name, indexed)
			}
		}
	}
	if after := snapshot(t, filepath.Dir(set.Base)); !equalSnapshots(before, after) {
		t.Errorf("the log's files changed under read faults")
	}
}

// TestIndexReadFault: index entries that cannot be read (EIO) are
// computed from the segments again, the proof is the one made without
// the index, and the entries are left as they are, not replaced: the disk
// may be failing, not the entries.
func TestIndexReadFault(t *testing.T) {
	leaves := synthChain(300)
	set := writeSegments(t, leaves, 64, 100, 200, 257)
	c := checkpointAt(leaves, 300)
	want, err := ProveInclusion(set, c, 150)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := ProveInclusion(set, c, 150, WithIndex(NewIndex(dir))); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	if len(before) != 4 {
		t.Fatalf("index holds %d entries; want 4", len(before))
	}
	in := errorfs.New(errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpRead), errorfs.Path(filepath.Join(dir, "*"))), errorfs.EIO))
	got, err := ProveInclusion(set, c, 150, WithIndex(NewIndexFS(errorfs.Wrap(vfs.OS, in), dir)))
	if err != nil {
		t.Fatalf("ProveInclusion with unreadable index entries = %v; want the proof", err)
	}
	if a, b := marshal(t, got), marshal(t, want); !bytes.Equal(a, b) {
		t.Errorf("ProveInclusion with unreadable index entries = %s; want %s", a, b)
	}
	if in.Injected() == 0 {
		t.Errorf("no fault injected into the index's reads")
	}
	if after := snapshot(t, dir); !equalSnapshots(before, after) {
		t.Errorf("index entries were replaced after unreadable reads; want them left as they were")
	}
}

// fileState is a file as a snapshot holds it: its bytes and its identity
// (a file replaced by a rename, even with the same bytes, is another).
type fileState struct {
	data []byte
	info os.FileInfo
}

// snapshot returns the regular files of dir.
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fileState{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fileState{data, st}
	}
	return out
}

func equalSnapshots(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for n, fa := range a {
		fb, ok := b[n]
		if !ok || !bytes.Equal(fa.data, fb.data) || !os.SameFile(fa.info, fb.info) || !fa.info.ModTime().Equal(fb.info.ModTime()) {
			return false
		}
	}
	return true
}
