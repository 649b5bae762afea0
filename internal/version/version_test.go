package version

import (
	"runtime/debug"
	"testing"
)

// TestFromBuild: the module version, else dev; a commit is named once,
// shortened to 12 hex digits, with ", modified" for a changed tree.
func TestFromBuild(t *testing.T) {
	const rev = "0123456789abcdef0123"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"nothing", "", nil, "dev"},
		{"devel", "(devel)", nil, "dev"},
		{"installed", "v1.2.3", nil, "v1.2.3"},
		{"checkout", "(devel)", vcs("false"), "dev (0123456789ab)"},
		{"changed checkout", "(devel)", vcs("true"), "dev (0123456789ab, modified)"},
		{"pseudo-version naming the commit", "v0.0.0-20260101000000-0123456789ab", vcs("false"), "v0.0.0-20260101000000-0123456789ab"},
		{"short revision", "", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "dev (abc)"},
	}
	for _, tt := range tests {
		bi := &debug.BuildInfo{Main: debug.Module{Version: tt.version}, Settings: tt.settings}
		if got := fromBuild(bi); got != tt.want {
			t.Errorf("%s: fromBuild = %q; want %q", tt.name, got, tt.want)
		}
	}
	if got := Of("v9"); got != "v9" {
		t.Errorf("Of(v9) = %q; want the version set at link time", got)
	}
}
