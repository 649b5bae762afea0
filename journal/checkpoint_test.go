package journal

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/aegisrelay/aegis/internal/interleave"
	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/tlog"
)

// logLines returns the lines of a log file (one file, no torn tail).
func logLines(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(content(data), []byte("\n")), []byte("\n"))
}

// openNote opens a checkpoint as any signed-note client would: with
// x/mod's note package and the verifier key of the log's public key.
func openNote(t testing.TB, msg []byte, pub ed25519.PublicKey) (origin string, size int64, root string) {
	t.Helper()
	origin, _, _ = strings.Cut(string(msg), "\n")
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open(%q) = %v", msg, err)
	}
	f := strings.Split(n.Text, "\n")
	if len(f) != 4 || f[3] != "" {
		t.Fatalf("checkpoint text %q: want three lines", n.Text)
	}
	var sz int64
	for _, c := range f[1] {
		sz = sz*10 + int64(c-'0')
	}
	return f[0], sz, f[2]
}

func writeCalls(t *testing.T, j *Journal, calls int) {
	t.Helper()
	seq, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet})
	if err == nil {
		err = j.Wait(seq, BeforeResponse)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := newCallRecords()
	for i := range calls {
		if err := c.call(j, i); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointFile: a session with checkpoints every record leaves a
// checkpoint of the whole log, signed by the log's key under its origin
// (note.Open), whose root is the log's as x/mod's tlog computes it, and a
// history of every checkpoint written, each of them a state the log
// extends (tlog.CheckFiles). A second session continues the tree where
// the first left it.
func TestCheckpointFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	cpf := filepath.Join(dir, "audit.checkpoint")
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	for session, calls := range []int{5, 3} {
		j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key,
			Checkpoint: CheckpointOptions{File: cpf, Every: 1, Interval: -1}})
		if err != nil {
			t.Fatal(err)
		}
		writeCalls(t, j, calls)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		lines := logLines(t, path)
		msg, err := os.ReadFile(cpf)
		if err != nil {
			t.Fatal(err)
		}
		origin, size, root := openNote(t, msg, pub)
		if want := tlog.Origin(lines[0]); origin != want {
			t.Errorf("session %d: origin %q; want %q", session, origin, want)
		}
		if size != int64(len(lines)) {
			t.Errorf("session %d: checkpoint size %d; want the log's %d lines", session, size, len(lines))
		}
		if want := journaltest.RFC6962Root(t, lines); root != want.String() {
			t.Errorf("session %d: checkpoint root %s; want x/mod tlog's %s", session, root, want)
		}
		hist, err := os.ReadFile(cpf + HistoryExt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(hist, msg) {
			t.Errorf("session %d: the history does not end with the checkpoint file's checkpoint", session)
		}
		n := len(tlog.Split(hist))
		if n < session+1 {
			t.Errorf("session %d: %d checkpoints in the history; want at least one per session", session, n)
		}
		res, err := tlog.CheckFiles(mustSet(t, path), []string{cpf, cpf + HistoryExt}, pub)
		if err != nil {
			t.Errorf("session %d: CheckFiles = %v; want nil", session, err)
		} else if res.Records != uint64(len(lines)) || res.Checkpoints != n+1 {
			t.Errorf("session %d: CheckFiles read %d records and %d checkpoints; want %d and %d", session, res.Records, res.Checkpoints, len(lines), n+1)
		}
	}
}

// TestCheckpointWhileOpen: by the interval alone, or by Every alone, a
// checkpoint of the records written is written while the journal is
// open, not only at Close.
func TestCheckpointWhileOpen(t *testing.T) {
	for _, opts := range []CheckpointOptions{{Interval: time.Millisecond}, {Every: 1, Interval: -1}} {
		checkpointWhileOpen(t, opts)
	}
}

func checkpointWhileOpen(t *testing.T, opts CheckpointOptions) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	cpf := filepath.Join(dir, "cp")
	opts.File = cpf
	key := testKey(t)
	j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key, Checkpoint: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	writeCalls(t, j, 2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		msg, err := os.ReadFile(cpf)
		if err == nil {
			if _, size, _ := openNote(t, msg, key.Public().(ed25519.PublicKey)); size == 5 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%+v: no checkpoint of 5 records while open after 10s (last read: %q, %v)", opts, msg, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCheckpointRefusesBrokenChain: a log whose hash chain cannot be
// followed to its last record (a record rewritten without the chain
// after it) is refused when checkpoints are asked for: no honest
// checkpoint can be made of it.
func TestCheckpointRefusesBrokenChain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	key := testKey(t)
	j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, j, 2)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte(`"read_file"`), []byte(`"rm_rf_file"`), 1)
	os.WriteFile(path, data, 0o600)
	_, err = Open(path, Options{Durability: mustDurability(t, "none"), Key: key, Checkpoint: CheckpointOptions{File: filepath.Join(dir, "cp")}})
	if err == nil || !strings.Contains(err.Error(), "hash chain holds") {
		t.Fatalf("Open of a rewritten log with checkpoints = %v; want a refusal naming the chain", err)
	}
}

func mustSet(t *testing.T, path string) *segment.Set {
	t.Helper()
	sets, err := segment.Sets([]string{path}, true)
	if err != nil || len(sets) != 1 {
		t.Fatalf("segment.Sets(%s) = %v, %v; want one log", path, sets, err)
	}
	return sets[0]
}

// BenchmarkCheckpoint is the cost of checkpoints to a recorded call at
// strict: one appender, one tools/call per op (intent and outcome, each
// its own group, each fdatasynced), writing no checkpoint ("off") or one
// after every group ("every-group": Every 1, as often as the checkpoint
// goroutine keeps up; checkpoints/call says how often that is). Each
// reports its p50 and p99 call latency beside the fdatasync floor timed
// in the same sub-benchmark, interleaved with its loop (8 ops after every
// 16 calls, timer stopped), and p50 ÷ 2 floors. With -count N the two
// alternate, N times each; the cost of checkpoints is the ratio of their
// p50-per-2-floors medians (target ≤ 1.03).
//
//	go test -run XXX -bench Checkpoint -benchtime 1000x -count 5 ./journal/
func BenchmarkCheckpoint(b *testing.B) {
	for _, every := range []int{0, 1} {
		// Every: 1 asks for a checkpoint after every commit group; the
		// journal writes at most one per MinCheckpointGap, so the row
		// measures checkpoints at that cap, and says so in its name.
		name := "off"
		if every > 0 {
			name = "every-100ms"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			il := &interleave.Sampler{Every: 16, Per: 8}
			ff := openFloor(b, dir)
			kf := il.Add(func() { ff.op(b) })
			il.Sample(20)
			var cp CheckpointOptions
			if every > 0 {
				cp = CheckpointOptions{File: filepath.Join(dir, "audit.checkpoint"), Every: every, Interval: -1}
			}
			j, err := Open(filepath.Join(dir, "audit.jsonl"), Options{Durability: mustDurability(b, "strict"), Key: benchKey, Checkpoint: cp})
			if err != nil {
				b.Fatal(err)
			}
			seq, err := j.Append(&record.SessionStart{Aegis: "bench", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet})
			if err == nil {
				err = j.Wait(seq, BeforeResponse)
			}
			if err != nil {
				b.Fatal(err)
			}
			c := newCallRecords()
			lat := make([]int64, 0, b.N)
			b.ReportAllocs()
			n := 0
			start := time.Now()
			for b.Loop() {
				t0 := time.Now()
				if err := c.call(j, n); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0).Nanoseconds())
				n++
				il.Tick(b)
			}
			b.StopTimer()
			elapsed := time.Since(start)
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
			if every > 0 {
				checkBenchCheckpoints(b, dir, cp.File, j.cpWriting.Load(), elapsed)
			}
			slices.Sort(lat)
			floor := il.Mean(kf)
			b.ReportMetric(floor, "floor-ns")
			b.ReportMetric(percentile(lat, 0.5), "p50-us")
			b.ReportMetric(percentile(lat, 0.99), "p99-us")
			b.ReportMetric(percentile(lat, 0.5)*1e3/(2*floor), "p50/2floors")
			b.ReportMetric(float64(j.cpWriting.Load())/float64(max(n, 1)), "checkpoints/call")
		})
	}
}

// checkBenchCheckpoints fails BenchmarkCheckpoint's checkpointed row
// unless what it claims to measure happened: the history holds every
// checkpoint signed, each a checkpoint of the log's key, the last one
// covering every record, and while calls ran they were written at the
// cap (at least one per two MinCheckpointGap of the loop, the one at
// Close not counted).
func checkBenchCheckpoints(b *testing.B, dir, cpf string, signed uint64, elapsed time.Duration) {
	b.Helper()
	hist, err := os.ReadFile(cpf + HistoryExt)
	if err != nil {
		b.Fatal(err)
	}
	notes := tlog.Split(hist)
	if uint64(len(notes)) != signed {
		b.Fatalf("%d checkpoints in the history; the journal signed %d", len(notes), signed)
	}
	pub := benchKey.Public().(ed25519.PublicKey)
	for _, n := range notes {
		openNote(b, n, pub)
	}
	lines := logLines(b, filepath.Join(dir, "audit.jsonl"))
	if _, size, _ := openNote(b, notes[len(notes)-1], pub); size != int64(len(lines)) {
		b.Fatalf("last checkpoint covers %d records; the log has %d", size, len(lines))
	}
	if want := int(elapsed / (2 * MinCheckpointGap)); len(notes)-1 < want {
		b.Fatalf("%d checkpoints in %v of calls; want at least %d (one per %v at most)", len(notes)-1, elapsed, want, MinCheckpointGap)
	}
	b.ReportMetric(float64(len(notes)-1)/elapsed.Seconds(), "checkpoints/s")
}

// TestCheckpointContinuesTorn: a log a crash left torn, continued with
// checkpoints, gets checkpoints that a third party reading the log
// (tlog.CheckFiles, whose chain passes over torn lines) accepts: the
// writer's tree, rebuilt at Open and grown by the recovery, has the
// leaves the reader finds. Both torn tails: a record cut short, and a
// record whole but for its '\n' (the reader sees two lines of that seq,
// and takes the recovery's).
func TestCheckpointContinuesTorn(t *testing.T) {
	g := mustGenuine(t)
	cut := bytes.Index(g, []byte(tornLine))
	// The whole line of seq 12, without its '\n'.
	s12 := bytes.Index(g, []byte(`{"v":2,"seq":12,`))
	e12 := s12 + bytes.IndexByte(g[s12:], '\n')
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"record cut short", g[:cut+len(tornLine)]},
		{"record whole but its newline", g[:e12]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.jsonl")
			cpf := filepath.Join(dir, "audit.checkpoint")
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: fuzzKey, Checkpoint: CheckpointOptions{File: cpf, Every: 1, Interval: -1}})
			if err != nil {
				t.Fatal(err)
			}
			writeCalls(t, j, 2)
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			res, err := tlog.CheckFiles(mustSet(t, path), []string{cpf, cpf + HistoryExt}, fuzzKey.Public().(ed25519.PublicKey))
			if err != nil {
				t.Fatalf("CheckFiles = %v; want the log to extend every checkpoint", err)
			}
			data, _ := os.ReadFile(path)
			if want := uint64(bytes.Count(content(data), []byte("\n")) - 1); res.Records != want {
				t.Errorf("%d leaves; want every line but the torn one, %d", res.Records, want)
			}
		})
	}
}

// TestCheckpointFault: a checkpoint that cannot be written fails the
// journal closed, as any audit I/O does, and leaves no checkpoint file.
func TestCheckpointFault(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	cpf := filepath.Join(dir, "audit.checkpoint")
	fs, _ := faultOS(errorfs.Fail(errorfs.And(errorfs.Kind(errorfs.OpCreate), errorfs.Path(cpf+segment.TmpExt)), errorfs.EIO))
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: testKey(t), FS: fs, Checkpoint: CheckpointOptions{File: cpf, Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, j, 1)
	if err := j.Close(); !errors.Is(err, ErrIO) || !errors.Is(err, errorfs.EIO) {
		t.Fatalf("Close with a checkpoint that cannot be created = %v; want ErrIO, EIO", err)
	}
	if _, err := os.Stat(cpf); !os.IsNotExist(err) {
		t.Errorf("checkpoint file after the fault: %v; want none", err)
	}
}

// TestLastCheckpointRefusals: a checkpoint file that holds no checkpoint
// of the log's key (another key's, text, a FIFO, which is never opened)
// is refused with ErrRolledBack, and nothing is written.
func TestLastCheckpointRefusals(t *testing.T) {
	dir := t.TempDir()
	path, cpf := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.checkpoint")
	other := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(other, Options{Durability: mustDurability(t, "none"), Key: testKey(t),
		Checkpoint: CheckpointOptions{File: other + ".checkpoint", Every: 1, Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	writeCalls(t, j, 1)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	otherKeys := readFile(t, other+".checkpoint")
	for _, tt := range []struct {
		name string
		make func() error
	}{
		{"another key's checkpoint", func() error { return os.WriteFile(cpf, otherKeys, 0o600) }},
		{"text", func() error { return os.WriteFile(cpf, []byte("hello\n"), 0o600) }},
		{"a FIFO", func() error { return syscall.Mkfifo(cpf, 0o600) }},
	} {
		os.Remove(cpf)
		os.Remove(path)
		if err := tt.make(); err != nil {
			t.Fatal(err)
		}
		key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
		j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key,
			Checkpoint: CheckpointOptions{File: cpf, Every: 1, Interval: -1}})
		if err == nil {
			j.Close()
		}
		if !errors.Is(err, ErrRolledBack) {
			t.Errorf("%s: Open = %v; want ErrRolledBack", tt.name, err)
		}
		if _, err := os.Stat(cpf + HistoryExt); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a history was written (%v); want none", tt.name, err)
		}
	}
}
