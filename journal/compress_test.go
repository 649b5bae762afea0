package journal

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// TestCompressFaults: compression that fails at any of its steps fails
// nothing but itself. The journal acknowledges every record and closes
// without error, says what failed through Logf, leaves no partial copy,
// and the set verifies with every record; the next Open with compression
// finishes the work.
func TestCompressFaults(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	zstTmp := errorfs.Base("*" + segment.CompressedExt + segment.TmpExt)
	plain := errorfs.Base("audit.jsonl.*-*" + segment.Ext)
	tests := []struct {
		name string
		rule errorfs.Rule
	}{
		{"the copy cannot be created", errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpCreate), zstTmp), errorfs.EROFS)},
		{"the disk is full", errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpWrite), zstTmp), errorfs.ENOSPC)},
		{"a write cut short", errorfs.ShortWrite(errorfs.And(errorfs.Kind(errorfs.OpWrite), zstTmp), errorfs.ENOSPC)},
		{"a write cut short, reporting no error", errorfs.ShortWrite(errorfs.And(errorfs.Kind(errorfs.OpWrite), zstTmp), nil)},
		{"the copy's sync fails", errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpSync), zstTmp), errorfs.EIO)},
		{"reading the copy back fails", errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpRead), zstTmp), errorfs.EIO)},
		{"the copy cannot be renamed", errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpRenameNoReplace), zstTmp), errorfs.EIO)},
		{"the plain segment cannot be removed", errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpRemove), plain), errorfs.EROFS)},
	}
	for _, tt := range tests {
		// Each fault has a log of its own: the cases run at once.
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys, in := faultOS(tt.rule)
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			var mu sync.Mutex
			var logs []string
			logf := func(format string, args ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			const calls = 20
			opts := Options{Durability: mustDurability(t, "strict"), FS: fsys, MaxSize: 2048, Compress: true, Logf: logf}
			rotSession(t, path, key, opts, calls) // fails the test on any error
			if in.Injected() == 0 {
				t.Fatalf("%s: no fault injected (files %v)", tt.name, dirNames(t, dir))
			}
			if len(logs) == 0 || !strings.Contains(logs[0], "compressing") {
				t.Errorf("%s: Logf got %q; want what failed in compressing", tt.name, logs)
			}
			plains := 0
			for _, n := range dirNames(t, dir) {
				if strings.HasSuffix(n, segment.TmpExt) {
					t.Errorf("%s: %s left behind", tt.name, n)
				}
				if strings.HasSuffix(n, segment.Ext) && n != "audit.jsonl" {
					plains++
				}
			}
			if plains == 0 {
				t.Errorf("%s: no plain segment left (files %v); want the one that failed to compress kept", tt.name, dirNames(t, dir))
			}
			rep := verifySetPath(t, path, verify.Options{Key: pub})
			if rep.Status != verify.Valid || rep.Records != 2+2*calls {
				t.Errorf("%s: VerifySet = %v, %d records, %v; want valid, %d", tt.name, rep.Status, rep.Records, rep.Problems, 2+2*calls)
			}

			// The next session, without faults, compresses what was left.
			rotSession(t, path, key, Options{Durability: mustDurability(t, "strict"), MaxSize: 2048, Compress: true}, 1)
			for _, n := range dirNames(t, dir) {
				if strings.HasSuffix(n, segment.Ext) && n != "audit.jsonl" {
					t.Errorf("%s: %s still uncompressed after a session without faults", tt.name, n)
				}
			}
			if rep := verifySetPath(t, path, verify.Options{Key: pub}); rep.Status != verify.Valid || len(rep.Sessions) != 2 {
				t.Errorf("%s, reopened: VerifySet = %v, %d sessions, %v; want valid, 2", tt.name, rep.Status, len(rep.Sessions), rep.Problems)
			}
		})
	}
}
