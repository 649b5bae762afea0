package logview

import (
	"strings"
	"testing"
	"time"
)

// TestFilter: --since is a duration back from now or an RFC 3339 time,
// --tool a glob; anything else is an error that names the flag.
func TestFilter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		tool, since string
		wantSince   time.Time
		wantErr     string
	}{
		{"", "", time.Time{}, ""},
		{"fs_*", "90m", now.Add(-90 * time.Minute), ""},
		{"", "2026-04-30T10:00:00.5Z", time.Date(2026, 4, 30, 10, 0, 0, 5e8, time.UTC), ""},
		{"[", "", time.Time{}, `--tool "[": `},
		{"", "yesterday", time.Time{}, `--since "yesterday" is neither a duration (90m) nor an RFC 3339 time`},
	} {
		o, err := Filter(tt.tool, tt.since, now)
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("Filter(%q, %q) = %v; want an error %q…", tt.tool, tt.since, err, tt.wantErr)
			}
			continue
		}
		if err != nil || o.Tool != tt.tool || !o.Since.Equal(tt.wantSince) || o.Sessions || o.Follow {
			t.Errorf("Filter(%q, %q) = %+v, %v; want Tool %q, Since %v", tt.tool, tt.since, o, err, tt.tool, tt.wantSince)
		}
	}
}
