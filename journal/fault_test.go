package journal

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
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
