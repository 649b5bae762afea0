package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal/record"
	"github.com/aegisrelay/aegis/journal/verify"
)

// The attestation program's opcodes (FuzzAttest): one byte each, but for
// opClock, which takes the next byte as its step.
const (
	attIntent   = iota // append an intent
	attOutcome         // append an outcome
	attAnomaly         // append an anomaly
	attWaitReq         // Wait(last, BeforeRequest)
	attWaitResp        // Wait(last, BeforeResponse)
	attClock           // n: the clock steps n × 250 µs (0 to 64 ms)
	attCrash           // the log as a crash now leaves it is checked
	attOps
)

// FuzzAttest runs a program of appends, waits and clock steps through a
// journal at a level the program's first byte chooses, and holds the log
// it writes to the signing rule (doc.go, "Signatures"):
//
//   - no gap: wherever the program checks the log as a crash would leave
//     it (attCrash, and after every program), verify finds no problem, and
//     the lines no signature covers (the unattested tail) are what the
//     rule leaves: at strict, where every group is synced, the last group
//     only; at every level, the last group, the group that carried the
//     last attestation, and lines whose ts is within attestDelay of the
//     line that attestation names (before that group) or of that group's
//     last line (after it); verify says such a tail is at most one group;
//   - after Close every line is covered, by its own signature or an
//     attestation, and verify counts no record unattested.
//
// Syncs cost nothing here (noSync): the rule is the writer's, not the
// disk's.
func FuzzAttest(f *testing.F) {
	f.Add([]byte{0, attIntent, attWaitReq, attOutcome, attWaitResp, attCrash, attIntent, attWaitReq, attCrash})
	f.Add([]byte{1, attIntent, attWaitReq, attOutcome, attWaitResp, attIntent, attWaitReq, attCrash, attOutcome, attWaitResp, attCrash})
	f.Add([]byte{2, attIntent, attWaitReq, attClock, 20, attOutcome, attWaitResp, attClock, 45, attIntent, attWaitReq, attCrash, 0x80})
	// At none: A, B 5 ms later, C at 12 ms carrying A's signature, D at
	// 21 ms, E at 21.5 ms: B is unattested past 10 ms of ts, within the
	// span after the line C's attestation names.
	f.Add([]byte{3, attIntent, attWaitReq, attClock, 20, attIntent, attWaitReq, attClock, 28, attIntent, attWaitReq, attCrash,
		attClock, 36, attIntent, attWaitReq, attClock, 2, attIntent, attWaitReq, attCrash})
	// A pause: B's signature waits for the group after the one that
	// carries A's.
	f.Add([]byte{3, attIntent, attWaitReq, attClock, 20, attIntent, attWaitReq, attClock, 255, attClock, 255, attIntent, attWaitReq,
		attClock, 36, attIntent, attWaitReq, attCrash, attClock, 4, attAnomaly, attWaitResp, attCrash})
	f.Add([]byte{0, attIntent, attIntent, attAnomaly, attWaitResp, attOutcome, attOutcome, attWaitReq, attCrash, 0x81})
	f.Fuzz(func(t *testing.T, prog []byte) {
		runAttestProgram(t, prog)
	})
}

// noSync is vfs.OS whose log file's syncs do nothing.
type noSync struct{ vfs.FS }

type noSyncFile struct{ vfs.File }

func (n noSync) OpenLocked(path string, mode vfs.OpenMode) (vfs.File, bool, error) {
	f, created, err := n.FS.OpenLocked(path, mode)
	if err != nil {
		return f, created, err
	}
	return noSyncFile{f}, created, nil
}

func (noSyncFile) Sync() error { return nil }

// attestLog is the log as a program left it, read back: its records, in
// seq order from 0, and the group each was written in.
type attestLog struct {
	data  []byte
	recs  []*record.Record
	group []int
}

func runAttestProgram(t *testing.T, prog []byte) {
	if len(prog) == 0 {
		return
	}
	levels := []Durability{{Level: Strict}, {Level: Reply}, {Level: Interval, Every: time.Hour}, {Level: None}}
	dur := levels[int(prog[0])%len(levels)]
	var clock atomic.Int64
	epoch := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	j, err := Open(path, Options{Durability: dur, Key: fuzzKey, SID: [16]byte{1}, FS: noSync{vfs.OS},
		Now: func() time.Time { return epoch.Add(time.Duration(clock.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	// groups[i] is where the i-th group written ends, in lines.
	var groups []int
	lines := func() int {
		data, _ := os.ReadFile(path)
		return bytes.Count(bytes.TrimRight(data, "\x00"), []byte("\n"))
	}
	wait := func(seq uint64, b Barrier) {
		if err := j.Wait(seq, b); err != nil {
			t.Fatal(err)
		}
		if n := lines(); len(groups) == 0 || n > groups[len(groups)-1] {
			groups = append(groups, n)
		}
	}
	last, _ := j.Append(&record.SessionStart{Aegis: "fuzz", Durability: dur.String(), PolicySet: record.PassThroughSet})
	wait(last, BeforeRequest)
	var open []uint64 // intents not yet answered
	var counts record.Counts
	for i := 1; i < len(prog); i++ {
		switch prog[i] % attOps {
		case attIntent:
			last, _ = j.Append(&record.Intent{Call: record.Call{Text: []byte("1"), Type: record.IDNumber}, RequestDigest: record.Digest{prog[i]}})
			open = append(open, last)
			counts.Intents++
		case attOutcome:
			if len(open) == 0 {
				continue
			}
			last, _ = j.Append(&record.Outcome{Call: record.Call{Text: []byte("1"), Type: record.IDNumber}, Intent: open[0], Status: record.StatusOK, HasResponse: true})
			open = open[1:]
			counts.Outcomes++
		case attAnomaly:
			last, _ = j.Append(&record.Anomaly{Bytes: int(prog[i]), Reason: "fuzz", Forwarded: true})
			counts.Anomalies++
		case attWaitReq:
			wait(last, BeforeRequest)
		case attWaitResp:
			wait(last, BeforeResponse)
		case attClock:
			if i+1 < len(prog) {
				i++
				clock.Add(int64(prog[i]) * int64(250*time.Microsecond))
			}
		case attCrash:
			checkAttestCrash(t, readAttestLog(t, path, groups), dur)
		}
	}
	checkAttestCrash(t, readAttestLog(t, path, groups), dur)
	if prog[len(prog)-1]&0x80 != 0 {
		for _, in := range open {
			j.Append(&record.Outcome{Call: record.Call{Text: []byte("1"), Type: record.IDNumber}, Intent: in, Status: record.StatusUnanswered})
		}
		counts.Outcomes += uint64(len(open))
		counts.Unanswered = uint64(len(open))
		j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: counts})
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	l := readAttestLog(t, path, nil)
	if c, n := attestCovered(l.recs), len(l.recs)-1; c != n {
		t.Fatalf("after Close lines are covered through seq %d; want every line, through %d", c, n)
	}
	rep := verifyPaths(t, []string{path}, verify.Options{Key: fuzzPub})
	if len(rep.Problems) > 0 || rep.Sessions[0].Unsigned != 0 {
		t.Fatalf("verify after Close: problems %v, %d unattested; want none", rep.Problems, rep.Sessions[0].Unsigned)
	}
}

// readAttestLog reads the log at path back; groups says where each group
// ends (nil: no group is known).
func readAttestLog(t *testing.T, path string, groups []int) attestLog {
	t.Helper()
	var l attestLog
	var d record.Decoder
	lines := contentLines(t, path)
	l.data = append(bytes.Join(lines, []byte("\n")), '\n')
	for i, line := range lines {
		r, err := d.Decode(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if r.Seq != uint64(i) {
			t.Fatalf("line %d has seq %d", i+1, r.Seq)
		}
		g := 0
		for g < len(groups) && groups[g] <= i {
			g++
		}
		l.recs, l.group = append(l.recs, r), append(l.group, g)
	}
	return l
}

// attestCovered returns the seq of the last line a signature covers: its
// own, or an attestation a later line carries; -1 for none.
func attestCovered(recs []*record.Record) int {
	c := -1
	for _, r := range recs {
		if r.AttSig != nil {
			c = max(c, int(r.AttSeq))
		}
		if r.Sig != nil {
			c = max(c, int(r.Seq))
		}
	}
	return c
}

// checkAttestCrash holds the log as a crash would leave it now to the
// rule's bound on its unattested tail (FuzzAttest), and verify to
// reading it as such.
func checkAttestCrash(t *testing.T, l attestLog, dur Durability) {
	t.Helper()
	n := len(l.recs)
	lastGroup := l.group[n-1]
	// The group that carried the last attestation, and the line it names;
	// with none, the first group, which asked for its own.
	carrier, named := l.group[0], -1
	for i, r := range l.recs {
		if r.AttSig != nil {
			carrier, named = l.group[i], int(r.AttSeq)
		}
	}
	carrierEnd := time.Time{}
	for i, r := range l.recs {
		if l.group[i] == carrier {
			carrierEnd = r.TS
		}
	}
	c := attestCovered(l.recs)
	for i := c + 1; i < n; i++ {
		g, ts := l.group[i], l.recs[i].TS
		ok := g == lastGroup
		if dur.Level < Strict {
			ok = ok || g == carrier ||
				g < carrier && named >= 0 && ts.Sub(l.recs[named].TS) < attestDelay ||
				g > carrier && ts.Sub(carrierEnd) < attestDelay
		}
		if !ok {
			t.Fatalf("%s: seq %d (group %d, ts +%v) unattested; lines covered through %d, the last attestation (seq %d's) carried by group %d, the last group %d",
				dur, i, g, ts.Sub(l.recs[0].TS), c, named, carrier, lastGroup)
		}
	}
	rep := verifyBytes(t, l.data, verify.Options{Key: fuzzPub})
	if len(rep.Problems) > 0 {
		t.Fatalf("%s: verify of the log as a crash leaves it: problems %v", dur, rep.Problems)
	}
	if u := rep.Sessions[0].Unsigned; u != uint64(n-1-c) {
		t.Fatalf("%s: verify counts %d records unattested; want %d (covered through seq %d of %d)", dur, u, n-1-c, c, n-1)
	}
	said := false
	for _, g := range rep.Gaps {
		said = said || strings.Contains(g.Msg, "unattested tail of") && strings.Contains(g.Msg, "(at most one group)")
	}
	if c < n-1 && !said {
		t.Fatalf("%s: gaps %v; want the unattested tail said to be at most one group", dur, rep.Gaps)
	}
}
