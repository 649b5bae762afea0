package record

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestApprovalRoundTrip: a parked intent and each approval decision encode
// as doc.go writes them, decode back to the same values by the decoder
// verify uses, and re-encode byte for byte; an intent without terms is
// the bytes it always was.
func TestApprovalRoundTrip(t *testing.T) {
	ts := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	sid := [32]byte([]byte(strings.Repeat("0", 32)))
	line := func(seq uint64, b Body) []byte {
		dst := AppendCommon(nil, seq, ts, &sid, b.Kind(), Digest{})
		return append(b.AppendFields(dst), '}')
	}
	in := &Intent{Call: Call{Type: IDNumber, Text: []byte("7")}, Tool: []byte("add"), HasTool: true,
		Verdict: VerdictPendingApproval, Rule: "rules[0] add", Set: "sha256:00",
		Approval: &ApprovalTerms{ID: "0123456789abcdef", Server: "demo", Caller: "uid:1000", TimeoutMS: 300000}}
	plain := *in
	plain.Approval = nil
	approved := &Approval{ID: "0123456789abcdef", Intent: 1, Decision: ApprovalApproved, HasBy: true, UID: 1000, User: "ann", Grant: GrantPrefix + "0123456789abcdef"}
	denied := &Approval{ID: "0123456789abcdef", Intent: 1, Decision: ApprovalDenied, HasBy: true, UID: 0, User: "root", Reason: "not \"now\"\n", Grant: GrantDenyAll}
	expired := &Approval{ID: "0123456789abcdef", Intent: 1, Decision: ApprovalExpired, Reason: "no decision within 5m0s", Grant: GrantDenyAll}
	byToken := &Approval{ID: "0123456789abcdef", Intent: 1, Decision: ApprovalApproved, HasBy: true, Principal: "token:00112233aabbccdd", Grant: GrantPrefix + "0123456789abcdef"}
	for _, tt := range []struct {
		b    Body
		want string
	}{
		{in, `"policy":{"verdict":"pending_approval","rule":"rules[0] add","set":"sha256:00"},"approval":{"id":"0123456789abcdef","server":"demo","caller":"uid:1000","timeout_ms":300000},"capability":{"grant":"deny_all"}}`},
		{&plain, `"set":"sha256:00"},"capability":{"grant":"deny_all"}}`},
		{approved, `"kind":"approval"`},
		{approved, `"decision":"approved","by":{"uid":1000,"user":"ann"},"reason":null,"grant":"approval:0123456789abcdef"}`},
		{denied, `"decision":"denied","by":{"uid":0,"user":"root"},"reason":"not \"now\"\n","grant":"deny_all"}`},
		{expired, `"decision":"expired","by":null,"reason":"no decision within 5m0s","grant":"deny_all"}`},
		{byToken, `"decision":"approved","by":{"principal":"token:00112233aabbccdd"},"reason":null,"grant":"approval:0123456789abcdef"}`},
	} {
		l := line(1, tt.b)
		if !strings.Contains(string(l), tt.want) {
			t.Errorf("%s\ndoes not hold\n%s", l, tt.want)
		}
		var d Decoder
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", l, err)
		}
		if got := line(1, r.Body); string(got) != string(l) {
			t.Errorf("re-encoded\n%s\nwant\n%s", got, l)
		}
		checkAgree(t, l)
	}
	for _, bad := range []string{
		`"approval":{"id":"","server":"demo","caller":"uid:1000","timeout_ms":300000}`,
		`"approval":{"id":"0123456789abcdef","server":"demo","caller":"uid:1000","timeout_ms":0}`,
		`"approval":{"id":"0123456789abcdef","server":"demo","caller":"uid:1000"}`,
	} {
		l := strings.Replace(string(line(1, in)), `"approval":{"id":"0123456789abcdef","server":"demo","caller":"uid:1000","timeout_ms":300000}`, bad, 1)
		var d Decoder
		if _, err := d.Decode([]byte(l)); err == nil {
			t.Errorf("Decode(%s) = nil error; want rejected", l)
		}
	}
	// An approver is named one way: by uid and user, or by principal.
	for _, bad := range []string{
		`"by":{"principal":""}`,
		`"by":{"principal":"token:00112233aabbccdd","uid":0,"user":"root"}`,
		`"by":{"uid":0,"user":"root","principal":"token:00112233aabbccdd"}`,
		`"by":{"principal":7}`,
	} {
		l := strings.Replace(string(line(1, byToken)), `"by":{"principal":"token:00112233aabbccdd"}`, bad, 1)
		var d Decoder
		if _, err := d.Decode([]byte(l)); err == nil {
			t.Errorf("Decode(%s) = nil error; want rejected", l)
		}
	}
}

// TestApprovalsGoldenDecode: the golden log of parked calls
// (testdata/approvals.jsonl, written by the journal's writer in package
// verify's TestApprovalsGolden) decodes, by both decoders, to three parked
// intents and an approval record of each decision.
func TestApprovalsGoldenDecode(t *testing.T) {
	lines := bytes.Split(bytes.TrimSuffix(readTestdata(t, "approvals.jsonl"), []byte("\n")), []byte("\n"))
	var got []string
	for _, l := range lines {
		checkAgree(t, l)
		var d Decoder
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", l, err)
		}
		switch b := r.Body.(type) {
		case *Intent:
			if b.Approval != nil {
				got = append(got, "parked "+b.Approval.ID)
			}
		case *Approval:
			got = append(got, b.Decision+" "+b.ID+" "+b.Grant)
		}
	}
	want := []string{"parked 0123456789abcdef", "parked fedcba9876543210", "parked 00112233aabbccdd",
		"approved 0123456789abcdef approval:0123456789abcdef", "denied fedcba9876543210 deny_all", "expired 00112233aabbccdd deny_all"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("golden log decodes to\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
