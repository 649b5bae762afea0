package journal

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/internal/vfs/errorfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/segment"
	"github.com/aegisrelay/aegis/journal/verify"
)

func verifySetPath(t testing.TB, path string, opts verify.Options) *verify.Report {
	t.Helper()
	sets, err := segment.Sets([]string{path}, true)
	if err != nil || len(sets) != 1 {
		t.Fatalf("Sets(%s) = %v, %v; want one set", path, sets, err)
	}
	rep, err := verify.Set(sets[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verifyPaths(t testing.TB, paths []string, opts verify.Options) *verify.Report {
	t.Helper()
	sets, err := segment.Sets(paths, false)
	if err != nil || len(sets) != 1 {
		t.Fatalf("Sets(%v) = %d sets, %v; want one", paths, len(sets), err)
	}
	rep, err := verify.Set(sets[0], opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// setSeqs counts how often each seq appears in the files of the log at
// path, read as VerifySet reads them.
func setSeqs(t testing.TB, path string) []int {
	t.Helper()
	var count []int
	for _, line := range setLines(t, path) {
		var d record.Decoder
		r, err := d.Decode(line)
		if err != nil {
			continue
		}
		for uint64(len(count)) <= r.Seq {
			count = append(count, 0)
		}
		count[r.Seq]++
	}
	return count
}

func setLines(t testing.TB, path string) [][]byte {
	t.Helper()
	sets, err := segment.Sets([]string{path}, true)
	if err != nil {
		t.Fatal(err)
	}
	paths, _, err := sets[0].OrderedFiles()
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, p := range paths {
		rc, err := segment.Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			if len(l) > 0 {
				lines = append(lines, bytes.TrimSuffix(l, []byte("\n")))
			}
		}
	}
	return lines
}

// appendWait appends b and waits for bar, failing the test on either
// error: a record the test meant to write is never silently missing.
func appendWait(t testing.TB, j *Journal, b record.Body, bar Barrier) uint64 {
	t.Helper()
	seq, err := j.Append(b)
	if err == nil {
		err = j.Wait(seq, bar)
	}
	if err != nil {
		t.Fatalf("Append(%T) = %v; want it written", b, err)
	}
	return seq
}

// closeHead closes j and returns its final head.
func closeHead(t testing.TB, j *Journal) record.Head {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	h, ok := j.Head()
	if !ok {
		t.Fatal("Head() after Close = none; want the final head")
	}
	return h
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// parseName is segment.ParseName of a path the test knows to be a
// segment's.
func parseName(t testing.TB, path string) segment.Info {
	t.Helper()
	s, ok := segment.ParseName(path)
	if !ok {
		t.Fatalf("ParseName(%s) = not a segment; want one", path)
	}
	return s
}

// rotSession writes one complete session of calls through a rotating
// journal, the way the relay does (but letting each seal finish before
// the next call), and returns the journal's final head.
func rotSession(t testing.TB, path string, key ed25519.PrivateKey, opts Options, calls int) record.Head {
	t.Helper()
	opts.Key = key
	j, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	must := func(b record.Body, bar Barrier) uint64 {
		t.Helper()
		seq, err := j.Append(b)
		if err == nil {
			err = j.Wait(seq, bar)
		}
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	must(&record.SessionStart{Aegis: "t", Durability: opts.Durability.String(), PolicySet: record.PassThroughSet}, BeforeRequest)
	for i := range calls {
		id := record.Call{Type: record.IDNumber, Text: []byte(strconv.Itoa(i))}
		in := must(&record.Intent{Call: id, Tool: []byte("echo"), HasTool: true, RequestDigest: sha256.Sum256([]byte{byte(i)})}, BeforeRequest)
		must(&record.Outcome{Call: id, Intent: in, Status: record.StatusOK, HasResponse: true, LatencyNS: 5}, BeforeResponse)
		if j.rot != nil {
			j.rot.waitIdle() // let each seal finish: segments of about MaxSize
		}
	}
	must(&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: uint64(calls), Outcomes: uint64(calls)}}, BeforeResponse)
	return closeHead(t, j)
}

func TestSegmentName(t *testing.T) {
	tests := []struct {
		in          string
		ok          bool
		base        string
		first, last uint64
		zst         bool
	}{
		{"/d/audit.jsonl.0-99.jsonl", true, "/d/audit.jsonl", 0, 99, false},
		{"/d/audit.jsonl.100-100.jsonl.zst", true, "/d/audit.jsonl", 100, 100, true},
		{"audit.log.5-9.jsonl", true, "audit.log", 5, 9, false},
		{"/d/audit.jsonl", false, "", 0, 0, false},
		{"/d/audit.jsonl.9-5.jsonl", false, "", 0, 0, false},
		{"/d/audit.jsonl.01-5.jsonl", false, "", 0, 0, false},
		{"/d/audit.jsonl.0-x.jsonl", false, "", 0, 0, false},
		{"/d/.0-5.jsonl", false, "", 0, 0, false},
		{"/d/audit.jsonl.0-5.jsonl.zst.tmp", false, "", 0, 0, false},
		{"/d/audit.jsonl.0-18446744073709551615.jsonl", true, "/d/audit.jsonl", 0, 1<<64 - 1, false},
		{"/d/audit.jsonl.0-18446744073709551616.jsonl", false, "", 0, 0, false},
	}
	for _, tt := range tests {
		s, ok := segment.ParseName(tt.in)
		if ok != tt.ok || ok && (s.Base != tt.base || s.First != tt.first || s.Last != tt.last || s.Compressed != tt.zst) {
			t.Errorf("ParseSegmentName(%q) = %+v, %v; want %q %d-%d zst %v, %v", tt.in, s, ok, tt.base, tt.first, tt.last, tt.zst, tt.ok)
		}
		if ok && !tt.zst && segment.Name(s.Base, s.First, s.Last) != tt.in {
			t.Errorf("SegmentName(%q, %d, %d) = %q; want %q", s.Base, s.First, s.Last, segment.Name(s.Base, s.First, s.Last), tt.in)
		}
	}
}

// TestRotate writes sessions through a rotating journal at every level,
// from concurrent appenders, with and without compression, and checks the
// segments: names that state their ranges, each segment's first record
// chained to the one before, the whole set valid when pinned and in any
// order, nothing left behind.
func TestRotate(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	for _, level := range []string{"strict", "reply", "interval:1ms", "none"} {
		for _, compress := range []bool{false, true} {
			name := level
			if compress {
				name += "+zst"
			}
			// Each level has a log of its own: the cases run at once.
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path := filepath.Join(dir, "audit.jsonl")
				opts := Options{Durability: mustDurability(t, level), MaxSize: 4096, Compress: compress}
				rotSession(t, path, key, opts, 40)
				// A second session from 8 appenders: groups of several records.
				opts.Key = key
				j, err := Open(path, opts)
				if err != nil {
					t.Fatal(err)
				}
				appendWait(t, j, &record.SessionStart{Aegis: "t", Durability: level, PolicySet: record.PassThroughSet}, BeforeRequest)
				var wg sync.WaitGroup
				for w := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range 25 {
							id := record.Call{Type: record.IDNumber, Text: []byte(strconv.Itoa(w*100 + i))}
							in, err := j.Append(&record.Intent{Call: id, RequestDigest: record.Digest{byte(w)}})
							if err == nil {
								err = j.Wait(in, BeforeRequest)
							}
							if err != nil {
								t.Error(err)
								return
							}
							out, err := j.Append(&record.Outcome{Call: id, Intent: in, Status: record.StatusOK})
							if err == nil {
								err = j.Wait(out, BeforeResponse)
							}
							if err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				appendWait(t, j, &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 200, Outcomes: 200}}, BeforeResponse)
				head := closeHead(t, j)

				names := dirNames(t, dir)
				var segs []segment.Info
				for _, n := range names {
					if s, ok := segment.ParseName(filepath.Join(dir, n)); ok {
						segs = append(segs, s)
						if s.Compressed != compress {
							t.Errorf("%s: segment %s; want compressed %v", name, n, compress)
						}
					} else if n != "audit.jsonl" {
						t.Errorf("%s: %s left beside the log", name, n)
					}
				}
				// Pre-zeroed space is never sealed (nor compressed), and a
				// closed live file holds none.
				for _, n := range names {
					rc, err := segment.Open(filepath.Join(dir, n), nil)
					if err != nil {
						t.Fatal(err)
					}
					data, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || bytes.IndexByte(data, 0) >= 0 || len(data) > 0 && data[len(data)-1] != '\n' {
						t.Errorf("%s: %s holds NULs or does not end with a line end (%v)", name, n, err)
					}
				}
				// A segment grows past MaxSize while the previous seal is still
				// running (rotation never waits), so count loosely.
				if len(segs) < 3 {
					t.Fatalf("%s: %d segments of 4 KiB for ~%d records; want rotation", name, len(segs), 2*240+4)
				}
				lines := setLines(t, path)
				if uint64(len(lines)) != head.Seq+1 {
					t.Fatalf("%s: %d lines; want %d", name, len(lines), head.Seq+1)
				}
				slices.SortFunc(segs, func(a, b segment.Info) int { return cmp.Compare(a.First, b.First) })
				for i, s := range segs {
					if i > 0 && s.First != segs[i-1].Last+1 {
						t.Errorf("%s: segment %d-%d follows %d-%d", name, s.First, s.Last, segs[i-1].First, segs[i-1].Last)
					}
					var d record.Decoder
					first, err := d.Decode(lines[s.First])
					if err != nil || first.Seq != s.First {
						t.Fatalf("%s: line %d = seq %v, %v; want %d", name, s.First, first, err, s.First)
					}
					if s.First > 0 && first.Prev != sha256.Sum256(lines[s.First-1]) {
						t.Errorf("%s: segment %d-%d: its first record does not chain to seq %d", name, s.First, s.Last, s.First-1)
					}
					// Sealed at a group's end: a signature covers the last
					// record, its own or a later record's attestation.
					if !coveredLater(lines, s.Last) {
						t.Errorf("%s: segment %d-%d ends with a record no signature covers", name, s.First, s.Last)
					}
				}
				rep := verifySetPath(t, path, verify.Options{Key: pub, Head: &head})
				if rep.Status != verify.Valid || rep.Records != head.Seq+1 || len(rep.Sessions) != 2 {
					t.Fatalf("%s: VerifySet = %v, %d records, %d sessions, %v %v; want valid, %d, 2", name, rep.Status, rep.Records, len(rep.Sessions), rep.Problems, rep.Gaps, head.Seq+1)
				}
				// Any order, live file included or not.
				all := []string{}
				for _, n := range names {
					all = append(all, filepath.Join(dir, n))
				}
				rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
				if rep := verifyPaths(t, all, verify.Options{Key: pub}); rep.Status != verify.Valid {
					t.Errorf("%s: VerifySet(shuffled) = %v %v", name, rep.Status, rep.Problems)
				}
			})
		}
	}
}

// TestRotateReopen continues a rotated log whose live file is empty (or
// missing): the chain continues from the last sealed segment, plain or
// compressed.
func TestRotateReopen(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	for _, compress := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "audit.jsonl")
		opts := Options{Durability: mustDurability(t, "none"), MaxSize: 2048, Compress: compress}
		for range 3 {
			rotSession(t, path, key, opts, 10)
			// Force the next session to start in an empty live file.
			if data := readFile(t, path); len(data) > 0 {
				lines := bytes.Count(data, []byte("\n"))
				h := verifySetPath(t, path, verify.Options{}).Head
				if err := os.Rename(path, segment.Name(path, h.Seq+1-uint64(lines), h.Seq)); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
		rotSession(t, path, key, Options{Durability: mustDurability(t, "none")}, 2)
		if rep := verifySetPath(t, path, verify.Options{Key: pub}); rep.Status != verify.Valid || len(rep.Sessions) != 4 {
			t.Fatalf("compress %v: VerifySet = %v, %d sessions, %v; want valid, 4", compress, rep.Status, len(rep.Sessions), rep.Problems)
		}
	}
}

// TestVerifySetDetects: verify reports, by seq range, a segment removed
// from the middle or the start, a duplicated segment, a segment replaced
// by an older copy of itself, copies that differ; and a kept head exposes
// a cut tail that nothing else can.
func TestVerifySetDetects(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	opts := Options{Durability: mustDurability(t, "none"), MaxSize: 2048}

	// An older copy of the live file, taken mid-session: what becomes a
	// sealed segment later, but shorter.
	opts.Key = key
	j, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, &record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet}, BeforeRequest)
	var older []byte
	olderFirst := uint64(0)
	for i := range 60 {
		appendWait(t, j, &record.Intent{RequestDigest: record.Digest{byte(i)}}, BeforeRequest)
		j.rot.waitIdle() // segments of exactly one rotation each
		if i == 40 {
			older = readFile(t, path)
			var d record.Decoder
			r, err := d.Decode(bytes.SplitN(older, []byte("\n"), 2)[0])
			if err != nil {
				t.Fatalf("Decode(first line of the live file) = %v; want a record", err)
			}
			olderFirst = r.Seq
		}
	}
	appendWait(t, j, &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: 60}}, BeforeResponse)
	head := closeHead(t, j)

	var segs []string
	for _, n := range dirNames(t, dir) {
		if _, ok := segment.ParseName(filepath.Join(dir, n)); ok {
			segs = append(segs, filepath.Join(dir, n))
		}
	}
	slices.SortFunc(segs, func(a, b string) int {
		return cmp.Compare(parseName(t, a).First, parseName(t, b).First)
	})
	if len(segs) < 4 {
		t.Fatalf("%d segments; want at least 4", len(segs))
	}
	rangeOf := func(p string) string {
		s := parseName(t, p)
		return strconv.FormatUint(s.First, 10) + "–" + strconv.FormatUint(s.Last, 10)
	}
	without := func(drop string) []string {
		var out []string
		for _, s := range append(slices.Clone(segs), path) {
			if s != drop {
				out = append(out, s)
			}
		}
		return out
	}
	// The sealed segment that holds the older copy's records.
	var olderSeg string
	for _, s := range segs {
		if parseName(t, s).First == olderFirst {
			olderSeg = s
		}
	}
	if olderSeg == "" {
		t.Fatalf("no segment starts at seq %d", olderFirst)
	}
	olderDir := t.TempDir()
	olderPaths := []string{}
	for _, s := range append(slices.Clone(segs), path) {
		dst := filepath.Join(olderDir, filepath.Base(s))
		data := readFile(t, s)
		if s == olderSeg {
			data = older
		}
		writeFile(t, dst, data)
		olderPaths = append(olderPaths, dst)
	}
	// copyTo copies the log's files into a new directory, through edit.
	copyTo := func(edit func(name string, data []byte) []byte) (string, []string) {
		d := t.TempDir()
		var out []string
		for _, s := range append(slices.Clone(segs), path) {
			dst := filepath.Join(d, filepath.Base(s))
			if data := edit(filepath.Base(s), readFile(t, s)); data != nil {
				writeFile(t, dst, data)
				out = append(out, dst)
			}
		}
		return d, out
	}
	keep := func(_ string, data []byte) []byte { return data }
	// The live file replaced by an older copy: its records are all in a
	// sealed segment already.
	_, dupPaths := copyTo(func(name string, data []byte) []byte {
		if name == "audit.jsonl" {
			return older
		}
		return data
	})
	// A segment in both forms, plain and compressed.
	withZst := func(edit func([]byte) []byte) []string {
		d, paths := copyTo(keep)
		p1 := filepath.Join(d, filepath.Base(segs[1]))
		plain := readFile(t, p1)
		z := newCompressor(logFS{vfs.OS}, nil, nil)
		z.add(p1) // compresses, then removes the plain copy
		z.close()
		writeFile(t, p1, edit(plain))
		return append(paths, p1+segment.CompressedExt)
	}
	equalPaths := withZst(func(b []byte) []byte { return b })
	diffPaths := withZst(func(b []byte) []byte { return bytes.Replace(b, []byte(`"v":2`), []byte(`"v":3`), 1) })
	// The live file's tail cut: the set still ends in a valid prefix.
	_, cutPaths := copyTo(func(name string, data []byte) []byte {
		if name == "audit.jsonl" {
			ls := bytes.SplitAfter(data, []byte("\n"))
			return bytes.Join(ls[:len(ls)-2], nil)
		}
		return data
	})
	// A compressed segment that does not decompress.
	corruptDir, corruptPaths := copyTo(func(name string, data []byte) []byte {
		if name == filepath.Base(segs[2]) {
			return nil
		}
		return data
	})
	bad := filepath.Join(corruptDir, filepath.Base(segs[2])+segment.CompressedExt)
	writeFile(t, bad, []byte("\x28\xb5\x2f\xfd not zstd after its magic"))
	corruptPaths = append(corruptPaths, bad)
	// The live file and the last segment removed.
	cutHard := slices.Clone(segs[:len(segs)-1])

	tests := []struct {
		name  string
		paths []string
		head  *record.Head
		want  verify.Status
		msg   string
	}{
		{"whole", without(""), &head, verify.Valid, ""},
		{"middle segment removed", without(segs[2]), nil, verify.Invalid, "missing segment: seqs " + rangeOf(segs[2])},
		{"first segment removed", without(segs[0]), nil, verify.Invalid, "missing segment: seqs " + rangeOf(segs[0])},
		{"segment replaced by an older copy", olderPaths, nil, verify.Invalid, "older copy"},
		{"live file replaced by an older copy", dupPaths, nil, verify.Invalid, "duplicated segment"},
		{"copies that differ", diffPaths, nil, verify.Invalid, "differ"},
		{"compressed segment corrupt", corruptPaths, nil, verify.Invalid, "does not decode"},
		{"tail cut, no head", cutPaths, nil, verify.Incomplete, ""},
		{"tail cut, kept head", cutPaths, &head, verify.Invalid, "tail was cut"},
		{"last files removed, no head", cutHard, nil, verify.Incomplete, ""},
		{"last files removed, kept head", cutHard, &head, verify.Invalid, "tail was cut"},
	}
	for _, tt := range tests {
		rep := verifyPaths(t, tt.paths, verify.Options{Key: pub, Head: tt.head})
		t.Logf("%s: %v %v %v", tt.name, rep.Status, rep.Problems, rep.Gaps)
		if rep.Status != tt.want {
			t.Errorf("VerifySet(%s) = %v %v %v; want %v", tt.name, rep.Status, rep.Problems, rep.Gaps, tt.want)
			continue
		}
		if tt.msg != "" && !slices.ContainsFunc(rep.Problems, func(p verify.Problem) bool { return strings.Contains(p.String(), tt.msg) }) {
			t.Errorf("VerifySet(%s): problems %v; want one saying %q", tt.name, rep.Problems, tt.msg)
		}
		if tt.want == verify.Invalid && len(rep.Problems) > 6 {
			t.Errorf("VerifySet(%s): %d problems %v; want the finding reported once, not a cascade", tt.name, len(rep.Problems), rep.Problems)
		}
	}
	if rep := verifyPaths(t, equalPaths, verify.Options{Key: pub}); rep.Status != verify.Valid || len(rep.Notes) != 1 {
		t.Errorf("VerifySet(equal plain and compressed copies) = %v %v, notes %v; want valid with a note", rep.Status, rep.Problems, rep.Notes)
	}
}

// TestRotateNeverWaitsForSealer: while the sealer is stuck (a directory
// sync that does not return), appends keep being written and acknowledged
// — the live file grows past its size instead — and the seal completes
// once the sync returns.
func TestRotateNeverWaitsForSealer(t *testing.T) {
	key := testKey(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	fs := &blockFS{FS: vfs.OS, release: make(chan struct{}), blocked: make(chan struct{}, 1)}
	j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key, FS: fs, MaxSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, &record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet}, BeforeRequest)
	fs.armed.Store(true)
	n := 0
	deadline := time.After(10 * time.Second)
	stuck := false
	for !stuck {
		appendWait(t, j, &record.Intent{RequestDigest: record.Digest{byte(n)}}, BeforeRequest)
		n++
		select {
		case <-fs.blocked:
			stuck = true
		case <-deadline:
			t.Fatal("the sealer never synced a directory")
		default:
		}
	}
	// The sealer is blocked now; the hot path is not.
	for i := range 200 {
		appendWait(t, j, &record.Intent{RequestDigest: record.Digest{byte(i)}}, BeforeRequest)
	}
	if size := fileSize(t, path); size < 4*1024 {
		t.Errorf("live file %d bytes after 200 more records; want it to grow while the seal waits", size)
	}
	close(fs.release)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := verifySetPath(t, path, verify.Options{}); rep.Status != verify.Incomplete || len(rep.Problems) > 0 {
		t.Fatalf("VerifySet = %v %v; want incomplete (no session_end), no problems", rep.Status, rep.Problems)
	}
}

// blockFS blocks the first directory sync after armed until release.
type blockFS struct {
	vfs.FS
	armed   atomic.Bool
	release chan struct{}
	blocked chan struct{}
	once    sync.Once
}

func (fs *blockFS) SyncDir(dir string) error {
	if fs.armed.Load() {
		fs.once.Do(func() {
			fs.blocked <- struct{}{}
			<-fs.release
		})
	}
	return fs.FS.SyncDir(dir)
}

// TestRotateFaults: a failing rename (the swap, the seal) or directory
// sync fails the journal closed; what was written still verifies; and a
// filesystem without RENAME_EXCHANGE rotates by two renames.
func TestRotateFaults(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	tests := []struct {
		name    string
		rule    errorfs.Rule
		wantErr bool
	}{
		{"swap fails", errorfs.Fail(errorfs.Nth(1, renames), errorfs.EIO), true},
		{"seal fails", errorfs.Fail(errorfs.Nth(2, renames), errorfs.EIO), true},
		{"later seal fails", errorfs.Fail(errorfs.Nth(5, renames), errorfs.EIO), true},
		// The first directory sync is Open's, making the new file's
		// name durable; the fourth is rotation's third.
		{"directory sync fails", errorfs.Fail(errorfs.Nth(4, errorfs.Kind(errorfs.OpSyncDir)), errorfs.EIO), true},
		{"no RENAME_EXCHANGE", noExchange, false},
	}
	for _, tt := range tests {
		fsys, in := faultOS(tt.rule)
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		j, err := Open(path, Options{Durability: mustDurability(t, "strict"), Key: key, FS: fsys, MaxSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		var acked []uint64
		var firstErr error
		seq, err := j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
		if err == nil {
			err = j.Wait(seq, BeforeRequest)
		}
		if err != nil {
			firstErr = err
		} else {
			acked = append(acked, seq)
		}
		for i := 0; i < 150 && firstErr == nil; i++ {
			seq, err := j.Append(&record.Intent{RequestDigest: record.Digest{byte(i)}})
			if err == nil {
				err = j.Wait(seq, BeforeRequest)
			}
			if err != nil {
				firstErr = err
				break
			}
			acked = append(acked, seq)
			// Rotation never makes the writer wait: on a loaded machine
			// the sealer could fall behind all 150 records and never
			// reach the faulty step. Let it keep up.
			j.rot.waitIdle()
		}
		cerr := j.Close()
		if in.Injected() == 0 {
			t.Errorf("%s: no fault injected", tt.name)
		}
		if tt.wantErr {
			if firstErr == nil && cerr == nil {
				t.Errorf("%s: no error", tt.name)
			} else if err := cmpOr(firstErr, cerr); !errors.Is(err, ErrIO) {
				t.Errorf("%s: error %v; want ErrIO", tt.name, err)
			}
		} else if firstErr != nil || cerr != nil {
			t.Errorf("%s: %v, %v; want no error", tt.name, firstErr, cerr)
		}
		rep := checkSet(t, tt.name, path, pub, acked)
		if !tt.wantErr && rep.Records < 100 {
			t.Errorf("%s: %d records; want 151", tt.name, rep.Records)
		}
		// The next Open (without faults) finishes the rotation.
		rotSession(t, path, key, Options{Durability: mustDurability(t, "strict"), MaxSize: 1024}, 3)
		checkSet(t, tt.name+", reopened", path, pub, acked)
	}
}

// noExchange is a filesystem without renameat2's RENAME_EXCHANGE.
var noExchange = errorfs.Fail(errorfs.Kind(errorfs.OpRenameExchange), errors.ErrUnsupported)

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// TestReconcile builds, by hand, each state a crash can leave between the
// steps of a rotation and checks that Open finishes it.
func TestReconcile(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	// A log of two files' worth: lines[:k] the old file, lines[k:] the new.
	src := filepath.Join(t.TempDir(), "audit.jsonl")
	session(t, src, key, 4)
	data := readFile(t, src)
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines = lines[:len(lines)-1]
	k := 5
	old, newer := bytes.Join(lines[:k], nil), bytes.Join(lines[k:], nil)
	tests := []struct {
		name       string
		live, next []byte // nil: no such file
		tmp        bool
	}{
		{"after the swap, before the seal", newer, old, false},
		{"after the swap, new file empty", []byte{}, data, false},
		{"the swap undone by a power loss", old, newer, false},
		{"an empty spare", data, []byte{}, false},
		{"an unfinished compressed copy", data, nil, true},
		{"the two-rename swap, between them", nil, newer, false},
	}
	for i, tt := range append(tests, tests[2]) {
		// The undone swap again, on a filesystem without RENAME_EXCHANGE.
		fs := vfs.OS
		if i == len(tests) {
			fs, tt.name = errorfs.Wrap(vfs.OS, errorfs.New(noExchange)), tt.name+", no RENAME_EXCHANGE"
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "audit.jsonl")
		if tt.live != nil {
			writeFile(t, path, tt.live)
		}
		if tt.next != nil {
			writeFile(t, path+segment.SpareExt, tt.next)
		}
		if tt.name == "the two-rename swap, between them" {
			writeFile(t, segment.Name(path, 0, uint64(k-1)), old)
		}
		if tt.tmp {
			writeFile(t, segment.Name(path, 0, 3)+segment.CompressedExt+segment.TmpExt, []byte("partial"))
		}
		rotSession(t, path, key, Options{Durability: mustDurability(t, "none"), FS: fs}, 1)
		for _, n := range dirNames(t, dir) {
			if strings.HasSuffix(n, segment.SpareExt) || strings.HasSuffix(n, segment.TmpExt) {
				t.Errorf("%s: %s left after Open", tt.name, n)
			}
		}
		rep := verifySetPath(t, path, verify.Options{Key: pub})
		if rep.Status != verify.Valid || len(rep.Sessions) != 2 {
			t.Errorf("%s: VerifySet = %v, %d sessions, %v %v (files %v); want valid, 2", tt.name, rep.Status, len(rep.Sessions), rep.Problems, rep.Gaps, dirNames(t, dir))
		}
	}
	// A running journal's spare is locked: a second Open is refused.
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Key: key, MaxSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		appendWait(t, j, &record.Intent{}, BeforeRequest)
		if _, err := os.Stat(path + segment.SpareExt); err == nil {
			break
		}
		if i > 10000 {
			t.Fatal("no spare made")
		}
	}
	time.Sleep(10 * time.Millisecond) // the spare is created, then locked: let the sealer finish
	if _, err := Open(path, Options{Key: key}); !errors.Is(err, ErrLocked) {
		t.Errorf("Open of a log being rotated = %v; want ErrLocked", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHeadFile: the head file is kept while records are written, replaced
// atomically, signed; it matches the journal's head at Close, and verify
// takes it as --head.
func TestHeadFile(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	headPath := filepath.Join(dir, "audit.head")
	j, err := Open(path, Options{Durability: mustDurability(t, "none"), Key: key, MaxSize: 2048, HeadFile: headPath, HeadEvery: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, &record.SessionStart{Aegis: "t", Durability: "none", PolicySet: record.PassThroughSet}, BeforeRequest)
	var seen []uint64
	intents := uint64(0)
	for i := 0; len(seen) < 3; i++ {
		intents++
		appendWait(t, j, &record.Intent{RequestDigest: record.Digest{byte(i)}}, BeforeRequest)
		if data, err := os.ReadFile(headPath); err == nil {
			sh, err := record.ParseHead(data)
			if err != nil {
				t.Fatalf("head file %q: %v", data, err)
			}
			if len(seen) == 0 || sh.Seq != seen[len(seen)-1] {
				seen = append(seen, sh.Seq)
			}
		}
		if i > 1_000_000 {
			t.Fatal("the head file was not replaced 3 times")
		}
	}
	appendWait(t, j, &record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{Intents: intents}}, BeforeResponse)
	head := closeHead(t, j)
	sh, err := record.ReadHead(headPath)
	if err != nil || sh.Head != head || !sh.Key.Equal(pub) {
		t.Fatalf("ReadHead = %v, %v; want the final head %v signed by the journal's key", sh, err, head)
	}
	if rep := verifySetPath(t, path, verify.Options{Key: pub, Head: &sh.Head, HeadKey: sh.Key}); rep.Status == verify.Invalid {
		t.Errorf("VerifySet(head file) = %v %v", rep.Status, rep.Problems)
	}
	other := testKey(t).Public().(ed25519.PublicKey)
	if rep := verifySetPath(t, path, verify.Options{Head: &sh.Head, HeadKey: other}); rep.Status != verify.Invalid {
		t.Errorf("VerifySet(head signed by another key) = %v; want invalid", rep.Status)
	}
	data := readFile(t, headPath)
	for i := range data {
		mut := bytes.Clone(data)
		mut[i] ^= 0x01
		if _, err := record.ParseHead(mut); err == nil {
			t.Fatalf("ParseHead(byte %d flipped) = ok; want an error", i)
		}
	}
	if _, err := os.Stat(headPath + segment.TmpExt); err == nil {
		t.Errorf("%s left behind", headPath+segment.TmpExt)
	}
}

// TestVerifySetProgress: Progress is told every byte read from disk.
func TestVerifySetProgress(t *testing.T) {
	key := testKey(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	rotSession(t, path, key, Options{Durability: mustDurability(t, "none"), MaxSize: 2048, Compress: true}, 30)
	var total int64
	for _, n := range dirNames(t, dir) {
		total += fileSize(t, filepath.Join(dir, n))
	}
	var got int64
	rep := verifySetPath(t, path, verify.Options{Progress: func(n int) { got += int64(n) }})
	if rep.Status != verify.Valid || got != total {
		t.Errorf("VerifySet: %v, progress %d bytes; want valid, %d (the files' sizes)", rep.Status, got, total)
	}
}

// TestSets groups files into logs: segments, the spare and unfinished
// copies go with their live file; a live file brings its segments; a
// directory brings every regular file in it (TestCollect: but for head
// files and public keys); other files are logs of their own.
func TestSets(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a.jsonl", "a.jsonl.0-9.jsonl.zst", "a.jsonl.10-19.jsonl", "a.jsonl.10-19.jsonl.zst.tmp",
		"a.jsonl.next", "b.jsonl", "c.log", "c.log.0-4.jsonl", "signing.key", "audit.head"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x\n"), 0o600)
	}
	p := func(n string) string { return filepath.Join(dir, n) }
	tests := []struct {
		name   string
		paths  []string
		expand bool
		want   map[string][]string // base → paths, sorted
	}{
		{"live file expands", []string{p("a.jsonl")}, true, map[string][]string{
			p("a.jsonl"): {p("a.jsonl"), p("a.jsonl.0-9.jsonl.zst"), p("a.jsonl.10-19.jsonl"), p("a.jsonl.10-19.jsonl.zst.tmp"), p("a.jsonl.next")}}},
		{"live file alone", []string{p("a.jsonl")}, false, map[string][]string{p("a.jsonl"): {p("a.jsonl")}}},
		{"segments group by log", []string{p("a.jsonl.10-19.jsonl"), p("b.jsonl"), p("a.jsonl.0-9.jsonl.zst"), p("c.log.0-4.jsonl")}, true, map[string][]string{
			p("a.jsonl"): {p("a.jsonl.0-9.jsonl.zst"), p("a.jsonl.10-19.jsonl")},
			p("b.jsonl"): {p("b.jsonl")},
			p("c.log"):   {p("c.log.0-4.jsonl")}}},
		{"twice counts once", []string{p("b.jsonl"), dir + "/./b.jsonl"}, true, map[string][]string{p("b.jsonl"): {p("b.jsonl")}}},
		{"directory", []string{dir}, true, map[string][]string{
			p("a.jsonl"):     {p("a.jsonl"), p("a.jsonl.0-9.jsonl.zst"), p("a.jsonl.10-19.jsonl"), p("a.jsonl.10-19.jsonl.zst.tmp"), p("a.jsonl.next")},
			p("b.jsonl"):     {p("b.jsonl")},
			p("c.log"):       {p("c.log"), p("c.log.0-4.jsonl")},
			p("signing.key"): {p("signing.key")},
			p("audit.head"):  {p("audit.head")}}},
	}
	for _, tt := range tests {
		sets, err := segment.Sets(tt.paths, tt.expand)
		if err != nil {
			t.Fatalf("Sets(%s): %v", tt.name, err)
		}
		got := map[string][]string{}
		for _, s := range sets {
			ps := slices.Clone(s.Paths)
			slices.Sort(ps)
			got[s.Base] = ps
		}
		for b := range tt.want {
			slices.Sort(tt.want[b])
		}
		if !equalSets(got, tt.want) {
			t.Errorf("Sets(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
	if _, err := segment.Sets([]string{p("nope.jsonl")}, true); err == nil {
		t.Errorf("Sets(missing file) = nil error")
	}
}

func equalSets(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestVerifyLarge: a log of many chunks goes through the decoders on every
// core and comes out judged in order, as a small one is: valid when whole,
// a changed line found on its own line, a torn tail incomplete, an
// overlong line invalid.
func TestVerifyLarge(t *testing.T) {
	key := testKey(t)
	pub := key.Public().(ed25519.PublicKey)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	session(t, path, key, 1500) // ~1 MiB: 4 chunks
	data := readFile(t, path)
	if len(data) < 3*verifyChunk {
		t.Fatalf("log of %d bytes; want several chunks of %d", len(data), verifyChunk)
	}
	if rep := verifyBytes(t, data, verify.Options{Key: pub}); rep.Status != verify.Valid || rep.Records != 2+3000+4 {
		t.Fatalf("Verify(large) = %v, %d records, %v; want valid, 3006", rep.Status, rep.Records, rep.Problems)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	const victim = 2345 // 0-based: line 2346
	mut := bytes.Join(lines, nil)
	off := len(bytes.Join(lines[:victim], nil))
	i := off + bytes.Index(lines[victim], []byte(`"echo"`)) + 1
	mut[i] = 'E'
	rep := verifyBytes(t, mut, verify.Options{Key: pub})
	if rep.Status != verify.Invalid || len(rep.Problems) == 0 || rep.Problems[0].Line != victim+1 {
		t.Errorf("Verify(line %d changed) = %v %v; want invalid at that line", victim+1, rep.Status, rep.Problems)
	}
	torn := append(bytes.Clone(data), `{"v":2,"seq":`...)
	if rep := verifyBytes(t, torn, verify.Options{Key: pub}); rep.Status != verify.Incomplete || len(rep.Gaps) != 1 || rep.Gaps[0].Line != uint64(len(lines)) {
		t.Errorf("Verify(torn tail) = %v %v; want incomplete at line %d", rep.Status, rep.Gaps, len(lines))
	}
	long := append(bytes.Join(lines[:2000], nil), bytes.Repeat([]byte("x"), 2*record.MaxLine)...)
	long = append(long, '\n')
	if rep := verifyBytes(t, long, verify.Options{Key: pub}); rep.Status != verify.Invalid || !strings.Contains(rep.Problems[len(rep.Problems)-1].Msg, "longer than") {
		t.Errorf("Verify(overlong line) = %v %v; want invalid: line too long", rep.Status, rep.Problems)
	}
}

// verifyChunk is the size of the chunks verify cuts its input into.
const verifyChunk = 256 << 10

// coveredLater reports whether a signature covers the line with seq
// seq of lines (a log's lines, by seq): its own, or a later line's, or a
// later line's attestation of seq or after it.
func coveredLater(lines [][]byte, seq uint64) bool {
	var d record.Decoder
	for _, l := range lines[seq:] {
		r, err := d.Decode(l)
		if err != nil {
			return false
		}
		if r.Sig != nil || r.AttSig != nil && r.AttSeq >= seq {
			return true
		}
	}
	return false
}
