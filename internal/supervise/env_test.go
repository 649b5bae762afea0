package supervise

import (
	"slices"
	"strings"
	"testing"
)

// TestCleanEnv: --clean-env keeps HOME, PATH and LANG, adds what --env
// names or sets (a later one replacing an earlier), and returns the
// names in order; a name not set, or not a name, is an error.
func TestCleanEnv(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	t.Setenv("PATH", "/bin")
	t.Setenv("LANG", "C")
	t.Setenv("AEGIS_TEST_TOKEN", "secret")
	tests := []struct {
		name      string
		pass      []string
		wantEnv   []string
		wantNames []string
		wantErr   string
	}{
		{"none", nil, []string{"HOME=/home/u", "PATH=/bin", "LANG=C"}, []string{"HOME", "PATH", "LANG"}, ""},
		{"passed", []string{"AEGIS_TEST_TOKEN"}, []string{"HOME=/home/u", "PATH=/bin", "LANG=C", "AEGIS_TEST_TOKEN=secret"}, []string{"HOME", "PATH", "LANG", "AEGIS_TEST_TOKEN"}, ""},
		{"set, then replaced", []string{"X=1", "PATH=/usr/bin", "X=2"}, []string{"HOME=/home/u", "PATH=/usr/bin", "LANG=C", "X=2"}, []string{"HOME", "PATH", "LANG", "X"}, ""},
		{"not set", []string{"AEGIS_TEST_UNSET"}, nil, nil, "AEGIS_TEST_UNSET is not set"},
		{"not a name", []string{"A B=1"}, nil, nil, `--env "A B=1": want NAME or NAME=VALUE`},
		{"empty name", []string{"=1"}, nil, nil, "want NAME or NAME=VALUE"},
	}
	for _, tt := range tests {
		env, names, err := CleanEnv(tt.pass)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: CleanEnv(%q) = %v; want an error with %q", tt.name, tt.pass, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(env, tt.wantEnv) || !slices.Equal(names, tt.wantNames) {
			t.Errorf("%s: CleanEnv(%q) = %q, %q, %v; want %q, %q", tt.name, tt.pass, env, names, err, tt.wantEnv, tt.wantNames)
		}
	}
	if got := WithoutEnv([]string{"A=1", "SSH_AUTH_SOCK=/s", "B=SSH_AUTH_SOCK"}, "SSH_AUTH_SOCK"); !slices.Equal(got, []string{"A=1", "B=SSH_AUTH_SOCK"}) {
		t.Errorf("WithoutEnv = %q; want A=1 and B=SSH_AUTH_SOCK", got)
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
	tests := []struct {
		name             string
		clean, confined  bool
		pass             []string
		wantErr, wantNil bool
		wantAgent        bool
	}{
		{name: "aegis's own", wantNil: true},
		{name: "--env without --clean-env", pass: []string{"A=1"}, wantErr: true, wantNil: true},
		{name: "confined: no agent socket", confined: true},
		{name: "clean, agent passed on purpose", clean: true, pass: []string{"SSH_AUTH_SOCK"}, wantAgent: true},
	}
	for _, tt := range tests {
		env, _, err := ChildEnv(tt.clean, tt.pass, tt.confined)
		if (err != nil) != tt.wantErr || (env == nil) != tt.wantNil {
			t.Errorf("%s: ChildEnv = %d vars, %v; want nil %v, error %v", tt.name, len(env), err, tt.wantNil, tt.wantErr)
		}
		agent := false
		for _, e := range env {
			agent = agent || strings.HasPrefix(e, "SSH_AUTH_SOCK=")
		}
		if agent != tt.wantAgent {
			t.Errorf("%s: ChildEnv passes SSH_AUTH_SOCK: %v; want %v", tt.name, agent, tt.wantAgent)
		}
	}
}
