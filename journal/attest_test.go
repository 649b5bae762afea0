package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// contentLines returns the lines of the log file at path, its
// pre-zeroed space left out.
func contentLines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimRight(data, "\x00")
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// TestDurableBeforeAttested: a Wait that needs a sync returns once its
// group is durable, while the signature of that group is still being made
// (the attester held back); the next group carries the signature, and
// the log verifies with every record covered.
func TestDurableBeforeAttested(t *testing.T) {
	for _, lvl := range []Level{Strict, Reply} {
		t.Run(Durability{Level: lvl}.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			held, release := make(chan uint64, 1), make(chan struct{})
			first := true
			j, err := Open(path, Options{Durability: Durability{Level: lvl}, Key: fuzzKey, attestHook: func(l attestLine) {
				if first {
					first = false
					held <- l.seq
					<-release
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			s0, _ := j.Append(&record.SessionStart{Aegis: "t", Durability: Durability{Level: lvl}.String(), PolicySet: record.PassThroughSet})
			i1, _ := j.AppendHint(&record.Intent{Call: record.Call{Text: []byte("1"), Type: record.IDNumber}}, Hint{Awaits: true})
			if err := j.Wait(i1, BeforeResponse); err != nil {
				t.Fatal(err)
			}
			// Returned: durable. Its signature is being made, held.
			if got := <-held; got != i1 {
				t.Fatalf("attester asked for seq %d; want %d", got, i1)
			}
			j.mu.Lock()
			synced := j.synced
			j.mu.Unlock()
			if synced <= i1 {
				t.Fatalf("Wait(%d, BeforeResponse) returned with synced = %d", i1, synced)
			}
			lines := contentLines(t, path)
			if len(lines) != 2 || bytes.Contains(lines[1], []byte(`"sig"`)) || bytes.Contains(lines[1], []byte(`"att"`)) {
				t.Fatalf("log after Wait =\n%s\nwant 2 lines, the last neither signed nor attested", bytes.Join(lines, []byte("\n")))
			}
			close(release)
			o1, _ := j.AppendHint(&record.Outcome{Call: record.Call{Text: []byte("1"), Type: record.IDNumber}, Intent: i1, Status: record.StatusOK, HasResponse: true}, Hint{Answers: true, Answered: i1})
			if err := j.Wait(o1, BeforeResponse); err != nil {
				t.Fatal(err)
			}
			lines = contentLines(t, path)
			var d record.Decoder
			r, err := d.Decode(lines[o1])
			if err != nil || r.AttSig == nil || r.AttSeq != i1 {
				t.Fatalf("outcome line %s: att seq %d (%v); want an attestation of seq %d", lines[o1], r.AttSeq, err, i1)
			}
			e, _ := j.Append(&record.SessionEnd{Reason: "client_eof", Counts: record.Counts{Intents: 1, Outcomes: 1}})
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			rep := verifyPaths(t, []string{path}, verify.Options{Key: fuzzPub})
			if rep.Status != verify.Valid || rep.Records != e+1 || rep.Sessions[0].Unsigned != 0 {
				t.Errorf("verify = %v, %d records, unsigned %d, problems %v, gaps %v; want valid, %d, 0", rep.Status, rep.Records, rep.Sessions[0].Unsigned, rep.Problems, rep.Gaps, e+1)
			}
			_ = s0
		})
	}
}

// writeGroups writes, at strict, a session_start and then groups of n
// intents (one Wait each), and returns the log's content as a crash
// leaves it (no Close) and where each group begins in it.
func writeGroups(t *testing.T, groups, n int) ([]byte, []int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Durability: Durability{Level: Strict}, Key: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
	if err := j.Wait(s, BeforeRequest); err != nil {
		t.Fatal(err)
	}
	var starts []int
	for g := range groups {
		data, _ := os.ReadFile(path)
		starts = append(starts, len(bytes.TrimRight(data, "\x00")))
		var last uint64
		for i := range n {
			last, _ = j.Append(&record.Intent{Call: record.Call{Text: []byte{'1' + byte(i)}, Type: record.IDNumber}, RequestDigest: record.Digest{byte(g)}})
		}
		if err := j.Wait(last, BeforeRequest); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j.f.f.Close() // a crash: no Close, no session_end, no trim
	return bytes.TrimRight(data, "\x00"), starts
}

// TestCrashUnattestedTail cuts a log written at strict at every byte of
// its last group, as a crash may: verify reports its unattested tail, at
// most one group, as a gap (incomplete, a warning), never as a problem.
func TestCrashUnattestedTail(t *testing.T) {
	const groups, n = 4, 3
	data, starts := writeGroups(t, groups, n)
	last := starts[len(starts)-1]
	for cut := last; cut <= len(data); cut++ {
		rep := verifyBytes(t, data[:cut], verify.Options{Key: fuzzPub})
		if rep.Status != verify.Incomplete || len(rep.Problems) > 0 {
			t.Fatalf("cut at %d of %d: verify = %v, problems %v; want incomplete, none", cut, len(data), rep.Status, rep.Problems)
		}
		whole := bytes.Count(data[:cut], []byte("\n"))
		found := false
		for _, g := range rep.Gaps {
			if strings.Contains(g.Msg, "unattested tail of") {
				found = true
				if !strings.Contains(g.Msg, "(at most one group)") {
					t.Errorf("cut at %d: %s; want it said to be at most one group", cut, g)
				}
				if u := rep.Sessions[0].Unsigned; u == 0 || u > n {
					t.Errorf("cut at %d: unattested %d records; want 1 to %d (one group)", cut, u, n)
				}
			}
		}
		if !found && whole > 1 {
			t.Errorf("cut at %d: gaps %v; want the unattested tail among them", cut, rep.Gaps)
		}
	}
}

// TestLongUnattestedTail: records chained on after the last signature,
// more than record.MaxUnattested bytes of them (no writer leaves that:
// records appended by another hand), make the log invalid.
func TestLongUnattestedTail(t *testing.T) {
	data, _ := writeGroups(t, 2, 2)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var d record.Decoder
	lastRec, err := d.Decode(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	prev := sha256.Sum256(lines[len(lines)-1])
	var sid [32]byte
	hex.Encode(sid[:], lastRec.SID[:])
	out := bytes.Clone(data)
	seq, ts := lastRec.Seq+1, lastRec.TS
	var ends []int // where each forged line ends in out
	for last := 0; len(out)-len(data)-last < record.MaxUnattested; seq++ {
		start := len(out)
		out = record.AppendCommon(out, seq, ts.Add(time.Duration(seq)), &sid, record.KindIntent, prev)
		out = (&record.Intent{Call: record.Call{Text: []byte("7"), Type: record.IDNumber}}).AppendFields(out)
		out = append(out, '}')
		prev = sha256.Sum256(out[start:])
		out = append(out, '\n')
		last = len(out) - start
		ends = append(ends, len(out))
	}
	rep := verifyBytes(t, out, verify.Options{Key: fuzzPub})
	if rep.Status != verify.Invalid || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Msg, "longer than one group") {
		t.Errorf("verify = %v, problems %v; want invalid: an unattested tail longer than one group", rep.Status, rep.Problems)
	}
	// Fewer forged bytes than the bound less the whole log before them:
	// within one group's bound, a warning.
	cut := len(data)
	for _, e := range ends {
		if e-len(data) <= record.MaxUnattested-len(data) {
			cut = e
		}
	}
	rep = verifyBytes(t, out[:cut], verify.Options{Key: fuzzPub})
	if rep.Status != verify.Incomplete {
		t.Errorf("verify with %d forged bytes = %v, problems %v; want incomplete", cut-len(data), rep.Status, rep.Problems)
	}
}

// TestAttestationChecked: an attestation whose signature does not verify,
// or that names a line not in the unattested tail, is a problem; every
// record the writer writes is covered by a signature (no gap).
func TestAttestationChecked(t *testing.T) {
	data, _ := writeGroups(t, 3, 2)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var d record.Decoder
	at := -1
	for i, l := range lines {
		if r, err := d.Decode(l); err == nil && r.AttSig != nil && r.AttSeq > 0 {
			at = i // a later attestation than seq 0's
		}
	}
	if at < 0 {
		t.Fatal("premise: the log holds an attestation")
	}
	for _, tt := range []struct {
		name string
		edit func(r *record.Record)
		want string
	}{
		{"bad signature", func(r *record.Record) { r.AttSig[0] ^= 1 }, "attestation does not verify"},
		{"not in the tail", func(r *record.Record) { r.AttSeq = 0 }, "not in the unattested tail"},
		{"not before it", func(r *record.Record) { r.AttSeq = r.Seq }, "not before it"},
	} {
		r, err := d.Decode(lines[at])
		if err != nil {
			t.Fatal(err)
		}
		tt.edit(r)
		var sid [32]byte
		hex.Encode(sid[:], r.SID[:])
		l := record.AppendCommon(nil, r.Seq, r.TS, &sid, r.Kind, r.Prev)
		l = r.Body.AppendFields(l)
		l = record.AppendAtt(l, r.AttSeq, r.AttSig)
		l = append(l, '}')
		// Re-chain the lines after it, as a forger would.
		forged := append(bytes.Join(lines[:at], []byte("\n")), '\n')
		forged = append(append(forged, l...), '\n')
		prev := sha256.Sum256(l)
		for _, rest := range lines[at+1:] {
			r2, err := d.Decode(rest)
			if err != nil {
				t.Fatal(err)
			}
			hex.Encode(sid[:], r2.SID[:])
			l2 := record.AppendCommon(nil, r2.Seq, r2.TS, &sid, r2.Kind, prev)
			l2 = r2.Body.AppendFields(l2)
			if r2.AttSig != nil {
				l2 = record.AppendAtt(l2, r2.AttSeq, r2.AttSig)
			}
			l2 = append(l2, '}')
			prev = sha256.Sum256(l2)
			forged = append(append(forged, l2...), '\n')
		}
		rep := verifyBytes(t, forged, verify.Options{Key: fuzzPub})
		ok := false
		for _, p := range rep.Problems {
			ok = ok || strings.Contains(p.Msg, tt.want)
		}
		if rep.Status != verify.Invalid || !ok {
			t.Errorf("%s: verify = %v, problems %v; want invalid: %q", tt.name, rep.Status, rep.Problems, tt.want)
		}
	}
	rep := verifyBytes(t, data, verify.Options{Key: fuzzPub})
	if rep.Status != verify.Incomplete || len(rep.Problems) > 0 || rep.Sessions[0].Unsigned > 2 {
		t.Errorf("verify of the log as written = %v, problems %v, unsigned %d; want incomplete (a crash), none, at most one group", rep.Status, rep.Problems, rep.Sessions[0].Unsigned)
	}
}

// TestCloseAttests: a journal closed after a Wait, with no record after
// the group it waited for, leaves no unattested tail: Close writes a
// close record, signed, in the session of the last line; a journal whose
// last record Close writes, or whose last line is a session_end, or that
// wrote nothing, gets none. At every level, and with two sessions in one
// log (the last line's session gets the close record).
func TestCloseAttests(t *testing.T) {
	levels := []Durability{{Level: Strict}, {Level: Reply}, {Level: Interval, Every: time.Hour}, {Level: None}}
	intent := func(text string) *record.Intent {
		return &record.Intent{Call: record.Call{Text: []byte(text), Type: record.IDNumber}}
	}
	for _, dur := range levels {
		t.Run(dur.String(), func(t *testing.T) {
			for _, tt := range []struct {
				name string
				// write appends and waits as a user of the journal would;
				// it returns the seq of the last record and whether it
				// waited for it.
				write     func(j *Journal) (last uint64, waited bool)
				wantClose bool
				sessions  int
			}{
				{"waited", func(j *Journal) (uint64, bool) {
					j.Append(&record.SessionStart{Aegis: "t", Durability: dur.String(), PolicySet: record.PassThroughSet})
					i, _ := j.Append(intent("1"))
					if err := j.Wait(i, BeforeResponse); err != nil {
						t.Fatal(err)
					}
					return i, true
				}, true, 1},
				{"queued", func(j *Journal) (uint64, bool) {
					s, _ := j.Append(&record.SessionStart{Aegis: "t", Durability: dur.String(), PolicySet: record.PassThroughSet})
					if err := j.Wait(s, BeforeRequest); err != nil {
						t.Fatal(err)
					}
					i, _ := j.Append(intent("1"))
					return i, false
				}, false, 1},
				{"ended", func(j *Journal) (uint64, bool) {
					j.Append(&record.SessionStart{Aegis: "t", Durability: dur.String(), PolicySet: record.PassThroughSet})
					e, _ := j.Append(&record.SessionEnd{Reason: record.EndClientEOF})
					if err := j.Wait(e, BeforeResponse); err != nil {
						t.Fatal(err)
					}
					return e, true
				}, false, 1},
				{"two sessions", func(j *Journal) (uint64, bool) {
					// The journal's sid is a's (Options.SID): its key's
					// certificate names it.
					a := j.Session([16]byte{1})
					b := j.Session([16]byte{2})
					a.Append(&record.SessionStart{Aegis: "t", Durability: dur.String(), PolicySet: record.PassThroughSet, Transport: "http"})
					b.Append(&record.SessionStart{Aegis: "t", Durability: dur.String(), PolicySet: record.PassThroughSet, Transport: "http"})
					e, _ := b.Append(&record.SessionEnd{Reason: record.EndClientEOF})
					i, _ := a.Append(intent("1"))
					if err := a.Wait(i, BeforeResponse); err != nil {
						t.Fatal(err)
					}
					_ = e
					return i, true
				}, true, 2},
			} {
				t.Run(tt.name, func(t *testing.T) {
					path := filepath.Join(t.TempDir(), "audit.jsonl")
					j, err := Open(path, Options{Durability: dur, Key: fuzzKey, SID: [16]byte{1}})
					if err != nil {
						t.Fatal(err)
					}
					last, waited := tt.write(j)
					if waited {
						if lines := contentLines(t, path); uint64(len(lines)) != last+1 {
							t.Fatalf("premise: %d lines written before Close; want %d", len(lines), last+1)
						}
					}
					if err := j.Close(); err != nil {
						t.Fatal(err)
					}
					lines := contentLines(t, path)
					var d record.Decoder
					r, err := d.Decode(lines[len(lines)-1])
					if err != nil {
						t.Fatal(err)
					}
					gotClose := r.Kind == record.KindClose
					if gotClose != tt.wantClose || r.Sig == nil {
						t.Fatalf("last line %s: close record %v, signed %v; want a close record %v, signed", lines[len(lines)-1], gotClose, r.Sig != nil, tt.wantClose)
					}
					if want := last + 1 + map[bool]uint64{true: 1}[tt.wantClose]; uint64(len(lines)) != want {
						t.Fatalf("%d lines after Close; want %d", len(lines), want)
					}
					if gotClose {
						prev, _ := d.Decode(lines[len(lines)-2])
						if r.SID != prev.SID {
							t.Errorf("close record of session %x; want the last line's, %x", r.SID, prev.SID)
						}
					}
					opts := verify.Options{Key: fuzzPub}
					if tt.sessions > 1 {
						// A pinned key certifies the journal's first
						// session only.
						opts = verify.Options{}
					}
					rep := verifyPaths(t, []string{path}, opts)
					if len(rep.Problems) > 0 || len(rep.Sessions) != tt.sessions {
						t.Fatalf("verify: problems %v, %d sessions; want none, %d", rep.Problems, len(rep.Sessions), tt.sessions)
					}
					for _, s := range rep.Sessions {
						if s.Unsigned != 0 {
							t.Errorf("session %s: %d records unattested; want none", s.SID, s.Unsigned)
						}
					}
					for _, g := range rep.Gaps {
						if strings.Contains(g.Msg, "unattested") {
							t.Errorf("verify gap %q; want no unattested tail", g)
						}
					}
				})
			}
		})
	}
}

// TestCloseNothingWritten: a journal closed with nothing written leaves
// its log as it was; one opened on a log with a torn tail and closed at
// once writes the recovery, unsigned (its key is named only by the
// session_start after it), and no close record.
func TestCloseNothingWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Durability: Durability{Level: Strict}, Key: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); len(bytes.TrimRight(data, "\x00")) != 0 {
		t.Fatalf("log after Open and Close = %q; want it empty", data)
	}
	data, _ := writeGroups(t, 1, 1)
	data = append(data, `{"v":2,"seq":`...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err = Open(path, Options{Durability: Durability{Level: Strict}, Key: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	lines := contentLines(t, path)
	var d record.Decoder
	r, err := d.Decode(lines[len(lines)-1])
	if err != nil || r.Kind != record.KindRecovery || r.Sig != nil {
		t.Fatalf("last line %s (%v); want an unsigned recovery", lines[len(lines)-1], err)
	}
	rep := verifyPaths(t, []string{path}, verify.Options{Key: fuzzPub})
	if len(rep.Problems) > 0 {
		t.Errorf("verify: problems %v; want none", rep.Problems)
	}
}

// TestCloseRecordSigned: a close record without its signature is a
// problem, as a session_end without one is: a writer always signs it.
func TestCloseRecordSigned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Durability: Durability{Level: Strict}, Key: fuzzKey})
	if err != nil {
		t.Fatal(err)
	}
	j.Append(&record.SessionStart{Aegis: "t", Durability: "strict", PolicySet: record.PassThroughSet})
	i, _ := j.Append(&record.Intent{Call: record.Call{Text: []byte("1"), Type: record.IDNumber}})
	if err := j.Wait(i, BeforeResponse); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	lines := contentLines(t, path)
	last := lines[len(lines)-1]
	at := bytes.LastIndex(last, []byte(record.SigField))
	if !bytes.Contains(last, []byte(`"kind":"close"`)) || at < 0 {
		t.Fatalf("premise: the last line %s is a signed close record", last)
	}
	lines[len(lines)-1] = append(bytes.Clone(last[:at]), '}')
	rep := verifyBytes(t, append(bytes.Join(lines, []byte("\n")), '\n'), verify.Options{Key: fuzzPub})
	ok := false
	for _, p := range rep.Problems {
		ok = ok || strings.Contains(p.Msg, "close is not signed")
	}
	if rep.Status != verify.Invalid || !ok {
		t.Errorf("verify of a close record without its signature = %v, problems %v; want invalid: close is not signed", rep.Status, rep.Problems)
	}
}
