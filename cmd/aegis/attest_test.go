package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// verifyJSON is what the attestation tests read of aegis verify --json.
type verifyJSON struct {
	Status   string `json:"status"`
	Records  uint64 `json:"records"`
	Sessions []struct {
		Unsigned uint64 `json:"unsigned"`
		Ended    bool   `json:"ended"`
	} `json:"sessions"`
	Problems   []struct{ Msg string } `json:"problems"`
	Incomplete []struct{ Msg string } `json:"incomplete"`
}

// verifyLive runs aegis verify --json on the fixture's log, as it is
// (wrap may be writing it), and returns its exit code and report.
func (f *fixture) verifyLive(t *testing.T) (int, verifyJSON) {
	t.Helper()
	cmd := exec.Command(aegisBin, "verify", "--json", "--key", "@"+f.key+".pub", f.audit)
	out, _ := cmd.Output()
	var rep verifyJSON
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("aegis verify --json: %v\n%s", err, out)
	}
	return cmd.ProcessState.ExitCode(), rep
}

// attestedThrough returns the seq of the last line a signature covers in
// recs (its own "sig", or an attestation some line carries), or -1.
func attestedThrough(recs []*record.Record) int64 {
	covered := int64(-1)
	for _, r := range recs {
		if r.AttSig != nil {
			covered = max(covered, int64(r.AttSeq))
		}
		if r.Sig != nil {
			covered = max(covered, int64(r.Seq))
		}
	}
	return covered
}

// unattestedTail says whether findings hold verify's report of an
// unattested tail as what a crash leaves: at most one group.
func unattestedTail(findings []struct{ Msg string }) bool {
	for _, g := range findings {
		if strings.Contains(g.Msg, "unattested tail of") && strings.Contains(g.Msg, "(at most one group)") {
			return true
		}
	}
	return false
}

// TestAttestThroughWrap drives wrap at strict and reply, call by call:
// a response reaches the client once its outcome is durable (in the
// file), and before a signature covers it (the next record carries it);
// the signature trails by at most the call's own records, so every
// record of the calls before is attested, and aegis verify of the log as
// it stands reports the rest as an unattested tail (incomplete), never
// as a problem. At the
// session's end every record is attested and the log is valid.
func TestAttestThroughWrap(t *testing.T) {
	for _, level := range []string{"strict", "reply"} {
		t.Run(level, func(t *testing.T) {
			f := newFixture(t)
			s := f.start(t, []string{"--durability", level}, nil, child("echo")...)
			prevOutcome := int64(-1) // the seq of the last call's outcome
			const calls = 5
			for i := range calls {
				s.send(call(strconv.Itoa(i+1), "t"))
				if resp := s.recv(); !strings.Contains(resp, `"id":`+strconv.Itoa(i+1)+`,`) {
					t.Fatalf("call %d: response %s", i+1, resp)
				}
				recs := f.records(t)
				last := recs[len(recs)-1]
				o, ok := last.Body.(*record.Outcome)
				if !ok || o.Call.Text == nil || string(o.Call.Text) != strconv.Itoa(i+1) {
					t.Fatalf("call %d: after its response the log's last line is %v (%+v); want its outcome, durable before the response", i+1, last.Kind, last.Body)
				}
				// What a signature covers: every line before this call's
				// intent (the previous call's outcome included), and not
				// the outcome: no signature was made on the response's
				// way (a later record carries it).
				intent := int64(o.Intent)
				if got := attestedThrough(recs); got < intent-1 || got < prevOutcome || got >= int64(last.Seq) {
					t.Fatalf("call %d: lines attested through seq %d; want through %d at least (every line before this call's intent, seq %d), and not the outcome, seq %d", i+1, got, intent-1, intent, last.Seq)
				}
				prevOutcome = int64(last.Seq)
				code, rep := f.verifyLive(t)
				switch {
				case len(rep.Problems) > 0 || code == 1:
					t.Fatalf("call %d: verify of the live log = exit %d, problems %v; want none", i+1, code, rep.Problems)
				case rep.Sessions[0].Unsigned < 1 || rep.Sessions[0].Unsigned > 2:
					t.Fatalf("call %d: %d records unattested; want the call's own, one or two", i+1, rep.Sessions[0].Unsigned)
				case !unattestedTail(rep.Incomplete):
					t.Fatalf("call %d: %d records unattested and verify's gaps %v; want the unattested tail said to be at most one group", i+1, rep.Sessions[0].Unsigned, rep.Incomplete)
				}
			}
			s.stdin.Close()
			if code := s.wait(10 * time.Second); code != 0 {
				t.Fatalf("wrap exit %d; want 0 (%s)", code, s.stderr)
			}
			recs := f.records(t)
			if got := attestedThrough(recs); got != int64(recs[len(recs)-1].Seq) {
				t.Errorf("at the session's end lines attested through seq %d; want every line, through %d", got, recs[len(recs)-1].Seq)
			}
			code, rep := f.verifyLive(t)
			if code != 0 || rep.Status != "valid" || rep.Sessions[0].Unsigned != 0 || !rep.Sessions[0].Ended {
				t.Errorf("verify after the session's end = exit %d, %s, %d unattested, ended %v; want 0, valid, none, ended\n%+v", code, rep.Status, rep.Sessions[0].Unsigned, rep.Sessions[0].Ended, rep)
			}
		})
	}
}

// TestAttestKilledWrap: a wrap killed with SIGKILL mid-session leaves a
// log that verify reads as incomplete, its unattested tail said to be at
// most one group, never as invalid or forged.
func TestAttestKilledWrap(t *testing.T) {
	for _, level := range []string{"strict", "reply"} {
		t.Run(level, func(t *testing.T) {
			f := newFixture(t)
			s := f.start(t, []string{"--durability", level}, nil, child("echo")...)
			for i := range 3 {
				s.send(call(strconv.Itoa(i+1), "t"))
				s.recv()
			}
			// A call in flight as the wrap dies: whatever of it is written.
			s.send(call("4", "t"))
			if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			s.cmd.Wait()
			data := readAudit(f.audit)
			if bytes.Contains(data, []byte(`"kind":"session_end"`)) {
				t.Fatalf("premise: a killed wrap writes no session_end:\n%s", data)
			}
			code, rep := f.verifyLive(t)
			if code != 3 || rep.Status != "incomplete" || len(rep.Problems) > 0 {
				t.Fatalf("verify of a killed wrap's log = exit %d, %s, problems %v; want 3, incomplete, none", code, rep.Status, rep.Problems)
			}
			for _, p := range rep.Incomplete {
				if strings.Contains(p.Msg, "forged") {
					t.Errorf("verify says %q of a killed wrap's log", p.Msg)
				}
			}
			// The last line of a session cut off is never attested: no
			// line after it carries its signature.
			if u := rep.Sessions[0].Unsigned; u < 1 || u > 2 || !unattestedTail(rep.Incomplete) {
				t.Errorf("%d records unattested, verify's gaps %v; want one call's at most (1 or 2), said to be at most one group", u, rep.Incomplete)
			}
		})
	}
}
