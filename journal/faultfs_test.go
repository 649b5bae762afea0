package journal

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/faultfs"
	"github.com/aegisrelay/aegis/journal/record"
)

// faultOS returns the real filesystem with an Injector of rules at its
// Fault hook, and the Injector, which counts every operation by kind.
// Every error-path test of the journal's file I/O uses it.
func faultOS(rules ...faultfs.Rule) (OSFS, *faultfs.Injector) {
	in := faultfs.New(rules...)
	return OSFS{Fault: in.Hook}, in
}

// opKinds is every kind OSFS names to its Fault hook.
var opKinds = []string{fsOpen, fsCreate, fsRead, fsWrite, fsSync, fsPreZero, fsPreZeroSync, fsTruncate, fsClose,
	fsRename, fsRenameNoReplace, fsRenameExchange, fsRemove, fsSyncDir, fsReadDir}

// renames matches a rename of any mode.
var renames = faultfs.Kind(fsRename, fsRenameNoReplace, fsRenameExchange)

// TestFaultKinds: a journal that rotates, compresses, keeps a head file
// and pre-zeroes does every kind of operation the Fault hook's doc names,
// through the hook; and the hook sees nothing else.
func TestFaultKinds(t *testing.T) {
	var unknown []string
	fsys, in := faultOS(faultfs.Fail(faultfs.PredicateFunc(func(op faultfs.Op) bool {
		if !slices.Contains(opKinds, op.Kind) {
			unknown = append(unknown, op.Kind) // under the Injector's lock
		}
		return false
	}), nil))
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
	for _, k := range opKinds {
		if in.Count(k) == 0 {
			t.Errorf("no %q operation reached the Fault hook", k)
		}
	}
	if len(unknown) > 0 {
		t.Errorf("the Fault hook saw kinds %q; want only those of OSFS.Fault's doc", unknown)
	}
}

// TestFaultOpen: a failed open or create is the journal's error, with the
// injected one inside.
func TestFaultOpen(t *testing.T) {
	for _, tt := range []struct {
		name string
		rule faultfs.Rule
		want error
	}{
		{"open", faultfs.Fail(faultfs.Kind(fsOpen), faultfs.EROFS), faultfs.EROFS},
		{"directory sync of a new file", faultfs.Fail(faultfs.Kind(fsSyncDir), faultfs.EIO), faultfs.EIO},
		{"reading the tail", faultfs.Fail(faultfs.Kind(fsRead), faultfs.EIO), faultfs.EIO},
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
