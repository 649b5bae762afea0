package logview

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

var approvalsLog = filepath.Join("..", "..", "journal", "record", "testdata", "approvals.jsonl")

// TestViewApprovals: each call of the approvals golden log says, in its
// STATUS column and its JSON, that it waited for approval and how it was
// decided (approved by whom, denied by whom and why, expired), its SEQ
// column still its intent's and outcome's seqs.
func TestViewApprovals(t *testing.T) {
	items := read(t, approvalsLog, Options{})
	want := []struct{ seqs, status, json string }{
		{"1→5", `ok [waited for approval: approved by ann (uid 1000)]`,
			`"approval":{"id":"0123456789abcdef","seq":4,"decision":"approved","by":{"uid":1000,"user":"ann"}}`},
		{"2→7", `host_denied (not executed: approval denied) [waited for approval: denied by ann (uid 1000): "not on \"prod\""]`,
			`"approval":{"id":"fedcba9876543210","seq":6,"decision":"denied","by":{"uid":1000,"user":"ann"},"reason":"not on \"prod\""}`},
		{"3→9", `host_denied (not executed: approval expired) [waited for approval: expired: "no decision within 5m0s"]`,
			`"approval":{"id":"00112233aabbccdd","seq":8,"decision":"expired","by":null,"reason":"no decision within 5m0s"}`},
	}
	if len(items) != len(want) {
		t.Fatalf("View = %d lines; want %d", len(items), len(want))
	}
	for i, w := range want {
		cells := items[i].Call.Cells(false)[0]
		if cells[2] != w.seqs || cells[5] != w.status {
			t.Errorf("call %d: SEQ %q, STATUS %q; want %q, %q", i+1, cells[2], cells[5], w.seqs, w.status)
		}
		if j := jsonOf(t, items[i].Call); !strings.Contains(j, w.json) {
			t.Errorf("call %d: JSON %s; want it to hold %s", i+1, j, w.json)
		}
	}
}

// TestViewApprovalUndecided: a call whose session ended before anyone
// decided says so, and an approver's name and reason that hold control
// characters are shown quoted, escaped.
func TestViewApprovalUndecided(t *testing.T) {
	sid := [16]byte{7}
	id := func(s string) record.Call { return record.Call{Type: record.IDNumber, Text: []byte(s)} }
	parked := func(seq uint64, call, aid string) *record.Record {
		return &record.Record{Seq: seq, SID: sid, Kind: record.KindIntent, Body: &record.Intent{Call: id(call), Tool: []byte("rm"), HasTool: true,
			Verdict: record.VerdictPendingApproval, Set: "sha256:ab", Approval: &record.ApprovalTerms{ID: aid, TimeoutMS: 1000}}}
	}
	recs := []*record.Record{
		{Seq: 0, SID: sid, Kind: record.KindSessionStart, Body: &record.SessionStart{PolicySet: "sha256:ab"}},
		parked(1, "1", "aaaaaaaaaaaaaaaa"),
		parked(2, "2", "bbbbbbbbbbbbbbbb"),
		{Seq: 3, SID: sid, Kind: record.KindApproval, Body: &record.Approval{ID: "bbbbbbbbbbbbbbbb", Intent: 2, Decision: record.ApprovalDenied,
			HasBy: true, UID: 0, User: "ro\x1b[2Jot", Reason: "no\x07\n", Grant: record.GrantDenyAll}},
		{Seq: 4, SID: sid, Kind: record.KindOutcome, Body: &record.Outcome{Call: id("2"), Intent: 2, Status: record.StatusHostDenied, Reason: "not executed: approval denied"}},
		{Seq: 5, SID: sid, Kind: record.KindOutcome, Body: &record.Outcome{Call: id("1"), Intent: 1, Status: record.StatusHostDenied, Reason: "not executed: the session ended awaiting approval"}},
	}
	var out bytes.Buffer
	p := NewPrinter(&out, false, false)
	v := New(Options{}, p.Show)
	for _, r := range recs {
		v.Record(r)
	}
	v.EndLog()
	p.Close()
	for _, w := range []string{
		`host_denied (not executed: the session ended awaiting approval) [waited for approval: no decision]`,
		`[waited for approval: denied by "ro\x1b[2Jot" (uid 0): "no\a\n"]`,
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table:\n%s\nwant it to hold %s", out.String(), w)
		}
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("table holds a control character:\n%q", out.String())
	}
}

// TestViewApprovalRetry: a retry round an approve rule parked puts its
// approval on its call's line.
func TestViewApprovalRetry(t *testing.T) {
	sid := [16]byte{8}
	id := func(s string) record.Call { return record.Call{Type: record.IDNumber, Text: []byte(s)} }
	recs := []*record.Record{
		{Seq: 0, SID: sid, Kind: record.KindSessionStart, Body: &record.SessionStart{PolicySet: "sha256:ab"}},
		{Seq: 1, SID: sid, Kind: record.KindIntent, Body: &record.Intent{Call: id("1"), Tool: []byte("pay"), HasTool: true, Verdict: record.VerdictAllowed, Set: "sha256:ab"}},
		{Seq: 2, SID: sid, Kind: record.KindOutcome, Body: &record.Outcome{Call: id("1"), Intent: 1, HasResponse: true, Status: record.StatusInputRequired}},
		{Seq: 3, SID: sid, Kind: record.KindIntent, Body: &record.Intent{Call: id("2"), Tool: []byte("pay"), HasTool: true, Verdict: record.VerdictPendingApproval, Set: "sha256:ab",
			Round: record.Round{Of: 2, HasOf: true, By: record.RoundByState, N: 2}, Approval: &record.ApprovalTerms{ID: "cccccccccccccccc", TimeoutMS: 1000}}},
		{Seq: 4, SID: sid, Kind: record.KindApproval, Body: &record.Approval{ID: "cccccccccccccccc", Intent: 3, Decision: record.ApprovalApproved,
			HasBy: true, UID: 1000, User: "ann", Grant: record.GrantPrefix + "cccccccccccccccc"}},
		{Seq: 5, SID: sid, Kind: record.KindOutcome, Body: &record.Outcome{Call: id("2"), Intent: 3, HasResponse: true, Status: record.StatusOK}},
	}
	var calls []*Call
	v := New(Options{}, func(it Item) { calls = append(calls, it.Call) })
	for _, r := range recs {
		v.Record(r)
	}
	v.EndLog()
	if len(calls) != 1 || calls[0].Approval == nil {
		t.Fatalf("View = %d calls (%+v); want 1 with its approval", len(calls), calls)
	}
	if got, want := calls[0].Cells(false)[0][5], "ok [rounds 2, waited for approval: approved by ann (uid 1000)]"; got != want {
		t.Errorf("STATUS %q; want %q", got, want)
	}
}
