package relay_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// fixedGate decides every call with d.
type fixedGate struct{ d gate.Decision }

func (g *fixedGate) Begin(time.Time) gate.FrameDecider { return g }
func (g *fixedGate) Set() string                       { return "sha256:fixed" }
func (g *fixedGate) Decide(*gate.Call) gate.Decision   { return g.d }
func (g *fixedGate) Commit()                           {}

// TestVerdicts: each verdict a Gate can return is recorded as the intent's
// policy.verdict and, refused, answered with its code; the zero Decision
// and a verdict the relay does not know refuse the call as denied (a
// decider that forgets to decide fails closed), never let it through.
func TestVerdicts(t *testing.T) {
	tests := []struct {
		name        string
		d           gate.Decision
		wantVerdict string
		wantCode    string // "" relayed
	}{
		{"allowed", gate.Decision{Verdict: gate.Allowed, Rule: "r"}, record.VerdictAllowed, ""},
		{"denied", gate.Decision{Verdict: gate.Denied, Rule: "r"}, record.VerdictDenied, relay.CodePolicyDenied},
		{"rate limited", gate.Decision{Verdict: gate.RateLimited, Rule: "r", RetryAfter: time.Second}, record.VerdictRateLimited, relay.CodeRateLimited},
		{"pending approval", gate.Decision{Verdict: gate.PendingApproval, Rule: "r"}, record.VerdictPendingApproval, relay.CodePendingApproval},
		{"parked", gate.Decision{Verdict: gate.Parked, Rule: "r"}, record.VerdictPendingApproval, relay.CodePendingApproval},
		{"zero decision", gate.Decision{}, record.VerdictDenied, relay.CodePolicyDenied},
		{"unknown verdict", gate.Decision{Verdict: gate.Verdict(200), Rule: "r"}, record.VerdictDenied, relay.CodePolicyDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, path := testJournal(t)
			var child, client bytes.Buffer
			r := relay.New(relay.Config{Journal: j, Gate: &fixedGate{tt.d}, Client: &client})
			line := tcall("1", "t") + "\n"
			if err := r.Upstream(strings.NewReader(line), &child); err != nil {
				t.Fatalf("Upstream = %v", err)
			}
			var in *record.Intent
			for _, rec := range records(t, j, path) {
				if b, ok := rec.Body.(*record.Intent); ok {
					in = b
				}
			}
			if in == nil || in.Verdict != tt.wantVerdict || in.Refused != (tt.wantCode != "") {
				t.Fatalf("intent = %+v; want verdict %s, refused %v", in, tt.wantVerdict, tt.wantCode != "")
			}
			wantChild, wantClient := line, ""
			if tt.wantCode != "" {
				wantChild = ""
				wantClient = string(relay.AppendRefusal(nil, []byte("1"), tt.wantCode, tt.d.Rule, tt.d.RetryAfter)) + "\n"
			}
			if child.String() != wantChild || client.String() != wantClient {
				t.Errorf("Upstream(%q) = child %q, client %q; want %q, %q", line, child.String(), client.String(), wantChild, wantClient)
			}
		})
	}
}
