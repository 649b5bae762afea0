package confine

import (
	"errors"
	"strings"
	"testing"
)

func TestRequested(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		confine bool
		p       Profile
		want    string // error text held; "" none
		nilProf bool
	}{
		{name: "nothing", nilProf: true},
		{name: "grant without --confine", p: Profile{Read: []string{dir}}, want: "--allow-read needs --confine", nilProf: true},
		{name: "best effort without --confine", p: Profile{BestEffort: true}, want: "--best-effort needs --confine", nilProf: true},
		{name: "confined", confine: true, p: Profile{Read: []string{dir}}},
		{name: "missing path", confine: true, p: Profile{Write: []string{dir + "/nope"}}, want: "--allow-write " + dir + "/nope: no such file", nilProf: true},
	}
	for _, tt := range tests {
		got, err := Requested(tt.confine, tt.p)
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrProfile)) {
			t.Errorf("%s: Requested = %v; want ErrProfile holding %q", tt.name, err, tt.want)
		}
		if tt.want == "" && err != nil {
			t.Errorf("%s: Requested = %v; want no error", tt.name, err)
		}
		if (got == nil) != tt.nilProf {
			t.Errorf("%s: Requested = %+v; want nil %v", tt.name, got, tt.nilProf)
		}
	}
}
