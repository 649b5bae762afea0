package journal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// The verifier's fuzz targets compare every verdict with one genuine log:
// two sessions written through the journal API with a fixed key, clock and
// session ids (so the log is the same bytes on every run), the second
// after a crash that tore a line, so that it starts with a recovery. Only
// that log, or a prefix of it cut at a line end, may ever be reported
// Valid: the fuzzer cannot sign, so anything else it makes that verifies
// is a hole in the verifier. The seed corpora hold no log signed by
// another key for the same reason.

// fuzzKey signs the genuine log.
var fuzzKey = func() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("aegis FuzzVerify"))
	return ed25519.NewKeyFromSeed(seed[:])
}()

var fuzzPub = fuzzKey.Public().(ed25519.PublicKey)

// tornLine is what the crash between the two sessions left: the start of
// a record, no line end.
const tornLine = `{"v":2,"seq":14,"ts":"2026-01-02T03:04:`

// genuineLog builds the genuine log once per process.
var genuineLog = sync.OnceValues(buildGenuineLog)

// buildGenuineLog writes the genuine log (seqs 0-13 the first session,
// the torn line, 14 the recovery, 15-18 the second session) and returns it.
func buildGenuineLog() ([]byte, error) { return buildFuzzLog(false) }

// mutationLog is the log FuzzVerifyMutation mutates: the genuine log's
// records, sessions, torn line and recovery, written in fewer commit
// groups (writeLog). Built once per process.
var mutationLog = sync.OnceValues(func() ([]byte, error) { return buildFuzzLog(true) })

// buildFuzzLog writes the genuine log, in fewer groups if few, and returns it.
func buildFuzzLog(few bool) ([]byte, error) {
	dir, err := os.MkdirTemp("", "aegis-fuzz-verify")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")
	if err := writeLog(path, 0, few); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// writeGenuineLog writes the genuine log at path, rotated at maxSize if
// it is positive. With a fixed clock, key and session ids and
// deterministic signatures, it writes the same bytes every time.
func writeGenuineLog(path string, maxSize int64) error { return writeLog(path, maxSize, false) }

// writeLog writes the genuine log's records at path. With few, each
// session is two commit groups, its session_start (as wrap waits for it
// before it starts the child) and the rest: four signed records and the
// two sessions' certificates, where the genuine log has nine and two. A
// verification's signature checks and their batch (verify/sigs.go) cost
// about as much as its decoding of the lines, so the mutation target,
// which verifies every exec, mutates this one; every record, the torn
// line and its recovery are where they are in the genuine log.
func writeLog(path string, maxSize int64, few bool) error {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	now := func() time.Time {
		clock = clock.Add(time.Millisecond + 7)
		return clock
	}
	// Each group is appended together and waited for once: one write, one
	// signature on its last record.
	write := func(sid byte, groups ...[]record.Body) error {
		if few && len(groups) > 2 {
			groups = [][]record.Body{groups[0], slices.Concat(groups[1:]...)}
		}
		// A session key from fixed bytes, so that it signs the same
		// records the same way each run.
		rand := bytes.NewReader(bytes.Repeat([]byte{sid}, ed25519.SeedSize))
		j, err := Open(path, Options{Durability: Durability{Level: None}, Key: fuzzKey, Rand: rand, Now: now, SID: [16]byte{sid, 1, 2, 3}, MaxSize: maxSize})
		if err != nil {
			return err
		}
		for _, g := range groups {
			var seq uint64
			for _, b := range g {
				if seq, err = j.Append(b); err != nil {
					return err
				}
			}
			if err := j.Wait(seq, BeforeResponse); err != nil {
				return err
			}
			if j.rot != nil {
				j.rot.waitIdle() // each rotation where the same bytes put it
			}
		}
		return j.Close()
	}
	num := func(s string) record.Call { return record.Call{Type: record.IDNumber, Text: []byte(s)} }
	str := func(s string) record.Call { return record.Call{Type: record.IDString, Text: []byte(s)} }
	d := func(s string) record.Digest { return sha256.Sum256([]byte(s)) }
	batch := d(`[{"id":"b-1",…},{"id":2.0,…},{…}]`)
	odd := str("ü\"\n\u2028\x01")
	err := write(0xa1,
		[]record.Body{&record.SessionStart{Aegis: "fuzz", Argv: []string{"server", "ünï\"code\n", ""}, Durability: "none", PolicySet: record.PassThroughSet,
			Confine: &record.ConfineRequest{Read: []string{"/srv"}, Net: []string{"example.com:443"}, BestEffort: true}, Env: []string{"HOME"}}},
		[]record.Body{&record.Enforcement{LandlockABI: 6, FS: []record.FSRule{{Path: "/srv", Access: []string{"read"}}}, NetPorts: []int{443},
			Scopes: []string{"signal"}, SeccompApplied: true, SeccompNetworkDenied: true, IOURingDenied: true},
			&record.Intent{Call: num("1"), Tool: []byte("echo"), HasTool: true, RequestDigest: d("1")}},
		[]record.Body{&record.Outcome{Call: num("1"), Intent: 2, ResponseDigest: d("r1"), HasResponse: true, Status: record.StatusOK, LatencyNS: 1234}},
		[]record.Body{&record.Intent{Call: str("b-1"), Tool: []byte("fs_read"), HasTool: true, RequestDigest: batch, BatchIndex: 0, BatchSize: 3},
			&record.Intent{Call: num("2.0"), Tool: []byte("ünïcode"), HasTool: true, RequestDigest: batch, BatchIndex: 1, BatchSize: 3},
			&record.Intent{Call: record.Call{Type: record.IDNull}, RequestDigest: batch, BatchIndex: 2, BatchSize: 3},
			&record.Anomaly{Digest: d("junk"), Bytes: 4, Reason: "not one JSON value: invalid JSON", Forwarded: true}},
		[]record.Body{&record.Outcome{Call: str("b-1"), Intent: 4, ResponseDigest: d("r2"), HasResponse: true, Status: record.StatusToolError},
			&record.Outcome{Call: num("2.0"), Intent: 5, ResponseDigest: d("r2"), HasResponse: true, Status: record.StatusRPCError, LatencyNS: 99},
			&record.Intent{Call: odd, RequestDigest: d("odd"), Malformed: "params.name: duplicate key", Verdict: record.VerdictDenied, Rule: "deny *", Set: "sha256:ab", Refused: true},
			&record.PolicyReload{Set: "sha256:cd", Status: "rejected: line 3: bad glob"}},
		[]record.Body{&record.Outcome{Call: odd, Intent: 10, Status: record.StatusUnanswered, Reason: "child exited"},
			&record.SessionEnd{Reason: record.EndChildExit, ExitCode: 1, Counts: record.Counts{FramesIn: 9, FramesOut: 4, Intents: 5, Outcomes: 4, Unanswered: 1, Anomalies: 1}}},
	)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(tornLine)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	err = write(0xb2,
		[]record.Body{&record.SessionStart{Aegis: "fuzz", Argv: []string{"server"}, Durability: "none", PolicySet: "sha256:ef",
			Transport: record.TransportHTTP, Peer: "127.0.0.1:54321", Principal: "token:0123456789abcdef"}},
		[]record.Body{&record.Intent{Call: num("7"), Tool: []byte("read_file"), HasTool: true, RequestDigest: d("7"), Verdict: record.VerdictAllowed, Rule: "read_*", Set: "sha256:ef"},
			&record.Outcome{Call: num("7"), Intent: 16, ResponseDigest: d("r7"), HasResponse: true, Status: record.StatusOK, LatencyNS: 5}},
		[]record.Body{&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 1, FramesOut: 1, Intents: 1, Outcomes: 1}}},
	)
	if err != nil {
		return err
	}
	return nil
}

func mustGenuine(tb testing.TB) []byte {
	tb.Helper()
	g, err := genuineLog()
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// genuinePrefix reports whether b is the genuine log cut at a line end
// (the whole log included).
func genuinePrefix(g, b []byte) bool {
	b = content(b)
	return bytes.HasPrefix(g, b) && (len(b) == 0 || b[len(b)-1] == '\n')
}

// content is b without the NUL run at its end: space pre-zeroed for
// records not yet written is not part of a log (prezero.go).
func content(b []byte) []byte { return bytes.TrimRight(b, "\x00") }

func verifyFuzz(t *testing.T, b []byte, opts verify.Options) *verify.Report {
	t.Helper()
	opts.Workers = 1
	// A panic fails this input, not the whole test binary, so that one
	// known crasher in the corpus does not hide the others.
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Verify(%.300q…) panicked: %v\n%s", b, p, debug.Stack())
		}
	}()
	rep, err := verify.Stream(bytes.NewReader(b), opts)
	if err != nil {
		t.Fatalf("Verify(%d bytes) = %v; want no error from a bytes.Reader", len(b), err)
	}
	switch {
	case rep.Status == verify.Invalid && len(rep.Problems) == 0,
		rep.Status != verify.Invalid && len(rep.Problems) > 0,
		rep.Status == verify.Valid && len(rep.Gaps) > 0,
		rep.Status == verify.Incomplete && len(rep.Gaps) == 0:
		t.Fatalf("Verify(%d bytes) = %v with problems %v and gaps %v: status and findings disagree", len(b), rep.Status, rep.Problems, rep.Gaps)
	}
	return rep
}

// checkVerdicts verifies b pinned, unpinned and against head, the head
// of g, and checks that only g or a line-end prefix of it is Valid, only
// the whole of g against its head, and that pinning only ever adds
// problems.
//
// With derive, the unpinned pass runs only where its verdict may differ
// from the pinned one. Options.Key adds one rule to what an unpinned
// verification checks: every session's root (SessionReport.Key, its
// key or the key that certifies it) is the pinned key. So where every
// session the pinned pass reports has fuzzPub as its root, the unpinned
// verdict is the pinned one, and a second verification of the same
// lines and signatures would double the exec's cost to learn it.
// FuzzVerify runs both passes on every input, and holds them to that
// rule.
func checkVerdicts(t *testing.T, g []byte, head record.Head, b []byte, derive bool) *verify.Report {
	t.Helper()
	pinned := verifyFuzz(t, b, verify.Options{Key: fuzzPub})
	if pinned.Status == verify.Valid && !genuinePrefix(g, b) {
		t.Fatalf("Verify(%.300q…, pinned) = valid; but the bytes are not the genuine log or a prefix of it cut at a line end", b)
	}
	if !derive || !rootedAt(pinned, fuzzPub) {
		unpinned := verifyFuzz(t, b, verify.Options{})
		if unpinned.Status == verify.Valid && !genuinePrefix(g, b) {
			t.Fatalf("Verify(%.300q…, unpinned) = valid; but the bytes are not the genuine log or a prefix of it, and the fuzzer cannot sign (sessions %+v)", b, sessionKeys(unpinned))
		}
		if pinned.Records != unpinned.Records || len(pinned.Sessions) != len(unpinned.Sessions) {
			t.Fatalf("Verify(%.300q…): pinned %d records %d sessions, unpinned %d records %d sessions", b, pinned.Records, len(pinned.Sessions), unpinned.Records, len(unpinned.Sessions))
		}
		if unpinned.Status == verify.Invalid && pinned.Status != verify.Invalid || pinned.Status == verify.Valid && unpinned.Status != verify.Valid {
			t.Fatalf("Verify(%.300q…) = %v pinned, %v unpinned (%v); pinning may only add problems", b, pinned.Status, unpinned.Status, unpinned.Problems)
		}
		if rootedAt(pinned, fuzzPub) && unpinned.Status != pinned.Status {
			t.Fatalf("Verify(%.300q…) = %v pinned, %v unpinned (%v %v); every session's root is the pinned key, so pinning adds nothing", b, pinned.Status, unpinned.Status, unpinned.Problems, unpinned.Gaps)
		}
	}
	if pinned.Status == verify.Valid {
		withHead := verifyFuzz(t, b, verify.Options{Key: fuzzPub, Head: &head})
		if (withHead.Status == verify.Valid) != bytes.Equal(content(b), g) {
			t.Fatalf("Verify(%.300q…, head %v) = %v (%v); want valid if and only if the bytes are the whole genuine log (head of the bytes: %v)", b, head, withHead.Status, withHead.Problems, pinned.Head)
		}
	}
	return pinned
}

// rootedAt reports whether every session of r has root as its root.
func rootedAt(r *verify.Report, root ed25519.PublicKey) bool {
	k := record.FormatPublicKey(root)
	for _, s := range r.Sessions {
		if s.Key != k {
			return false
		}
	}
	return true
}

// genuineHead and mutationHead are the heads of the genuine log and of
// the mutation log as Verify reports them, found once per process: a
// log's signatures are what an exec spends its time on, and its verdict
// is always the same.
var (
	genuineHead  = sync.OnceValues(func() (record.Head, error) { return logHead(genuineLog()) })
	mutationHead = sync.OnceValues(func() (record.Head, error) { return logHead(mutationLog()) })
)

// logHead verifies g pinned, which must be Valid, and returns its head.
func logHead(g []byte, err error) (record.Head, error) {
	if err != nil {
		return record.Head{}, err
	}
	rep, err := verify.Stream(bytes.NewReader(g), verify.Options{Key: fuzzPub, Workers: 1})
	if err != nil {
		return record.Head{}, err
	}
	if rep.Status != verify.Valid || !rep.HasHead {
		return record.Head{}, fmt.Errorf("Verify(genuine log) = %v %v %v; want valid, with a head", rep.Status, rep.Problems, rep.Gaps)
	}
	return rep.Head, nil
}

func mustGenuineHead(tb testing.TB) record.Head {
	tb.Helper()
	h, err := genuineHead()
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// mustMutationLog returns the mutation log and its head.
func mustMutationLog(tb testing.TB) ([]byte, record.Head) {
	tb.Helper()
	g, err := mutationLog()
	if err != nil {
		tb.Fatal(err)
	}
	h, err := mutationHead()
	if err != nil {
		tb.Fatal(err)
	}
	return g, h
}

func sessionKeys(r *verify.Report) []string {
	var ks []string
	for _, s := range r.Sessions {
		ks = append(ks, s.Key)
	}
	return ks
}

// FuzzVerify feeds Verify arbitrary bytes. It must never panic nor fail to
// read, its status must agree with its findings, pinning must only add
// problems, and nothing but the genuine log or a line-end prefix of it may
// be Valid, pinned or not (the fuzzer holds no key; see genuineLog).
func FuzzVerify(f *testing.F) {
	g := mustGenuine(f)
	head := mustGenuineHead(f)
	f.Add(g)
	lines := bytes.SplitAfter(g, []byte("\n"))
	for _, n := range []int{1, 3, 9, 15, len(lines) - 2} {
		f.Add(bytes.Join(lines[:n], nil))
	}
	f.Add([]byte(nil))
	f.Add([]byte("\n"))
	f.Add([]byte(tornLine))
	f.Add(append(bytes.Clone(g), '\n'))
	f.Add(append(bytes.Clone(g), 0, 0, 0, 0))                            // pre-zeroed space
	f.Add(append(bytes.Join(lines[:3], nil), 0, 0))                      // a prefix, and space
	f.Add(append(bytes.Clone(g[:len(g)-9]), 0, 0))                       // torn, then space
	f.Add(append(append(bytes.Join(lines[:3], nil), 0, 0), lines[3]...)) // a hole
	f.Add(smallOrderLog())
	f.Fuzz(func(t *testing.T, b []byte) {
		checkVerdicts(t, g, head, b, false)
	})
}

// FuzzVerifyMutation applies a program of mutations to the genuine log —
// bit flips, byte changes, insertions, deletions, swapped, dropped,
// repeated and moved lines, truncation — and checks that Verify detects
// every one: the result is Valid only if the bytes are the genuine log or
// a line-end prefix of it; and it is Invalid, not merely Incomplete,
// unless everything up to the last line a signature covers is such a
// prefix. Records after it (an unattested tail, and a partial last line)
// are what a crash leaves: Verify reports them as not trusted, and cannot
// tell a change to them from a torn write.
//
// The genuine log here is mutationLog, its records in fewer commit
// groups, and an exec verifies it pinned, unpinned only where that
// verdict may differ (checkVerdicts): an exec's cost is Verify's.
func FuzzVerifyMutation(f *testing.F) {
	g, head := mustMutationLog(f)
	f.Add([]byte{})
	f.Add([]byte{opFlip, 0, 40, 3})
	f.Add([]byte{opSet, 1, 0, '7'})
	f.Add([]byte{opInsert, 0, 200, 2, ' ', '\n'})
	f.Add([]byte{opDelete, 2, 0, 1})
	f.Add([]byte{opSwap, 3, 4})
	f.Add([]byte{opDrop, 16})
	f.Add([]byte{opRepeat, 2})
	f.Add([]byte{opMove, 17, 2})
	f.Add([]byte{opTruncate, 0, 100})
	f.Add([]byte{opDrop, 17, opDrop, 16})
	f.Add([]byte{opInsert, 255, 255, 1, '\n'})
	f.Add([]byte{opTruncate, 0, 0, opInsert, 0, 0, 2, 'x', '\n', opMove, 0, 1}) // the only line moved: no line to move it before
	f.Add([]byte{opTruncate, 5, 153, opFlip, 3, 89, 0})                         // cut after line 2, which carries an attestation of line 1, and a bit of it flipped: an unattested tail
	f.Fuzz(func(t *testing.T, prog []byte) {
		b := mutate(g, prog)
		rep := checkVerdicts(t, g, head, b, true)
		switch {
		case bytes.Equal(content(b), g):
			if rep.Status != verify.Valid {
				t.Fatalf("Verify(genuine log) = %v %v %v; want valid", rep.Status, rep.Problems, rep.Gaps)
			}
		case rep.Status == verify.Invalid:
		case !genuinePrefix(g, signedPart(b)):
			t.Fatalf("Verify(genuine log mutated by %v) = %v (gaps %v); want invalid: up to the last line a signature covers the log is no line-end prefix of the genuine one\nmutated: %.400q",
				describeProgram(prog), rep.Status, rep.Gaps, b)
		}
	})
}

// signedPart is b up to the end of the last whole line a signature
// covers (its own, or an attestation a later line carries of it or of a
// line after it): what Verify can vouch for. What follows is an
// unattested tail. A line that does not decode covers nothing.
func signedPart(b []byte) []byte {
	end := 0
	ends := map[uint64]int{} // the end of the last line read with each seq
	var d record.Decoder
	for off := 0; off < len(b); {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			break
		}
		if r, err := d.Decode(b[off : off+i]); err == nil {
			if e, ok := ends[r.AttSeq]; ok && r.AttSig != nil {
				end = max(end, e)
			}
			if r.Sig != nil {
				end = off + i + 1
			}
			ends[r.Seq] = off + i + 1
		}
		off += i + 1
	}
	return b[:end]
}

// The mutation opcodes; a program is a sequence of an opcode and its
// arguments. Positions are two bytes, big-endian, taken modulo the length.
const (
	opFlip     = iota // pos, bit: flip one bit
	opSet             // pos, byte: set a byte
	opInsert          // pos, n, n bytes: insert bytes
	opDelete          // pos, n: delete up to n bytes
	opSwap            // line, line: swap two lines
	opDrop            // line: drop a line
	opRepeat          // line: repeat a line after itself
	opMove            // line, line: move a line before another
	opTruncate        // pos: cut the log there
	numOps
)

var opNames = [numOps]string{"flip", "set", "insert", "delete", "swap", "drop", "repeat", "move", "truncate"}

// opArgs is the number of argument bytes each opcode takes (opInsert: and
// then as many as its third says).
var opArgs = [numOps]int{opFlip: 3, opSet: 3, opInsert: 3, opDelete: 3, opSwap: 2, opDrop: 1, opRepeat: 1, opMove: 2, opTruncate: 2}

// maxMutated ends a program once the log it makes is longer: a line
// repeated is joined to itself when no line end follows it, so a
// program of repeats can double a log at every step. The log may still
// hold a line longer than any record (Verify's long-line path), and no
// exec costs more than a few megabytes.
const maxMutated = record.MaxLine

// mutate runs prog on a copy of g. It stops where the program runs out of
// arguments, or once the log is longer than maxMutated.
func mutate(g, prog []byte) []byte {
	b := bytes.Clone(g)
	for len(prog) > 0 && len(b) <= maxMutated {
		op := prog[0] % numOps
		args := prog[1:]
		need := opArgs[op]
		if len(args) < need {
			break
		}
		pos := func() int {
			if len(b) == 0 {
				return 0
			}
			return int(binary.BigEndian.Uint16(args)) % (len(b) + 1)
		}
		switch op {
		case opFlip:
			if p := pos(); p < len(b) {
				b[p] ^= 1 << (args[2] % 8)
			}
		case opSet:
			if p := pos(); p < len(b) {
				b[p] = args[2]
			}
		case opInsert:
			n := min(int(args[2]), len(args)-3)
			p := pos()
			b = append(b[:p], append(bytes.Clone(args[3:3+n]), b[p:]...)...)
			need += n
		case opDelete:
			p := pos()
			b = append(b[:p], b[min(p+int(args[2]), len(b)):]...)
		case opTruncate:
			b = b[:pos()]
		case opSwap, opDrop, opRepeat, opMove:
			lines := bytes.SplitAfter(b, []byte("\n"))
			if len(lines[len(lines)-1]) == 0 {
				lines = lines[:len(lines)-1]
			}
			if len(lines) == 0 {
				break
			}
			line := func(i int) int { return int(args[i]) % max(len(lines), 1) }
			i := line(0)
			switch op {
			case opSwap:
				j := line(1)
				lines[i], lines[j] = lines[j], lines[i]
			case opDrop:
				lines = append(lines[:i:i], lines[i+1:]...)
			case opRepeat:
				lines = append(lines[:i+1:i+1], lines[i:]...)
			case opMove:
				l := lines[i]
				lines = append(lines[:i:i], lines[i+1:]...)
				j := line(1) % (len(lines) + 1)
				lines = append(lines[:j:j], append([][]byte{l}, lines[j:]...)...)
			}
			b = bytes.Join(lines, nil)
		}
		prog = args[need:]
	}
	return b
}

// TestMutateBounded: a program that repeats a last line with no line
// end after it doubles the log at every step; FuzzVerifyMutation found
// one that ran a worker out of memory (tens of gigabytes). mutate stops
// such a program once the log is longer than maxMutated.
func TestMutateBounded(t *testing.T) {
	prog := bytes.Repeat([]byte{opRepeat, 255}, 64) // 255: the last line of one or two
	for _, g := range [][]byte{[]byte("no line end"), []byte("{}\n{\"torn\":")} {
		b := mutate(g, prog)
		if len(b) <= maxMutated || len(b) > 2*maxMutated {
			t.Errorf("mutate(%q, 64 repeats of its last line) = %d bytes; want more than %d (the program runs until then) and at most twice that", g, len(b), maxMutated)
		}
	}
}

// describeProgram renders a mutation program for failure messages.
func describeProgram(prog []byte) string {
	var s []string
	for len(prog) > 0 {
		op := prog[0] % numOps
		n := map[byte]int{opFlip: 3, opSet: 3, opInsert: 3, opDelete: 3, opSwap: 2, opDrop: 1, opRepeat: 1, opMove: 2, opTruncate: 2}[op]
		if len(prog)-1 < n {
			break
		}
		if op == opInsert {
			n += min(int(prog[3]), len(prog)-4)
		}
		s = append(s, fmt.Sprintf("%s%v", opNames[op], prog[1:1+n]))
		prog = prog[1+n:]
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestGenuineLog checks the fuzz targets' premise: the genuine log and
// the mutation log are Valid pinned, hold the sessions they were built
// with, the torn line and its recovery, and are the same bytes every
// time they are built; the mutation log holds the genuine log's records,
// in fewer signed groups.
func TestGenuineLog(t *testing.T) {
	g := mustGenuine(t)
	m, _ := mustMutationLog(t)
	tests := []struct {
		name string
		log  []byte
		few  bool
		// signatures: the signed records (the session_ends), the
		// attestations (one per attestDelay of ts and per synced group)
		// and the two sessions' certificates
		sigs int
	}{
		{"genuine", g, false, 2 + 1 + 2},
		{"mutation", m, true, 2 + 1 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := verifyBytes(t, tt.log, verify.Options{Key: fuzzPub})
			if rep.Status != verify.Valid || len(rep.Sessions) != 2 || rep.Records != 19 {
				t.Fatalf("Verify(%s log) = %v, %d sessions, %d records, %v %v; want valid, 2, 19", tt.name, rep.Status, len(rep.Sessions), rep.Records, rep.Problems, rep.Gaps)
			}
			if !bytes.Contains(tt.log, []byte(tornLine+"\n")) || !bytes.Contains(tt.log, []byte(`"kind":"recovery"`)) {
				t.Errorf("%s log has no torn line answered by a recovery", tt.name)
			}
			if n := bytes.Count(tt.log, []byte(`"sig":"ed25519:`)); n != tt.sigs {
				t.Errorf("%s log carries %d signatures; want %d", tt.name, n, tt.sigs)
			}
			again, err := buildFuzzLog(tt.few)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(tt.log, again) {
				t.Errorf("the %s log differs between two builds: not deterministic", tt.name)
			}
		})
	}
	gl, ml := bytes.Split(g, []byte("\n")), bytes.Split(m, []byte("\n"))
	if len(gl) != len(ml) {
		t.Fatalf("the mutation log has %d lines, the genuine log %d", len(ml), len(gl))
	}
	var dg, dm record.Decoder
	for i := range gl {
		rg, errg := dg.Decode(gl[i])
		rm, errm := dm.Decode(ml[i])
		if (errg == nil) != (errm == nil) || errg == nil && (rg.Seq != rm.Seq || rg.Kind != rm.Kind || rg.SID != rm.SID) {
			t.Errorf("line %d: mutation log %q (%v); genuine log %q (%v): want the same record", i+1, ml[i], errm, gl[i], errg)
		}
	}
}

// Regressions found by fuzzing the verifier.

// TestDecodeOverlongHex: a sid of more than 32 hex digits, or a digest
// (prev, request_digest, …) of more than 64, made Decode panic: hex.Decode
// writes into the fixed-size array before the length is checked
// (decode.go, Decoder.Decode's sid and getter.digest). So aegis verify,
// aegis log, and Open (aegis wrap on an existing file) crashed on one
// crafted line instead of rejecting it. Found by FuzzVerifyMutation
// (testdata/fuzz/FuzzVerifyMutation/overlong_sid, overlong_digest) and
// FuzzVerify (testdata/fuzz/FuzzVerify/overlong_prev).
func TestDecodeOverlongHex(t *testing.T) {
	g := mustGenuine(t)
	first, _, _ := bytes.Cut(g, []byte("\n"))
	sid := []byte(`"sid":"a1010203000000000000000000000000`)
	prev := []byte(`"prev":"sha256:0000000000000000000000000000000000000000000000000000000000000000`)
	if !bytes.Contains(first, sid) || !bytes.Contains(first, prev) {
		t.Fatalf("genuine first line %q has no %s or no %s", first, sid, prev)
	}
	tests := []struct {
		name  string
		field []byte
		extra string
	}{
		{"sid of 33 hex digits", sid, "0"},
		{"sid of 34 hex digits", sid, "00"},
		{"sid of 68 hex digits", sid, strings.Repeat("0", 36)},
		{"prev of 66 hex digits", prev, "00"},
		{"prev of 130 hex digits", prev, strings.Repeat("0", 66)},
	}
	for _, tt := range tests {
		line := bytes.Replace(first, tt.field, append(bytes.Clone(tt.field), tt.extra...), 1)
		t.Run(tt.name, func(t *testing.T) {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("Decode(line with a %s) panicked: %v", tt.name, p)
					}
				}()
				var d record.Decoder
				if _, err := d.Decode(line); !errors.Is(err, record.ErrRecord) {
					t.Errorf("Decode(line with a %s) = %v; want ErrRecord", tt.name, err)
				}
			}()
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("Open(file ending in a line with a %s) panicked: %v", tt.name, p)
					}
				}()
				path := filepath.Join(t.TempDir(), "audit.jsonl")
				if err := os.WriteFile(path, append(line, '\n'), 0o600); err != nil {
					t.Fatal(err)
				}
				j, err := Open(path, Options{Key: fuzzKey})
				if err == nil {
					j.Close()
				}
				if !errors.Is(err, ErrNotLog) {
					t.Errorf("Open(file ending in a line with a %s) = %v; want ErrNotLog", tt.name, err)
				}
			}()
		})
	}
}

// smallOrderKey is the identity point of edwards25519 (a public key of
// small order). crypto/ed25519 accepts smallOrderSig, R the identity and
// S zero, as its signature over every message: no private key is needed.
var (
	smallOrderKey = append([]byte{1}, make([]byte, 31)...)
	smallOrderSig = append([]byte{1}, make([]byte, 63)...)
)

// smallOrderLog is a complete session written without any private key: it
// names smallOrderKey and carries smallOrderSig on every record.
func smallOrderLog() []byte {
	bodies := []record.Body{
		&record.SessionStart{Key: smallOrderKey, Aegis: "forged", Argv: []string{"server"}, Durability: "strict", PolicySet: record.PassThroughSet},
		&record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, Tool: []byte("delete_everything"), HasTool: true},
		&record.Outcome{Call: record.Call{Type: record.IDNumber, Text: []byte("1")}, Intent: 1, HasResponse: true, Status: record.StatusOK},
		&record.SessionEnd{Reason: record.EndClientEOF, Counts: record.Counts{FramesIn: 1, FramesOut: 1, Intents: 1, Outcomes: 1}},
	}
	var out []byte
	var prev record.Digest
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for seq, b := range bodies {
		start := len(out)
		out = append(out, `{"v":2,"seq":`...)
		out = fmt.Appendf(out, "%d", seq)
		out = append(out, `,"ts":"`...)
		out = record.AppendTime(out, ts)
		out = append(out, `","sid":"0123456789abcdef0123456789abcdef","kind":"`...)
		out = append(out, b.Kind().String()...)
		out = append(out, `","prev":"`...)
		out = prev.Append(out)
		out = append(out, '"')
		out = b.AppendFields(out)
		out = record.AppendSig(out, smallOrderSig)
		prev = sha256.Sum256(out[start:])
		out = append(out, '\n')
	}
	return out
}

// TestVerifySmallOrderKey: Verify accepted a session whose key is a point
// of small order (here the identity), for which crypto/ed25519 accepts one
// fixed signature over any message. Such a log is not evidence of
// anything: anyone can write, extend or rewrite it without a private key,
// and the journal never produces such a key. Unpinned, it was reported
// valid; pinned to that key (ParsePublicKey accepts it), too.
func TestVerifySmallOrderKey(t *testing.T) {
	log := smallOrderLog()
	if !ed25519.Verify(smallOrderKey, []byte("any message at all"), smallOrderSig) {
		t.Fatal("premise: crypto/ed25519 no longer accepts the small-order forgery; this test can go")
	}
	if rep := verifyBytes(t, log, verify.Options{}); rep.Status == verify.Valid {
		t.Errorf("Verify(log signed by a small-order key, unpinned) = valid; want invalid: the key signs every message")
	}
	if _, err := record.ParsePublicKey(record.FormatPublicKey(smallOrderKey)); err == nil {
		t.Errorf("ParsePublicKey(%s) = ok; want an error: a small-order key pins nothing", record.FormatPublicKey(smallOrderKey))
	}
}
