package segment_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// rotatedLog copies the golden rotated log into a new folder, its first
// segment compressed as --compress leaves it, and returns its live file.
func rotatedLog(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "golden", "rotated")
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := e.Name()
		if name == "audit.jsonl.0-2.jsonl" {
			enc, err := zstd.NewWriter(nil)
			if err != nil {
				t.Fatal(err)
			}
			data, name = enc.EncodeAll(data, nil), name+segment.CompressedExt
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "audit.jsonl")
}

// TestReadFaults: a log whose files cannot be listed, stat'ed, opened or
// read (EIO) is not verified: Collect or verify.Set returns the error,
// naming the file, and no report; a compressed segment's read error is
// not taken for corruption. The files are left as they were.
func TestReadFaults(t *testing.T) {
	base := rotatedLog(t)
	dir := filepath.Dir(base)
	sets, err := segment.Sets([]string{base}, true)
	if err != nil || len(sets) != 1 {
		t.Fatalf("Sets = %v, %v; want one log", sets, err)
	}
	if rep, err := verify.Set(sets[0], verify.Options{}); err != nil || rep.Status != verify.Valid || len(rep.Files) != 5 {
		t.Fatalf("verify.Set with no fault = %v, %v; want valid, over 5 files", rep, err)
	}
	before := readAll(t, dir)
	for _, tt := range []struct {
		name string
		op   errorfs.OpKind
		file string // base name of the file (or folder) the fault hits
	}{
		{"listing the folder", errorfs.OpReadDir, filepath.Base(dir)},
		{"a segment's stat", errorfs.OpStat, "audit.jsonl.3-7.jsonl"},
		{"opening a segment", errorfs.OpOpen, "audit.jsonl.8-11.jsonl"},
		{"reading a plain segment", errorfs.OpRead, "audit.jsonl.12-17.jsonl"},
		{"reading a compressed segment", errorfs.OpRead, "audit.jsonl.0-2.jsonl.zst"},
		{"reading the live file", errorfs.OpRead, "audit.jsonl"},
	} {
		in := errorfs.New(errorfs.Fail(errorfs.And(errorfs.Kind(tt.op), errorfs.Base(tt.file)), errorfs.EIO))
		fsys := errorfs.Wrap(vfs.OS, in)
		var rep *verify.Report
		sets, err := segment.SetsFS(fsys, []string{base}, true)
		if err == nil {
			rep, err = verify.Set(sets[0], verify.Options{})
		}
		if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), tt.file) {
			t.Errorf("%s: Sets, verify.Set = %v; want the EIO, naming %s", tt.name, err, tt.file)
		}
		if errors.Is(err, segment.ErrCorruptSegment) {
			t.Errorf("%s: the error %v reads as a corrupt segment; want an I/O error", tt.name, err)
		}
		if rep != nil {
			t.Errorf("%s: verify.Set reported %v %v; want no report", tt.name, rep.Status, rep.Problems)
		}
		if in.Injected() == 0 {
			t.Errorf("%s: no fault injected", tt.name)
		}
	}
	if after := readAll(t, dir); len(after) != len(before) {
		t.Errorf("files after the faults: %d; want %d", len(after), len(before))
	} else {
		for n, b := range before {
			if after[n] != b {
				t.Errorf("%s changed under read faults", n)
			}
		}
	}
}

// TestOpenFSCompressedReadFault: a read error under the decompressor is
// the error, not ErrCorruptSegment.
func TestOpenFSCompressedReadFault(t *testing.T) {
	base := rotatedLog(t)
	zst := segment.Name(base, 0, 2) + segment.CompressedExt
	fsys := errorfs.Wrap(vfs.OS, errorfs.New(errorfs.Fail(errorfs.Kind(errorfs.OpRead), errorfs.EIO)))
	rc, err := segment.OpenFS(fsys, zst, nil)
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if !errors.Is(err, syscall.EIO) || errors.Is(err, segment.ErrCorruptSegment) {
		t.Errorf("reading %s through a failing disk = %v; want the EIO, not ErrCorruptSegment", zst, err)
	}
}

func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

// TestFollowReadFault: Follow returns the error of a file it cannot read
// (a segment, or the live file), after passing on, in order, the records
// before it.
func TestFollowReadFault(t *testing.T) {
	base := rotatedLog(t)
	for _, tt := range []struct {
		file string
		want uint64 // records passed on before the error
	}{{"audit.jsonl.3-7.jsonl", 3}, {"audit.jsonl", 0}} { // the live file is read first, to order the set
		fsys := errorfs.Wrap(vfs.OS, errorfs.New(errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpRead), errorfs.Base(tt.file)), errorfs.EIO)))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var next uint64
		err := segment.Follow(ctx, base, segment.FollowOptions{FS: fsys, Poll: time.Millisecond}, func(r *record.Record) error {
			if r.Seq != next {
				return fmt.Errorf("seq %d; want %d", r.Seq, next)
			}
			next++
			return nil
		})
		cancel()
		if !errors.Is(err, syscall.EIO) || next != tt.want {
			t.Errorf("Follow with %s unreadable = %v after %d records; want the EIO after %d", tt.file, err, next, tt.want)
		}
	}
}
