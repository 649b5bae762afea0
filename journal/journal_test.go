package journal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/journaltest"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// testKey returns a fresh signing key.
var testKey = journaltest.Key

func mustDurability(t testing.TB, s string) Durability {
	t.Helper()
	d, err := ParseDurability(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// session writes one complete session of every kind of record through the
// journal API, waiting on each record as the relay would.
func session(t testing.TB, path string, key ed25519.PrivateKey, calls int) {
	t.Helper()
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	must := func(b record.Body, bar Barrier) uint64 {
		t.Helper()
		seq, err := j.Append(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Wait(seq, bar); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	must(&record.SessionStart{Aegis: "test", Argv: []string{"server", "--flag", "ünï\"code\n"}, Durability: "strict", PolicySet: record.PassThroughSet}, BeforeRequest)
	must(&record.Enforcement{LandlockABI: 7, FS: []record.FSRule{{Path: "/srv", Access: []string{"read"}}}, NetPorts: []int{443},
		Scopes: []string{"signal"}, SeccompApplied: true, SeccompNetworkDenied: true, IOURingDenied: true}, BeforeRequest)
	var c record.Counts
	for i := range calls {
		id := record.Call{Type: record.IDNumber, Text: []byte(strconv.Itoa(i))}
		if i%3 == 1 {
			id = record.Call{Type: record.IDString, Text: []byte("id-\x01-" + strconv.Itoa(i))}
		}
		in := &record.Intent{Call: id, Tool: []byte("echo"), HasTool: true, RequestDigest: sha256.Sum256([]byte{byte(i)})}
		if i%4 == 2 {
			in.BatchIndex, in.BatchSize = 1, 2
		}
		if i%5 == 3 {
			in.Malformed, in.HasTool = "duplicate key \"name\"", false
		}
		iseq := must(in, BeforeRequest)
		must(&record.Outcome{Call: id, Intent: iseq, ResponseDigest: sha256.Sum256([]byte("r")), HasResponse: true,
			Status: record.StatusOK, LatencyNS: int64(1000 + i)}, BeforeResponse)
		c.Intents++
		c.Outcomes++
	}
	must(&record.Anomaly{Digest: sha256.Sum256([]byte("junk")), Bytes: 4, Reason: "not one JSON value", Forwarded: true}, BeforeRequest)
	must(&record.Anomaly{Digest: sha256.Sum256([]byte(`{"id":"1","result":{}}`)), Response: true, Bytes: 22, Reason: "response: its id answers a call in flight only as some clients read ids", Forwarded: true}, BeforeResponse)
	must(&record.PolicyReload{Set: "sha256:00", Status: "rejected: line 3: bad glob"}, BeforeRequest)
	c.Anomalies = 2
	must(&record.SessionEnd{Reason: record.EndClientEOF, ExitCode: 0, Counts: c}, BeforeResponse)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func verifyFile(t testing.TB, path string, opts verify.Options) *verify.Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := verify.Stream(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verifyBytes(t testing.TB, b []byte, opts verify.Options) *verify.Report {
	t.Helper()
	rep, err := verify.Stream(bytes.NewReader(b), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	key := testKey(t)
	session(t, path, key, 7)
	pub := key.Public().(ed25519.PublicKey)
	rep := verifyFile(t, path, verify.Options{Key: pub})
	if rep.Status != verify.Valid {
		t.Fatalf("Verify pinned = %v %v %v; want valid", rep.Status, rep.Problems, rep.Gaps)
	}
	if rep.Records != 2+14+4 || len(rep.Sessions) != 1 || rep.Sessions[0].Intents != 7 {
		t.Errorf("Verify = %d records, %d sessions; want 20, 1", rep.Records, len(rep.Sessions))
	}
	other := testKey(t).Public().(ed25519.PublicKey)
	if rep := verifyFile(t, path, verify.Options{Key: other}); rep.Status != verify.Invalid {
		t.Errorf("Verify pinned to another key = %v; want invalid", rep.Status)
	}
	// Every line decodes and re-encodes to itself; the file ends in '\n'.
	data, _ := os.ReadFile(path)
	var d record.Decoder
	directions := ""
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		r, err := d.Decode(line)
		if err != nil {
			t.Errorf("Decode(line %d) = %v", i+1, err)
			continue
		}
		if a, ok := r.Body.(*record.Anomaly); ok {
			directions += fmt.Sprint(a.Response, " ")
		}
	}
	if directions != "false true " {
		t.Errorf("anomalies decoded with Response %q; want \"false true \"", directions)
	}
}

func TestAppendSessionsAndKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	k1, k2 := testKey(t), testKey(t)
	session(t, path, k1, 2)
	session(t, path, k2, 3)
	session(t, path, k1, 1)
	rep := verifyFile(t, path, verify.Options{})
	if rep.Status != verify.Valid || len(rep.Sessions) != 3 {
		t.Fatalf("Verify unpinned = %v, %d sessions, %v; want valid, 3", rep.Status, len(rep.Sessions), rep.Problems)
	}
	rep = verifyFile(t, path, verify.Options{Key: k1.Public().(ed25519.PublicKey)})
	if rep.Status != verify.Invalid || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Msg, "not the pinned key") {
		t.Fatalf("Verify pinned to k1 = %v %v; want invalid naming the k2 session", rep.Status, rep.Problems)
	}
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Key: testKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := Open(path, Options{Key: testKey(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v; want ErrLocked", err)
	}
}

func TestOpenRefusesForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	os.WriteFile(path, []byte("hello world\n"), 0o600)
	if _, err := Open(path, Options{Key: testKey(t)}); !errors.Is(err, ErrNotLog) {
		t.Fatalf("Open(foreign file) = %v; want ErrNotLog", err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "hello world\n" {
		t.Errorf("Open changed a foreign file: %q", data)
	}
}

func TestTamper(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	key := testKey(t)
	session(t, path, key, 3)
	session(t, path, key, 2)
	orig, _ := os.ReadFile(path)
	pub := key.Public().(ed25519.PublicKey)
	lines := bytes.SplitAfter(orig, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty string after the last '\n'
	join := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }

	other := filepath.Join(dir, "other.jsonl")
	session(t, other, key, 3)
	otherData, _ := os.ReadFile(other)
	otherLines := bytes.SplitAfter(otherData, []byte("\n"))

	tests := []struct {
		name string
		data []byte
		want verify.Status
	}{
		{"original", orig, verify.Valid},
		{"deleted line", join(append(append([][]byte{}, lines[:4]...), lines[5:]...)), verify.Invalid},
		{"deleted first line", join(lines[1:]), verify.Invalid},
		{"swapped lines", join(append(append(append([][]byte{}, lines[:3]...), lines[4], lines[3]), lines[5:]...)), verify.Invalid},
		{"line from another log", join(append(append(append([][]byte{}, lines[:3]...), otherLines[3]), lines[4:]...)), verify.Invalid},
		{"line from another log replacing", join(append(append(append([][]byte{}, lines[:3]...), otherLines[3]), lines[3:]...)), verify.Invalid},
		{"duplicated line", join(append(append([][]byte{}, lines[:4]...), lines[3:]...)), verify.Invalid},
		{"cut tail", join(lines[:len(lines)-2]), verify.Incomplete},
		{"cut to first session", join(lines[:len(lines)/2]), verify.Incomplete},
		{"blank line inserted", join(append(append(append([][]byte{}, lines[:3]...), []byte("\n")), lines[3:]...)), verify.Invalid},
	}
	for _, tt := range tests {
		if got := verifyBytes(t, tt.data, verify.Options{Key: pub}).Status; got != tt.want {
			t.Errorf("Verify(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}

	// Every single-byte change anywhere but the file's final '\n' makes the
	// log invalid. (Changing that one byte makes the last line torn, which
	// verify reports as incomplete: never valid.) A log of one session of
	// one call holds every kind of record and keeps this quick.
	// The verifications are independent, and run on as many goroutines
	// as there are cores: one at a time, this is the package's longest
	// test.
	small := filepath.Join(dir, "small.jsonl")
	session(t, small, key, 1)
	orig, _ = os.ReadFile(small)
	type flip struct {
		at  int
		xor byte
	}
	var flips []flip
	for i := range orig {
		flips = append(flips, flip{i, 0x01})
		if i%7 == 0 {
			flips = append(flips, flip{i, 0x80})
		}
	}
	var (
		next atomic.Int64
		mu   sync.Mutex
		bad  []string
		wg   sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < len(flips); k = int(next.Add(1) - 1) {
				f := flips[k]
				mut := bytes.Clone(orig)
				mut[f.at] ^= f.xor
				want := verify.Invalid
				if f.at == len(orig)-1 {
					want = verify.Incomplete
				}
				rep, err := verify.Stream(bytes.NewReader(mut), verify.Options{Key: pub, Workers: 1})
				if err == nil && rep.Status == want {
					continue
				}
				got := fmt.Sprint(err)
				if err == nil {
					got = rep.Status.String()
				}
				mu.Lock()
				bad = append(bad, fmt.Sprintf("Verify(byte %d ^= %#x, in %q) = %s; want %v", f.at, f.xor, lineAt(orig, f.at), got, want))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, b := range bad[:min(len(bad), 5)] {
		t.Error(b)
	}
}

func lineAt(b []byte, i int) string {
	s := bytes.LastIndexByte(b[:i], '\n') + 1
	e := bytes.IndexByte(b[i:], '\n')
	if e < 0 {
		return string(b[s:])
	}
	return string(b[s : i+e])
}

func TestHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	key := testKey(t)
	j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := j.Append(&record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet})
	seq, _ = j.Append(&record.SessionEnd{Reason: record.EndClientEOF})
	if err := j.Wait(seq, BeforeResponse); err != nil {
		t.Fatal(err)
	}
	head, ok := j.Head()
	j.Close()
	data, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if !ok || head.Seq != 1 || head.Hash != sha256.Sum256(lines[1]) {
		t.Fatalf("Head() = %v, %v; want seq 1 and the hash of line 2", head, ok)
	}
	if rep := verifyBytes(t, data, verify.Options{Head: &head}); rep.Status != verify.Valid {
		t.Errorf("Verify(--head of itself) = %v %v; want valid", rep.Status, rep.Problems)
	}
	later := record.Head{Seq: 5, Hash: head.Hash}
	if rep := verifyBytes(t, data, verify.Options{Head: &later}); rep.Status != verify.Invalid {
		t.Errorf("Verify(--head beyond the end) = %v; want invalid (cut tail)", rep.Status)
	}
}

func TestTornTailRecovery(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	// (NULs after a torn line are pre-zeroed space the write did not reach.)
	// A torn line is a prefix of a record: other bytes are refused
	// (TestOpenRefusesNonLog).
	for _, torn := range []string{`{"v":2,"seq":9,"ts":"20`, `{`, "{\"v\":2,\"se\x00\x00\x00"} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		session(t, path, key, 2)
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(torn)
		f.Close()
		before, _ := os.ReadFile(path)
		if rep := verifyBytes(t, before, verify.Options{Key: pub}); rep.Status != verify.Incomplete {
			t.Errorf("Verify(torn %q, not yet recovered) = %v %v; want incomplete", torn, rep.Status, rep.Problems)
		}
		session(t, path, key, 2)
		after, _ := os.ReadFile(path)
		if !bytes.HasPrefix(after, bytes.TrimRight(before, "\x00")) {
			t.Fatalf("recovery rewrote existing bytes")
		}
		rep := verifyBytes(t, after, verify.Options{Key: pub})
		if rep.Status != verify.Valid || len(rep.Sessions) != 2 {
			t.Errorf("Verify(torn %q, recovered) = %v %v %v; want valid, 2 sessions", torn, rep.Status, rep.Problems, rep.Gaps)
		}
		if !bytes.Contains(after, []byte(`"kind":"recovery"`)) {
			t.Errorf("no recovery record after torn %q", torn)
		}
	}
}

// A session that crashed (no session_end) leaves the log incomplete.
func TestCrashedSessionIncomplete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	key := testKey(t)
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
	seq, _ := j.Append(&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, RequestDigest: record.Digest{1}})
	j.Wait(seq, BeforeRequest)
	j.Close()
	rep := verifyFile(t, path, verify.Options{})
	if rep.Status != verify.Incomplete || len(rep.Problems) != 0 {
		t.Fatalf("Verify(no session_end) = %v %v; want incomplete, no problems", rep.Status, rep.Problems)
	}
}

func TestGroupCommit(t *testing.T) {
	for _, n := range []int{1, 8, 32, 128} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		fsys, in := faultOS()
		j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: testKey(t), FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		const per = 20
		var wg sync.WaitGroup
		for w := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					seq, err := j.Append(&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte(strconv.Itoa(w*per + i))}})
					if err == nil {
						err = j.Wait(seq, BeforeRequest)
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		j.Close()
		// Close writes one record more, a close record: no record
		// after the last group carries its signature (doc.go).
		recs := n*per + 1
		writes, syncs := in.Count(errorfs.OpWrite), in.Count(errorfs.OpSync)
		if syncs > recs || writes > recs {
			t.Errorf("%d appenders: %d writes, %d syncs for %d records; want at most one each per record", n, writes, syncs, recs)
		}
		if n >= 8 && syncs > n*per/2 {
			t.Errorf("%d appenders: %d syncs for %d records; want records to share syncs", n, syncs, n*per)
		}
		data, _ := os.ReadFile(path)
		if got := bytes.Count(data, []byte("\n")); got != recs {
			t.Errorf("%d appenders: %d lines; want %d", n, got, recs)
		}
	}
}

func TestDurabilityBarriers(t *testing.T) {
	tests := []struct {
		level            string
		reqSync, rspSync bool
	}{
		{"strict", true, true}, {"G3", true, true},
		{"reply", false, true}, {"G2", false, true},
		{"interval:1h", false, false}, {"none", false, false}, {"G0", false, false},
	}
	for _, tt := range tests {
		fsys, in := faultOS()
		j, err := Open(filepath.Join(t.TempDir(), "a.jsonl"), Options{Durability: mustDurability(t, tt.level), Key: testKey(t), FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		seq, _ := j.Append(&record.Intent{})
		j.Wait(seq, BeforeRequest)
		s1 := in.Count(errorfs.OpSync)
		seq, _ = j.Append(&record.Outcome{Intent: seq, Status: record.StatusOK})
		j.Wait(seq, BeforeResponse)
		s2 := in.Count(errorfs.OpSync)
		if (s1 == 1) != tt.reqSync || (s2-s1 == 1) != tt.rspSync {
			t.Errorf("%s: syncs before request %d, before response %d; want %v, %v", tt.level, s1, s2-s1, tt.reqSync, tt.rspSync)
		}
		j.Close()
	}
}

func TestParseDurability(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"strict", "strict", true}, {"G3", "strict", true}, {"reply", "reply", true}, {"g2", "reply", true},
		{"interval", "interval:50ms", true}, {"interval:10ms", "interval:10ms", true}, {"G1:1s", "interval:1s", true},
		{"none", "none", true}, {"G0", "none", true},
		{"fast", "", false}, {"strict:1s", "", false}, {"interval:0s", "", false}, {"interval:x", "", false},
	}
	for _, tt := range tests {
		d, err := ParseDurability(tt.in)
		if (err == nil) != tt.ok || (tt.ok && d.String() != tt.want) {
			t.Errorf("ParseDurability(%q) = %v, %v; want %q, ok %v", tt.in, d, err, tt.want, tt.ok)
		}
	}
}

// TestFaults fails every write index and every sync index of a short run,
// with EIO, ENOSPC and a short write, and checks the fail-closed contract.
func TestFaults(t *testing.T) {
	const records = 6
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	type fault struct {
		name  string
		kind  errorfs.OpKind // errorfs.OpWrite or errorfs.OpSync
		nth   int            // the kind's nth operation fails
		short bool
		err   error
	}
	var faults []fault
	for i := 1; i <= records+1; i++ {
		faults = append(faults,
			fault{"EIO write " + strconv.Itoa(i), errorfs.OpWrite, i, false, errorfs.EIO},
			fault{"ENOSPC write " + strconv.Itoa(i), errorfs.OpWrite, i, false, errorfs.ENOSPC},
			fault{"short write " + strconv.Itoa(i), errorfs.OpWrite, i, true, nil},
			fault{"short write ENOSPC " + strconv.Itoa(i), errorfs.OpWrite, i, true, errorfs.ENOSPC},
			fault{"EIO sync " + strconv.Itoa(i), errorfs.OpSync, i, false, errorfs.EIO},
		)
	}
	for _, f := range faults {
		rule := errorfs.Rule{When: errorfs.Nth(f.nth, errorfs.Kind(f.kind)), Fault: errorfs.Fault{Err: f.err, Short: f.short}}
		fsys, in := faultOS(rule)
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key, FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		var acked []uint64
		var firstErr error
		bodies := []record.Body{&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet}}
		for i := range records - 2 {
			bodies = append(bodies, &record.Intent{RequestDigest: record.Digest{byte(i)}}) // no id: no outcome due
		}
		bodies = append(bodies, &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: records - 2}})
		for _, b := range bodies {
			seq, err := j.Append(b)
			if err == nil {
				err = j.Wait(seq, BeforeRequest)
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				if !errors.Is(err, ErrIO) || !errors.Is(err, firstErr) && err.Error() != firstErr.Error() {
					t.Errorf("%s: later error %v; want the first error %v again", f.name, err, firstErr)
				}
				continue
			}
			if firstErr != nil {
				t.Errorf("%s: seq %d acknowledged after the fault", f.name, seq)
			}
			acked = append(acked, seq)
		}
		cerr := j.Close()
		faulted := in.Injected() > 0
		if faulted != (in.Count(f.kind) >= f.nth) {
			t.Errorf("%s: %d faults injected in %d %s operations", f.name, in.Injected(), in.Count(f.kind), f.kind)
		}
		if faulted {
			if firstErr == nil && cerr == nil {
				t.Errorf("%s: no error reported", f.name)
			}
			if firstErr != nil && f.err != nil && !errors.Is(firstErr, f.err) {
				t.Errorf("%s: error %v; want it to wrap %v", f.name, firstErr, f.err)
			}
			if firstErr != nil && !strings.Contains(firstErr.Error(), path) {
				t.Errorf("%s: error %q does not name the file", f.name, firstErr)
			}
		}
		// Nothing is written or synced after the fault.
		if writes, syncs := in.Count(errorfs.OpWrite), in.Count(errorfs.OpSync); faulted && in.Count(f.kind) > f.nth {
			t.Errorf("%s: %d writes, %d syncs: I/O after the fault", f.name, writes, syncs)
		}
		data, _ := os.ReadFile(path)
		rep := verifyBytes(t, data, verify.Options{Key: pub})
		if rep.Status == verify.Invalid {
			t.Errorf("%s: Verify = invalid %v; a fault must never look like tampering", f.name, rep.Problems)
		}
		var d record.Decoder
		present := map[uint64]bool{}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if r, err := d.Decode(line); err == nil {
				present[r.Seq] = true
			}
		}
		for _, seq := range acked {
			if !present[seq] {
				t.Errorf("%s: acknowledged seq %d missing from the file", f.name, seq)
			}
		}
	}
}

// TestIntervalSyncs: at interval:D a written record is synced in the
// background without anyone waiting for it.
func TestIntervalSyncs(t *testing.T) {
	fsys, in := faultOS()
	j, err := Open(filepath.Join(t.TempDir(), "a.jsonl"), Options{Durability: mustDurability(t, "interval:5ms"), Key: testKey(t), FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	seq, _ := j.Append(&record.Intent{})
	if err := j.Wait(seq, BeforeResponse); err != nil {
		t.Fatal(err)
	}
	if syncs := in.Count(errorfs.OpSync); syncs != 0 {
		t.Fatalf("interval: %d syncs before the response; want none on the hot path", syncs)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if syncs := in.Count(errorfs.OpSync); syncs > 0 {
			return
		}
	}
	t.Fatal("interval:5ms: no background sync within 5s")
}
