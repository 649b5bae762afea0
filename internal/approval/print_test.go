package approval

import (
	"strings"
	"testing"
	"time"
)

// TestWriteList: aegis approvals' table (age and time left rounded to the
// second, never negative), its sentence for no call, and one JSON object
// per call.
func TestWriteList(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ps := []Pending{
		{ID: "3f9c2a7be1d04c55", Server: "fs", Tool: `"write_file"`, Args: `{"path":"/etc"}`, Caller: "stdio", Since: now.Add(-1500 * time.Millisecond), Expiry: now.Add(time.Minute)},
		{ID: "0000000000000001", Server: "db", Tool: `"drop"`, Args: "{}", Caller: "stdio", Since: now.Add(-time.Hour), Expiry: now.Add(-time.Second)},
	}
	tests := []struct {
		name   string
		ps     []Pending
		asJSON bool
		want   string
	}{
		{"table", ps, false, "ID                SERVER  TOOL          CALLER  AGE     EXPIRES IN  ARGUMENTS\n" +
			"3f9c2a7be1d04c55  fs      \"write_file\"  stdio   2s      1m0s        {\"path\":\"/etc\"}\n" +
			"0000000000000001  db      \"drop\"        stdio   1h0m0s  0s          {}\n"},
		{"none", nil, false, "no calls await approval\n"},
		{"none as JSON", nil, true, ""},
		{"JSON", ps[:1], true, `{"id":"3f9c2a7be1d04c55","server":"fs","tool":"\"write_file\"","arguments":"{\"path\":\"/etc\"}","caller":"stdio","since":"2026-12-02T09:59:58.5Z","expires":"2026-12-02T10:01:00Z"}` + "\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		WriteList(&b, tt.ps, tt.asJSON, now)
		if b.String() != tt.want {
			t.Errorf("%s: WriteList =\n%s\nwant\n%s", tt.name, b.String(), tt.want)
		}
	}
}
