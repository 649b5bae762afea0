package journal

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// TestHeadFileFaults: a head file that cannot be replaced fails the
// journal closed, with the injected error, at whichever step of the
// replacement it fails (the second replacement, so that a head file
// exists); the head file left is the one replaced whole before, and the
// log holds the record it names and every acknowledged one.
func TestHeadFileFaults(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	tmp := errorfs.Base("audit.head.tmp")
	tests := []struct {
		name  string
		kind  errorfs.OpKind
		short bool
		want  error
	}{
		{"create", errorfs.OpCreate, false, errorfs.EROFS},
		{"write", errorfs.OpWrite, false, errorfs.ENOSPC},
		{"short write", errorfs.OpWrite, true, errorfs.ENOSPC},
		{"sync", errorfs.OpSync, false, errorfs.EIO},
		{"close", errorfs.OpClose, false, errorfs.EIO},
		{"rename", errorfs.OpRename, false, errorfs.EIO},
	}
	for _, tt := range tests {
		// created hears of each replacement as it begins; faulted closes
		// when the fault is injected. (Predicates run under the
		// Injector's lock: nothing in them may block.)
		created, faulted := make(chan struct{}, 2), make(chan struct{})
		second := errorfs.Nth(2, errorfs.And(errorfs.Kind(tt.kind), tmp))
		when := errorfs.PredicateFunc(func(op errorfs.Op) bool {
			if op.Kind == errorfs.OpCreate && tmp.Match(op) {
				select {
				case created <- struct{}{}:
				default:
				}
			}
			if !second.Match(op) {
				return false
			}
			close(faulted)
			return true
		})
		fsys, _ := faultOS(errorfs.Rule{When: when, Fault: errorfs.Fault{Err: tt.want, Short: tt.short}})
		dir := t.TempDir()
		path, headPath := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.head")
		j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key, FS: fsys, HeadFile: headPath, HeadEvery: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		await := func(c <-chan struct{}, what string) {
			t.Helper()
			select {
			case <-c:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: %s within 10s", tt.name, what)
			}
		}
		first, _ := j.Append(&record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet})
		if err := j.Wait(first, BeforeRequest); err != nil {
			t.Fatal(err)
		}
		await(created, "no head file written")
		seq, _ := j.Append(&record.Intent{RequestDigest: record.Digest{1}})
		if err := j.Wait(seq, BeforeRequest); err != nil {
			t.Fatal(err)
		}
		await(faulted, "the head file was not replaced again")
		<-j.heads.done // the head writer has failed the journal and stopped
		seq, err = j.Append(&record.Intent{RequestDigest: record.Digest{2}})
		if err == nil {
			err = j.Wait(seq, BeforeRequest)
		}
		if !errors.Is(err, ErrIO) || !errors.Is(err, tt.want) {
			t.Errorf("%s: Append and Wait after the fault = %v; want ErrIO wrapping %v", tt.name, err, tt.want)
		}
		if cerr := j.Close(); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("%s: Close = %v; want the first error again", tt.name, cerr)
		}
		sh, err := record.ReadHead(headPath)
		if err != nil {
			data, _ := os.ReadFile(headPath)
			t.Fatalf("%s: head file %q: %v; want the first one, whole", tt.name, data, err)
		}
		if sh.Head.Seq != first || !sh.Key.Equal(pub) {
			t.Errorf("%s: head file names seq %d; want %d, signed by the journal's key", tt.name, sh.Head.Seq, first)
		}
		rep := verifyFile(t, path, verify.Options{Key: pub, Head: &sh.Head, HeadKey: sh.Key})
		if rep.Status == verify.Invalid || rep.Records < 2 {
			t.Errorf("%s: verify against the head file = %v, %d records, %v; want the log to hold the head and both acknowledged records", tt.name, rep.Status, rep.Records, rep.Problems)
		}
	}
}
