package journal

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/regular"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

// fileState is what a refusal must leave as it was: the bytes, the size
// and the modification time.
type fileState struct {
	data  []byte
	size  int64
	mtime time.Time
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{data, st.Size(), st.ModTime()}
}

func (s fileState) same(o fileState) bool {
	return bytes.Equal(s.data, o.data) && s.size == o.size && s.mtime.Equal(o.mtime)
}

// TestOpenRefusesNonLog: Open refuses every non-empty file that is not a
// log with ErrNotLog, and leaves it byte for byte as it was, with its size
// and mtime: a file ending in NULs is not trimmed, a torn-looking tail is
// not ended with '\n'.
func TestOpenRefusesNonLog(t *testing.T) {
	key := testKey(t)
	logPath := filepath.Join(t.TempDir(), "log.jsonl")
	session(t, logPath, key, 2)
	log, _ := os.ReadFile(logPath)
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip("no /bin/true to copy:", err)
	}
	nuls := func(n int) string { return strings.Repeat("\x00", n) }
	tests := []struct {
		name string
		data string
	}{
		{"binary (/bin/true)", string(elf)},
		{"binary ending in NULs", string(elf) + nuls(4096)},
		{"text", "hello world\n"},
		{"text without a line end", "hello"},
		{"text ending in NULs", "hello\n" + nuls(1<<16)},
		{"JSON that is not a record", `{"a":1}` + "\n"},
		{"JSON without a line end", `{"a":1}`},
		{"JSON with v and seq in another order", `{"seq":0,"v":2}`},
		{"record with another version", `{"v":3,"seq":0`},
		{"nothing but NULs", nuls(8192)},
		{"NULs then text, far from the end", nuls(2<<20) + "hello\n"},
		{"log, then a garbage line", string(log) + "garbage\n"},
		{"log, then garbage with no line end", string(log) + "garbage"},
		{"log, then a torn line holding a control byte", string(log) + `{"v":2,"seq":9,"ts":"` + "\x01"},
		{"log, then binary", string(log) + string(elf[:1000])},
		{"log, then text and NULs", string(log) + "not a record" + nuls(1<<20)},
		{"PEM key", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			os.Chtimes(path, old, old)
			before := stateOf(t, path)
			for _, d := range []string{"strict", "none"} {
				j, err := Open(path, Options{Durability: mustDurability(t, d), Key: key})
				if err == nil {
					j.Close()
				}
				if !errors.Is(err, ErrNotLog) {
					t.Errorf("Open(%s, %s) = %v; want ErrNotLog", tt.name, d, err)
				}
				if after := stateOf(t, path); !before.same(after) {
					t.Fatalf("Open(%s, %s) changed the file it refused: %d bytes, mtime %v; was %d, %v",
						tt.name, d, after.size, after.mtime, before.size, before.mtime)
				}
			}
		})
	}
}

// TestOpenAcceptsTorn: what a torn write does leave is continued, not
// refused: a record cut anywhere (even inside its first bytes), and a
// hole of NULs at the very start of a young log.
func TestOpenAcceptsTorn(t *testing.T) {
	key := testKey(t)
	for _, tail := range []string{`{`, `{"v":2,"seq"`, `{"v":2,"seq":7,"ts":"2026-`, "{\"v\":2,\"seq\":7,\x00\x00\x00"} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		session(t, path, key, 1)
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(tail)
		f.Close()
		j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key})
		if err != nil {
			t.Errorf("Open(log + torn %q) = %v; want it continued", tail, err)
			continue
		}
		j.Close()
	}
	// A power loss that lost the first page of a new log's first write.
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	os.WriteFile(path, []byte(strings.Repeat("\x00", 4096)+`,"kind":"session_end"}`+"\n"+strings.Repeat("\x00", 4096)), 0o600)
	j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key})
	if err != nil {
		t.Fatalf("Open(hole at the start of a young log) = %v; want a recovery", err)
	}
	j.Close()
}

// TestOpenRefusesNotRegular: an --audit path that names a directory, a
// FIFO or a device is refused with ErrNotRegular (not an I/O failure),
// without opening it: a FIFO's writer is not released, /dev/null not
// written.
func TestOpenRefusesNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero-link")
	os.Symlink("/dev/zero", link)
	for _, path := range []string{dir, fifo, "/dev/null", link} {
		j, err := Open(path, Options{Key: testKey(t)})
		if err == nil {
			j.Close()
		}
		if !errors.Is(err, ErrNotRegular) || errors.Is(err, ErrIO) {
			t.Errorf("Open(%s) = %v; want ErrNotRegular, not ErrIO", path, err)
		}
	}
}

// TestReadWhole: the files aegis reads whole are capped and must be
// regular: /dev/zero, a FIFO with no writer, a symlink to /dev/zero, a
// 2 GiB sparse file are refused at once, naming the file and the limit.
func TestReadWhole(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero-link")
	os.Symlink("/dev/zero", link)
	sparse := filepath.Join(dir, "sparse")
	if f, err := os.Create(sparse); err == nil {
		f.Truncate(2 << 30)
		f.Close()
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, bytes.Repeat([]byte("a"), record.MaxHeadFile+1), 0o600)
	exact := filepath.Join(dir, "exact")
	os.WriteFile(exact, bytes.Repeat([]byte("a"), record.MaxHeadFile), 0o600)
	tests := []struct {
		path string
		want error
	}{
		{"/dev/zero", ErrNotRegular},
		{fifo, ErrNotRegular},
		{link, ErrNotRegular},
		{dir, ErrNotRegular},
		{sparse, ErrTooLarge},
		{big, ErrTooLarge},
		{exact, nil},
	}
	for _, tt := range tests {
		done := make(chan error, 1)
		go func() {
			_, _, err := regular.ReadFile(tt.path, "a head file", record.MaxHeadFile)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, tt.want) || tt.want != nil && (!strings.Contains(err.Error(), tt.path) || (tt.want == ErrTooLarge && !strings.Contains(err.Error(), "4096"))) {
				t.Errorf("readWhole(%s) = %v; want %v naming the file (and the limit)", tt.path, err, tt.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("readWhole(%s) has not returned after 10s", tt.path)
		}
	}
}

// TestReadPrivateKeyFileMode: a key file open to group or others by any
// permission bit is refused with ErrKeyMode, unless allowed.
func TestReadPrivateKeyFileMode(t *testing.T) {
	key := testKey(t)
	pemBytes, _ := record.MarshalPrivateKey(key)
	path := filepath.Join(t.TempDir(), "signing.key")
	os.WriteFile(path, pemBytes, 0o600)
	for _, tt := range []struct {
		mode      os.FileMode
		allowOpen bool
		want      error
	}{
		{0o600, false, nil},
		{0o400, false, nil},
		{0o644, false, record.ErrKeyMode},
		{0o640, false, record.ErrKeyMode},
		{0o604, false, record.ErrKeyMode},
		{0o620, false, record.ErrKeyMode},
		{0o601, false, record.ErrKeyMode},
		{0o644, true, nil},
	} {
		os.Chmod(path, tt.mode)
		k, err := record.ReadPrivateKeyFile(path, tt.allowOpen)
		if !errors.Is(err, tt.want) || err == nil && !k.Equal(key) {
			t.Errorf("ReadPrivateKeyFile(mode %04o, allowOpen %v) = %v; want %v", tt.mode, tt.allowOpen, err, tt.want)
		}
		if tt.want == record.ErrKeyMode && !strings.Contains(err.Error(), fmt.Sprintf("permissions %04o for '%s' are too open", tt.mode, path)) {
			t.Errorf("ReadPrivateKeyFile(mode %04o) error %q does not name the mode", tt.mode, err)
		}
	}
}

// TestCollect: a directory stands for every regular file in it. A log
// under any name is read; a head file and a public key (by content, not
// name) and what is not a regular file are noted, never passed over in
// silence; an empty directory holds no log; a FIFO named on its own is
// refused.
func TestCollect(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	session(t, p("audit.log"), key, 1)
	os.WriteFile(p("notes.txt"), []byte("hello\n"), 0o600)
	os.WriteFile(p("audit.head"), record.AppendHeadLine(nil, record.Head{Seq: 3}, time.Unix(0, 0).UTC(), key), 0o600)
	os.WriteFile(p("k.pub"), []byte(record.FormatPublicKey(pub)+"\n"), 0o644)
	pemBytes, _ := record.MarshalPrivateKey(key)
	os.WriteFile(p("k"), pemBytes, 0o600)
	os.Mkdir(p("sub"), 0o700)
	syscall.Mkfifo(p("fifo"), 0o600)
	in, err := segment.Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	var bases []string
	for _, s := range in.Sets {
		bases = append(bases, s.Base)
	}
	if want := []string{p("audit.log"), p("notes.txt")}; !slices.Equal(bases, want) {
		t.Errorf("Collect(dir) sets = %v; want %v", bases, want)
	}
	notes := strings.Join(in.Notes, "\n")
	for _, want := range []string{p("audit.head") + ": a head file", p("k.pub") + ": a public key", p("k") + ": a private key", p("sub") + ": a directory", p("fifo") + ": a FIFO"} {
		if !strings.Contains(notes, want) {
			t.Errorf("Collect(dir) notes lack %q:\n%s", want, notes)
		}
	}
	for _, s := range in.Sets {
		rep, err := verify.Set(s, verify.Options{Key: pub})
		if err != nil {
			t.Fatal(err)
		}
		want := verify.Valid
		if s.Base == p("notes.txt") {
			want = verify.Invalid
			if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].String(), "not an aegis audit log") || len(rep.Gaps) != 0 {
				t.Errorf("VerifySet(notes.txt) problems %v, gaps %v; want one: not an aegis audit log", rep.Problems, rep.Gaps)
			}
		}
		if rep.Status != want {
			t.Errorf("VerifySet(%s) = %v %v; want %v", s.Base, rep.Status, rep.Problems, want)
		}
	}
	empty := t.TempDir()
	if in, err := segment.Collect([]string{empty}, true); err != nil || len(in.Sets) != 0 {
		t.Errorf("Collect(empty dir) = %v, %v; want no sets", in, err)
	}
	if _, err := segment.Collect([]string{p("fifo")}, true); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Collect(fifo) = %v; want ErrNotRegular", err)
	}
}
