package journal

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// At strict and reply records are written over pre-zeroed space; a reader
// of the live file sees only records, and Close leaves none of the space.
func TestPreZeroedLiveFile(t *testing.T) {
	for _, level := range []string{"strict", "reply", "none"} {
		t.Run(level, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			key := testKey(t)
			j, err := Open(path, Options{Durability: mustDurability(t, level), Key: key})
			if err != nil {
				t.Fatal(err)
			}
			j.Append(&record.SessionStart{Aegis: "t", Durability: level, PolicySet: record.PassThroughSet})
			var seq uint64
			for i := range 200 {
				seq, _ = j.Append(&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte{byte('1' + i%9)}}, RequestDigest: record.Digest{1}})
				if err := j.Wait(seq, BeforeResponse); err != nil {
					t.Fatal(err)
				}
			}
			content := j.f.z.content()
			live, _ := os.ReadFile(path)
			tail := live[content:]
			if level == "none" {
				if len(tail) != 0 {
					t.Fatalf("at none the file has %d bytes past its content; want none (no pre-zeroing)", len(tail))
				}
			} else if len(tail) < preZeroChunk/2 || len(bytes.Trim(tail, "\x00")) > 0 {
				t.Fatalf("%d bytes past the content, not all NUL; want at least %d NULs", len(tail), preZeroChunk/2)
			}
			// The live file, NULs and all, reads as the records alone.
			rep := verifyFile(t, path, verify.Options{Key: key.Public().(ed25519.PublicKey)})
			if rep.Status != verify.Incomplete || len(rep.Problems) != 0 || rep.Records != 201 {
				t.Fatalf("Verify(live file) = %v %v, %d records; want incomplete (no session_end), 201 records", rep.Status, rep.Problems, rep.Records)
			}
			set := verifySetPath(t, path, verify.Options{})
			if set.Status != verify.Incomplete || len(set.Problems) != 0 || set.Records != 201 {
				t.Fatalf("VerifySet(live file) = %v %v, %d records", set.Status, set.Problems, set.Records)
			}
			got, err := io.ReadAll(segment.NewContentReader(bytes.NewReader(live)))
			if err != nil || !bytes.Equal(got, live[:content]) {
				t.Fatalf("ContentReader read %d bytes (%v); want the %d of the content", len(got), err, content)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if len(data) == 0 || data[len(data)-1] != '\n' || bytes.IndexByte(data, 0) >= 0 {
				t.Fatalf("after Close the file holds NULs or does not end in a line end (%d bytes)", len(data))
			}
			// 201 and the close record Close writes after the last group.
			if rep := verifyBytes(t, data, verify.Options{}); rep.Status != verify.Incomplete || len(rep.Problems) != 0 || rep.Records != 202 {
				t.Fatalf("Verify(closed) = %v %v, %d records; want incomplete (no session_end), 202 records", rep.Status, rep.Problems, rep.Records)
			}
		})
	}
}

// A crash leaves pre-zeroed space at the end of the file, longer than any
// line may be: verify reads it as nothing, and the next session writes
// over it, adding no recovery record (nothing was torn).
func TestPreZeroedTailAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	key := testKey(t)
	session(t, path, key, 2)
	content, _ := os.ReadFile(path)
	f, _ := os.OpenFile(path, os.O_WRONLY, 0)
	f.WriteAt(make([]byte, 3*record.MaxLine), int64(len(content)))
	f.Close()
	crashed, _ := os.ReadFile(path)
	for name, r := range map[string]io.Reader{
		"file":        bytes.NewReader(crashed),
		"pipe-sized":  iotest.OneByteReader(bytes.NewReader(crashed[len(crashed)-record.MaxLine-100:])),
		"half-reads":  iotest.HalfReader(bytes.NewReader(crashed)),
		"data-errors": iotest.DataErrReader(bytes.NewReader(crashed)),
	} {
		rep, err := verify.Stream(r, verify.Options{})
		if err != nil {
			t.Fatal(name, err)
		}
		if name == "pipe-sized" {
			continue // starts mid-log: only that it reads the NULs as nothing
		}
		if rep.Status != verify.Valid || len(rep.Gaps) != 0 {
			t.Errorf("Verify(%s, log + NUL tail) = %v %v %v; want valid", name, rep.Status, rep.Problems, rep.Gaps)
		}
	}
	if rep := verifySetPath(t, path, verify.Options{}); rep.Status != verify.Valid {
		t.Errorf("VerifySet(log + NUL tail) = %v %v", rep.Status, rep.Problems)
	}
	session(t, path, key, 2)
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, content) || bytes.IndexByte(after, 0) >= 0 {
		t.Fatalf("the second session did not continue the content, or left NULs")
	}
	if bytes.Contains(after, []byte(`"kind":"recovery"`)) {
		t.Errorf("a recovery record for pre-zeroed space; nothing was torn")
	}
	if rep := verifyBytes(t, after, verify.Options{}); rep.Status != verify.Valid || len(rep.Sessions) != 2 {
		t.Errorf("Verify(continued) = %v %v, %d sessions; want valid, 2", rep.Status, rep.Problems, len(rep.Sessions))
	}
}

// A power loss during a write over pre-zeroed space can keep a later page
// and lose an earlier one: a hole of NULs, then lines. Verify calls it a
// torn write at the end, and the next session answers all of it, from the
// start of the line the hole is in, with one recovery record.
func TestPowerLossHole(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	for name, c := range map[string]struct {
		torn   string
		before verify.Status // what verify says before the next session answers it
	}{
		"lines after the hole": {`{"v":2,"seq":9,"ts":"20` + strings.Repeat("\x00", 4096) + "\"}\n" + `{"v":2,"seq":10}` + "\n" + `{"v":2,"se`, verify.Incomplete},
		"ends with a line end": {`{"v":2,"seq":9,"ts":"20` + strings.Repeat("\x00", 100) + `"kind":"x"}` + "\n", verify.Incomplete},
		"hole at a line start": {strings.Repeat("\x00", 3000) + `{"v":2,"seq":10}` + "\n", verify.Incomplete},
		// NULs never pass a signature off as torn, until a recovery
		// (signed) answers them.
		"a signature after it": {`{"v":2,"seq":9` + strings.Repeat("\x00", 500) + `,"sig":"ed25519:AAAA"}` + "\n", verify.Invalid},
	} {
		torn := c.torn
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			session(t, path, key, 2)
			f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(torn + strings.Repeat("\x00", 8192)) // and pre-zeroed space after
			f.Close()
			before, _ := os.ReadFile(path)
			rep := verifyBytes(t, before, verify.Options{Key: pub})
			if rep.Status != c.before {
				t.Fatalf("Verify(hole, not yet recovered) = %v %v %v; want %v", rep.Status, rep.Problems, rep.Gaps, c.before)
			}
			if c.before == verify.Incomplete && (len(rep.Problems) != 0 || len(rep.Gaps) != 1 || !strings.Contains(rep.Gaps[0].Msg, "torn write")) {
				t.Fatalf("Verify(hole, not yet recovered) = %v %v; want one gap: a torn write at the end", rep.Problems, rep.Gaps)
			}
			session(t, path, key, 2)
			after, _ := os.ReadFile(path)
			if !bytes.HasPrefix(after, content(before)) {
				t.Fatalf("recovery rewrote existing bytes")
			}
			rep = verifyBytes(t, after, verify.Options{Key: pub})
			if rep.Status != verify.Valid || len(rep.Sessions) != 2 {
				t.Fatalf("Verify(hole, recovered) = %v %v %v; want valid, 2 sessions", rep.Status, rep.Problems, rep.Gaps)
			}
			if n := bytes.Count(after, []byte(`"kind":"recovery"`)); n != 1 {
				t.Fatalf("%d recovery records; want 1", n)
			}
		})
	}
}

// NULs inside a log are not space. Near its end they are read as a torn
// write (what a power loss leaves, and no more than a cut would hide);
// further back, nothing answers them and the log is invalid.
func TestNULsInsideALog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	key := testKey(t)
	j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	j.Append(&record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet})
	// Groups of 64 intents: one signature each, not one per record.
	for j.f.z.content() < 2*(segment.MaxUnsynced+record.MaxLine) {
		var seq uint64
		for range 64 {
			seq, _ = j.Append(&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, RequestDigest: record.Digest{1}})
		}
		j.Wait(seq, BeforeResponse)
	}
	j.Close()
	data, _ := os.ReadFile(path)
	for _, c := range []struct {
		at   int
		want verify.Status
	}{
		{bytes.Index(data, []byte(`"kind":"intent"`)), verify.Invalid},
		{len(data) - 100, verify.Incomplete},
		// In the last line (Close signs it): after its signature's
		// field, a tail torn off the line, whatever came before (an att
		// it may carry, which a loaded machine's timing puts there); in
		// its fields before that signature, a hole in a signed record.
		{bytes.LastIndex(data, []byte(record.SigField)) + len(record.SigField) + 8, verify.Incomplete},
		{bytes.LastIndexByte(data[:len(data)-1], '\n') + 20, verify.Invalid},
	} {
		bad := bytes.Clone(data)
		copy(bad[c.at:], "\x00\x00\x00\x00")
		if rep := verifyBytes(t, bad, verify.Options{}); rep.Status != c.want {
			t.Errorf("Verify(NULs at byte %d of %d) = %v %v; want %v", c.at, len(bad), rep.Status, rep.Problems, c.want)
		}
		got, _ := io.ReadAll(segment.NewContentReader(bytes.NewReader(bad)))
		if !bytes.Equal(got, bad) {
			t.Fatalf("ContentReader dropped NULs that are followed by more")
		}
	}
}

// A failed sync of pre-zeroed space fails the journal closed: it may have
// consumed the error of a record's page (the kernel reports a writeback
// error once per open file).
func TestPreZeroSyncFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: testKey(t), FS: errorfs.Wrap(vfs.OS, errorfs.New(errorfs.Fail(errorfs.Kind(errorfs.OpZeroSync), errorfs.EIO)))})
	if err != nil {
		t.Fatal(err)
	}
	j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
	var werr error
	for i := 0; i < 1000 && werr == nil; i++ {
		seq, err := j.Append(&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, RequestDigest: record.Digest{1}})
		if err != nil {
			werr = err
			break
		}
		werr = j.Wait(seq, BeforeRequest)
	}
	if !errors.Is(werr, syscall.EIO) || !strings.Contains(werr.Error(), "fdatasync") {
		t.Fatalf("Wait after the pre-zeroing sync failed = %v; want the EIO, as an fdatasync error", werr)
	}
	size := fileSize(t, path)
	if _, err := j.Append(&record.Intent{}); err == nil {
		t.Fatal("Append after the failure succeeded")
	}
	j.Close()
	if got := fileSize(t, path); got > size {
		t.Fatalf("the file grew from %d to %d bytes after the failure", size, got)
	}
}

// Over pre-zeroed space no more than maxUnsynced bytes are ever unsynced,
// even in one write longer than that: what lets Open find a hole.
func TestUnsyncedBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := logFS{vfs.OS}.OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := f.z
	z.preZero(preZeroChunk)
	line := append(bytes.Repeat([]byte("x"), 399), '\n')
	big := bytes.Repeat(line, 3*segment.MaxUnsynced/len(line))
	for i, p := range [][]byte{line, big, line, big[:segment.MaxUnsynced-100], line, big} {
		if i == 5 {
			// Pre-zeroing stopped (a failed extension): the space it
			// wrote is still written over, and still bounded.
			z.mu.Lock()
			z.chunk = 0
			z.mu.Unlock()
		}
		if n, err := f.Write(p); err != nil || n != len(p) {
			t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
		}
		if u := z.end - z.synced; u > segment.MaxUnsynced {
			t.Fatalf("%d bytes unsynced after a write of %d; want at most %d", u, len(p), segment.MaxUnsynced)
		}
	}
	if err := f.Sync(); err != nil || z.synced != z.end {
		t.Fatalf("Sync() = %v; synced %d of %d", err, z.synced, z.end)
	}
}

// A log rotated at less than a MiB keeps no more zeros ahead than its
// segments hold: a 4 KiB segment is not worth a MiB of zeros.
func TestPreZeroChunkFollowsMaxSize(t *testing.T) {
	for _, tt := range []struct {
		maxSize, want int64
	}{{0, preZeroChunk}, {4 << 10, minPreZeroChunk}, {300 << 10, 300 << 10}, {64 << 20, preZeroChunk}} {
		if got := preZeroChunkFor(tt.maxSize); got != tt.want {
			t.Errorf("preZeroChunkFor(%d) = %d; want %d", tt.maxSize, got, tt.want)
		}
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: testKey(t), MaxSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
	for range 40 {
		seq, _ := j.Append(&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, RequestDigest: record.Digest{1}})
		if err := j.Wait(seq, BeforeRequest); err != nil {
			t.Fatal(err)
		}
		j.mu.Lock()
		z := j.f.z
		j.mu.Unlock()
		z.mu.Lock()
		ahead := z.zeroed - z.end
		z.mu.Unlock()
		if ahead > 2*minPreZeroChunk {
			t.Fatalf("%d bytes of zeros ahead of a log rotated at 4 KiB; want at most %d", ahead, 2*minPreZeroChunk)
		}
	}
}

// filling is a file whose hole is filled once it has been read: a write
// over pre-zeroed space that a reader overtook.
type filling struct {
	data, filled []byte
	after        int // reads that see data
	reads        int
}

func (f *filling) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	src := f.data
	if f.reads > f.after {
		src = f.filled
	}
	if off >= int64(len(src)) {
		return 0, io.EOF
	}
	n := copy(p, src[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// A hole is read again before it is believed: a write in progress that
// overtook the reader has filled it by then; a hole a power loss left has
// not.
func TestContentReaderSettlesHoles(t *testing.T) {
	filled := []byte("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n")
	hole := bytes.Clone(filled)
	copy(hole[8:], "\x00\x00\x00\x00\x00\x00\x00\x00")
	for _, tt := range []struct {
		name string
		f    *filling
		want []byte
	}{
		// Reads: the first line, the hole, the look past it; then the
		// wait, and the hole read again.
		{"write in progress", &filling{data: hole, filled: filled, after: 3}, filled},
		{"filled while looked past", &filling{data: hole, filled: filled, after: 2}, filled},
		{"hole that stays", &filling{data: hole, filled: hole}, hole},
	} {
		got, err := io.ReadAll(segment.NewContentReader(tt.f))
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("%s: ContentReader read %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// The first group of a session grows the file (Close trimmed its zeros
// away): its sync, on its waiters' path, must not also write back zeros,
// so no extension is in progress or done when it runs; the extension
// starts once that sync is done (the next groups find zeros ahead).
func TestPreZeroAfterFirstSync(t *testing.T) {
	for _, level := range []string{"strict", "reply"} {
		t.Run(level, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			key := testKey(t)
			for session := range 2 { // a new log, then the same one continued
				var (
					z         atomic.Pointer[zeroer]
					syncs     atomic.Int32
					zeroFirst atomic.Bool
				)
				hook := errorfs.PredicateFunc(func(op errorfs.Op) bool {
					if op.Kind == errorfs.OpSync && syncs.Add(1) == 1 {
						z := z.Load()
						z.mu.Lock()
						zeroFirst.Store(z.busy || z.zeroed > z.end)
						z.mu.Unlock()
					}
					return false
				})
				fs, _ := faultOS(errorfs.Fail(hook, nil))
				j, err := Open(path, Options{Durability: mustDurability(t, level), Key: key, FS: fs})
				if err != nil {
					t.Fatal(err)
				}
				z.Store(j.f.z)
				j.Append(&record.SessionStart{Aegis: "t", Durability: level, PolicySet: record.PassThroughSet})
				seq, _ := j.Append(&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, RequestDigest: record.Digest{1}})
				if err := j.Wait(seq, BeforeResponse); err != nil {
					t.Fatal(err)
				}
				zz := z.Load()
				zz.mu.Lock()
				started := zz.busy || zz.zeroed > zz.end
				zz.mu.Unlock()
				if syncs.Load() == 0 || zeroFirst.Load() || !started {
					t.Errorf("session %d: %d syncs, zeros ahead of the first: %v, extension started after it: %v; want none ahead, then started",
						session, syncs.Load(), zeroFirst.Load(), started)
				}
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
