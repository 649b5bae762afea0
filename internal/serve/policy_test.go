package serve

import (
	"testing"

	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestPolicyReloadsConfigure: no policy (a nil *PolicyReloads) is
// pass-through, its Config without a gate (a nil interface, not a nil
// *policy.Gate in one) and without a watch; a policy's Config has its
// gate and its watch, and session_start names its set.
func TestPolicyReloadsConfigure(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\ndefault: allow\nrules:\n  - tool: \"delete_*\"\n    action: deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := policy.NewGate(p)
	for _, tt := range []struct {
		name      string
		reloads   *PolicyReloads
		wantSet   string
		wantGate  bool
		wantWatch bool
	}{
		{"no policy", nil, record.PassThroughSet, false, false},
		{"a policy", &PolicyReloads{Path: "p.yaml", Gate: g}, p.Set(), true, true},
	} {
		var c Config
		tt.reloads.Configure(&c)
		if got := tt.reloads.Set(); got != tt.wantSet {
			t.Errorf("%s: Set() = %q; want %q", tt.name, got, tt.wantSet)
		}
		if (c.Gate != nil) != tt.wantGate || (c.Watch != nil) != tt.wantWatch {
			t.Errorf("%s: Configure gave Gate %v, Watch set %v; want gate %v, watch %v", tt.name, c.Gate, c.Watch != nil, tt.wantGate, tt.wantWatch)
		}
		if tt.wantGate && c.Gate != g {
			t.Errorf("%s: Configure gave Gate %v; want the policy's gate", tt.name, c.Gate)
		}
	}
}
