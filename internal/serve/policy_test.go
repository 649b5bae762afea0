package serve

import (
	"errors"
	"os"
	"path/filepath"
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

// TestLoadPolicy: no file is no policy; a bad file is the policy's
// error, with every diagnostic; a good one gates with its set.
func TestLoadPolicy(t *testing.T) {
	if w, err := LoadPolicy("", "srv", nil); w != nil || err != nil {
		t.Errorf("LoadPolicy(\"\") = %v, %v; want nil, nil", w, err)
	}
	dir := t.TempDir()
	bad, good := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ndefault: maybe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("version: 1\ndefault: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var perr *policy.Error
	if w, err := LoadPolicy(bad, "srv", nil); w != nil || !errors.As(err, &perr) || len(perr.Diags) == 0 {
		t.Errorf("LoadPolicy(bad) = %v, %v; want the policy's diagnostics", w, err)
	}
	w, err := LoadPolicy(good, "srv", func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	if w.Path != good || w.Gate == nil || w.Rejected == nil || w.Set() != w.Gate.Current().Set() || w.Set() == record.PassThroughSet {
		t.Errorf("LoadPolicy(good) = %+v; want its path, gate, set and reporter", w)
	}
}
