package agentkey

import (
	"slices"
	"testing"
)

// TestChildEnv: SSH_AUTH_SOCK is taken out of the inherited environment,
// and an environment that names it on purpose is refused.
func TestChildEnv(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "/run/agent.sock")
	t.Setenv("AEGIS_TEST_KEPT", "1")
	tests := []struct {
		name   string
		env    []string
		want   []string // nil: check only that SSH_AUTH_SOCK is gone
		wantOK bool
	}{
		{"given, without it", []string{"A=1", "B=SSH_AUTH_SOCK"}, []string{"A=1", "B=SSH_AUTH_SOCK"}, true},
		{"given, with it", []string{"A=1", "SSH_AUTH_SOCK=/run/agent.sock"}, nil, false},
		{"inherited", nil, nil, true},
	}
	for _, tt := range tests {
		got, ok := ChildEnv(tt.env)
		if ok != tt.wantOK {
			t.Errorf("%s: ChildEnv(%q) ok = %v; want %v", tt.name, tt.env, ok, tt.wantOK)
			continue
		}
		if !ok {
			continue
		}
		if tt.want != nil && !slices.Equal(got, tt.want) {
			t.Errorf("%s: ChildEnv(%q) = %q; want %q", tt.name, tt.env, got, tt.want)
		}
		if slices.ContainsFunc(got, func(e string) bool { return len(e) >= 14 && e[:14] == "SSH_AUTH_SOCK=" }) {
			t.Errorf("%s: ChildEnv = %q; want no SSH_AUTH_SOCK", tt.name, got)
		}
		if tt.env == nil && !slices.Contains(got, "AEGIS_TEST_KEPT=1") {
			t.Errorf("%s: ChildEnv(nil) = %q; want the rest of the environment kept", tt.name, got)
		}
	}
}
