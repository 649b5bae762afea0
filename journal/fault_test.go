package journal

import (
	"bytes"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
)

// faultOS returns the real file system wrapped by an Injector of rules,
// and the Injector, which counts every operation by kind. Every
// error-path test of the journal's file I/O uses it.
func faultOS(rules ...errorfs.Rule) (vfs.FS, *errorfs.Injector) {
	in := errorfs.New(rules...)
	return errorfs.Wrap(vfs.OS, in), in
}

// renames matches a rename of any mode.
var renames = errorfs.Kind(errorfs.OpRename, errorfs.OpRenameNoReplace, errorfs.OpRenameExchange)

// TestFaultKinds: a journal that rotates, compresses, keeps a head file
// and pre-zeroes does every kind of operation there is through
// Options.FS.
func TestFaultKinds(t *testing.T) {
	fsys, in := faultOS()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	key := testKey(t)
	opts := Options{Durability: mustDurability(t, "strict"), Key: key, FS: fsys, MaxSize: 2048, Compress: true,
		HeadFile: filepath.Join(dir, "head"), HeadEvery: time.Millisecond}
	for range 2 { // the second Open reads the first's tail
		j, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
		for i := range 40 {
			seq, _ = j.Append(&record.Intent{RequestDigest: record.Digest{byte(i)}})
			if err := j.Wait(seq, BeforeRequest); err != nil {
				t.Fatal(err)
			}
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range errorfs.Kinds {
		if in.Count(k) == 0 {
			t.Errorf("no %v operation reached Options.FS", k)
		}
	}
}

// TestFaultOpen: a failed open or create is the journal's error, with the
// injected one inside.
func TestFaultOpen(t *testing.T) {
	for _, tt := range []struct {
		name string
		rule errorfs.Rule
		want error
	}{
		{"open", errorfs.Fail(errorfs.Kind(errorfs.OpOpen), errorfs.EROFS), errorfs.EROFS},
		{"directory sync of a new file", errorfs.Fail(errorfs.Kind(errorfs.OpSyncDir), errorfs.EIO), errorfs.EIO},
		{"reading the tail", errorfs.Fail(errorfs.Kind(errorfs.OpRead), errorfs.EIO), errorfs.EIO},
	} {
		fsys, _ := faultOS(tt.rule)
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if tt.name == "reading the tail" {
			session(t, path, testKey(t), 1)
		}
		j, err := Open(path, Options{Key: testKey(t), FS: fsys})
		if err == nil {
			j.Close()
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Open = %v; want %v", tt.name, err, tt.want)
		}
	}
}

// TestFaultReadsAtOpen: Open with checkpoints reads the checkpoint the log
// must extend and the whole log, sealed segments included, through
// Options.FS; a file among them that cannot be read (EIO) fails Open with
// an IOError that holds the EIO, not ErrNotLog or ErrRolledBack (the log
// is sound; the disk is not), and leaves every file as it was.
func TestFaultReadsAtOpen(t *testing.T) {
	dir := t.TempDir()
	path, cpf := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.checkpoint")
	key := testKey(t)
	opts := Options{Durability: mustDurability(t, "strict"), Key: key, MaxSize: 2048,
		Checkpoint: CheckpointOptions{File: cpf, Every: 1, Interval: -1}}
	j, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, j, 30)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	segs := 0
	for n := range before {
		if _, ok := segment.ParseName(n); ok {
			segs++
		}
	}
	if segs < 2 {
		t.Fatalf("%d sealed segments; want 2 or more", segs)
	}
	for _, tt := range []struct {
		name string
		op   errorfs.OpKind
		file string // base name pattern of the file that cannot be read
	}{
		{"read of the first segment", errorfs.OpRead, "audit.jsonl.0-*.jsonl"},
		{"open of the first segment", errorfs.OpOpen, "audit.jsonl.0-*.jsonl"},
		{"read of the checkpoint", errorfs.OpRead, "audit.checkpoint"},
		{"open of the checkpoint", errorfs.OpOpen, "audit.checkpoint"},
	} {
		o := opts
		var in *errorfs.Injector
		o.FS, in = faultOS(errorfs.Fail(errorfs.And(errorfs.Kind(tt.op), errorfs.Base(tt.file)), errorfs.EIO))
		j, err := Open(path, o)
		if err == nil {
			j.Close()
		}
		if !errors.Is(err, ErrIO) || !errors.Is(err, errorfs.EIO) || errors.Is(err, ErrNotLog) || errors.Is(err, ErrRolledBack) {
			t.Errorf("%s fails: Open = %v; want an IOError holding the EIO", tt.name, err)
		}
		if in.Injected() == 0 {
			t.Errorf("%s fails: no fault injected", tt.name)
		}
		if after := dirFiles(t, dir); !maps.EqualFunc(after, before, bytes.Equal) {
			t.Errorf("%s fails: the files changed from %v to %v", tt.name, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
		}
	}
	if j, err := Open(path, opts); err != nil {
		t.Errorf("Open with no fault = %v; want the log continued", err)
	} else if err := j.Close(); err != nil {
		t.Error(err)
	}
}
