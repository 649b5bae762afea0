package journal

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// TestPublishWithoutDescriptors: a head file or checkpoint file that
// cannot be replaced for want of a file descriptor (EMFILE, ENFILE,
// opening its temporary file or its folder) does not fail the journal:
// that is said once, the records go on, the next replacement succeeds
// and says so, Close succeeds, and the head file and checkpoint name the
// last record; each checkpoint is in the history once. Any other error
// there still fails the journal closed (TestHeadFileFaults).
func TestPublishWithoutDescriptors(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	tests := []struct {
		name  string
		kind  errorfs.OpKind
		file  string // "head", "checkpoint" or "dir"
		err   error
		fatal bool
	}{
		{"head file, EMFILE", errorfs.OpCreate, "head", syscall.EMFILE, false},
		{"head file, ENFILE", errorfs.OpCreate, "head", syscall.ENFILE, false},
		{"checkpoint, EMFILE", errorfs.OpCreate, "checkpoint", syscall.EMFILE, false},
		{"folder, EMFILE", errorfs.OpSyncDir, "dir", syscall.EMFILE, false},
		{"head file, EIO", errorfs.OpCreate, "head", errorfs.EIO, true},
	}
	const fails = 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			headPath, cpPath := filepath.Join(dir, "audit.head"), filepath.Join(dir, "audit.head.checkpoint")
			target := map[string]string{"head": headPath + segment.TmpExt, "checkpoint": cpPath + segment.TmpExt, "dir": dir}[tt.file]
			var mu sync.Mutex
			failed := 0
			armed := false // the faults begin once the journal is open
			fs, _ := faultOS(errorfs.Fail(errorfs.PredicateFunc(func(op errorfs.Op) bool {
				mu.Lock()
				defer mu.Unlock()
				if armed && op.Kind == tt.kind && op.Path == target && failed < fails {
					failed++
					return true
				}
				return false
			}), tt.err))
			var logMu sync.Mutex
			var said []string
			logf := func(format string, args ...any) {
				logMu.Lock()
				said = append(said, fmt.Sprintf(format, args...))
				logMu.Unlock()
			}
			j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key, FS: fs, Logf: logf,
				HeadFile: headPath, HeadEvery: time.Millisecond, Checkpoint: CheckpointOptions{File: cpPath, Interval: -1}})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			armed = true
			mu.Unlock()
			// Calls until every fault has been injected, and one more.
			c := newCallRecords()
			seq, err := j.Append(&record.SessionStart{Aegis: "test", Durability: "strict", PolicySet: record.PassThroughSet})
			if err == nil {
				err = j.Wait(seq, BeforeResponse)
			}
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; err == nil; i++ {
				mu.Lock()
				done := failed == fails
				mu.Unlock()
				if done || time.Now().After(deadline) {
					err = c.call(j, i)
					break
				}
				err = c.call(j, i)
				time.Sleep(time.Millisecond) // a head file tick between calls
			}
			cerr := j.Close()
			if tt.fatal {
				if !errors.Is(errors.Join(err, cerr), ErrIO) {
					t.Errorf("calls, Close = %v, %v; want ErrIO", err, cerr)
				}
				return
			}
			if err != nil || cerr != nil {
				t.Fatalf("calls, Close = %v, %v; want nil: a publication without a descriptor is not an audit failure", err, cerr)
			}
			if failed != fails {
				t.Fatalf("faults injected = %d; want %d", failed, fails)
			}
			rep := verifyFile(t, path, verify.Options{Key: pub})
			sh, err := record.ReadHead(headPath)
			if err != nil {
				t.Fatalf("head file: %v", err)
			}
			if sh.Head.Seq != rep.Records-1 {
				t.Errorf("head file names seq %d; want the last, %d", sh.Head.Seq, rep.Records-1)
			}
			cp, err := os.ReadFile(cpPath)
			if err != nil {
				t.Fatalf("checkpoint file: %v", err)
			}
			if want := fmt.Sprintf("\n%d\n", rep.Records); !bytes.Contains(cp, []byte(want)) {
				t.Errorf("checkpoint file %q; want one of %d records", cp, rep.Records)
			}
			hist, _ := os.ReadFile(cpPath + HistoryExt)
			sizes := map[string]int{}
			origin, _, _ := bytes.Cut(cp, []byte("\n"))
			lines := strings.Split(string(hist), "\n")
			for i, l := range lines[:len(lines)-1] {
				if l == string(origin) { // a note's first line; its second is the size
					sizes[lines[i+1]]++
				}
			}
			if len(sizes) == 0 {
				t.Errorf("history %q holds no checkpoint", hist)
			}
			for size, n := range sizes {
				if n != 1 {
					t.Errorf("history holds the checkpoint of %s records %d times; want once", size, n)
				}
			}
			logMu.Lock()
			text := strings.Join(said, "\n")
			logMu.Unlock()
			if strings.Count(text, "not replaced") != 1 || strings.Count(text, "written again") != 1 {
				t.Errorf("Logf said %q; want one line of the failure and one of the recovery", text)
			}
		})
	}
}
