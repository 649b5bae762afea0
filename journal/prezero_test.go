package journal

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
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
			j.Append(&SessionStart{Aegis: "t", Durability: level, PolicySet: PassThroughSet})
			var seq uint64
			for i := range 200 {
				seq, _ = j.Append(&Intent{Call: Call{Type: IDNumber, Text: []byte{byte('1' + i%9)}}, RequestDigest: Digest{1}})
				if err := j.Wait(seq, BeforeResponse); err != nil {
					t.Fatal(err)
				}
			}
			content := j.f.(*osFile).z.content()
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
			rep := verifyFile(t, path, VerifyOptions{Key: key.Public().(ed25519.PublicKey)})
			if rep.Status != Incomplete || len(rep.Problems) != 0 || rep.Records != 201 {
				t.Fatalf("Verify(live file) = %v %v, %d records; want incomplete (no session_end), 201 records", rep.Status, rep.Problems, rep.Records)
			}
			set := verifySetPath(t, path, VerifyOptions{})
			if set.Status != Incomplete || len(set.Problems) != 0 || set.Records != 201 {
				t.Fatalf("VerifySet(live file) = %v %v, %d records", set.Status, set.Problems, set.Records)
			}
			got, err := io.ReadAll(NewContentReader(bytes.NewReader(live)))
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
			if rep := verifyBytes(t, data, VerifyOptions{}); rep.Status != Incomplete || len(rep.Problems) != 0 || rep.Records != 201 {
				t.Fatalf("Verify(closed) = %v %v, %d records", rep.Status, rep.Problems, rep.Records)
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
	f.WriteAt(make([]byte, 3*maxLine), int64(len(content)))
	f.Close()
	crashed, _ := os.ReadFile(path)
	for name, r := range map[string]io.Reader{
		"file":        bytes.NewReader(crashed),
		"pipe-sized":  iotest.OneByteReader(bytes.NewReader(crashed[len(crashed)-maxLine-100:])),
		"half-reads":  iotest.HalfReader(bytes.NewReader(crashed)),
		"data-errors": iotest.DataErrReader(bytes.NewReader(crashed)),
	} {
		rep, err := Verify(r, VerifyOptions{})
		if err != nil {
			t.Fatal(name, err)
		}
		if name == "pipe-sized" {
			continue // starts mid-log: only that it reads the NULs as nothing
		}
		if rep.Status != Valid || len(rep.Gaps) != 0 {
			t.Errorf("Verify(%s, log + NUL tail) = %v %v %v; want valid", name, rep.Status, rep.Problems, rep.Gaps)
		}
	}
	if rep := verifySetPath(t, path, VerifyOptions{}); rep.Status != Valid {
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
	if rep := verifyBytes(t, after, VerifyOptions{}); rep.Status != Valid || len(rep.Sessions) != 2 {
		t.Errorf("Verify(continued) = %v %v, %d sessions; want valid, 2", rep.Status, rep.Problems, len(rep.Sessions))
	}
}

// NULs inside a log are not space: they are judged like any other bytes.
func TestNULsInsideALog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	session(t, path, testKey(t), 3)
	data, _ := os.ReadFile(path)
	i := bytes.Index(data, []byte(`"kind":"intent"`))
	bad := bytes.Clone(data)
	copy(bad[i:], "\x00\x00\x00\x00")
	rep := verifyBytes(t, bad, VerifyOptions{})
	if rep.Status != Invalid {
		t.Fatalf("Verify(NULs inside a line) = %v; want invalid", rep.Status)
	}
	got, _ := io.ReadAll(NewContentReader(bytes.NewReader(bad)))
	if !bytes.Equal(got, bad) {
		t.Fatalf("ContentReader dropped NULs that are followed by more")
	}
}

// A failed sync of pre-zeroed space fails the journal closed: it may have
// consumed the error of a record's page (the kernel reports a writeback
// error once per open file).
func TestPreZeroSyncFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: testKey(t), FS: failZeroFS{}})
	if err != nil {
		t.Fatal(err)
	}
	j.Append(&SessionStart{Aegis: "t", Durability: "strict", PolicySet: PassThroughSet})
	var werr error
	for i := 0; i < 1000 && werr == nil; i++ {
		seq, err := j.Append(&Intent{Call: Call{Type: IDNumber, Text: []byte("1")}, RequestDigest: Digest{1}})
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
	if _, err := j.Append(&Intent{}); err == nil {
		t.Fatal("Append after the failure succeeded")
	}
	j.Close()
	if got := fileSize(t, path); got > size {
		t.Fatalf("the file grew from %d to %d bytes after the failure", size, got)
	}
}

type failZeroFS struct{ OSFS }

func (failZeroFS) OpenAppend(path string) (File, error) {
	f, err := OSFS{}.OpenAppend(path)
	if err == nil {
		f.(*osFile).z.sync = func(*os.File) error { return syscall.EIO }
	}
	return f, err
}
