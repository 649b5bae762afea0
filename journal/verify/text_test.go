package verify

import (
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestWriteText: what aegis verify prints of a report, line by line:
// singular and plural counts, a set's files with the compressed ones
// counted, the head, findings, the findings dropped, notes.
func TestWriteText(t *testing.T) {
	tests := []struct {
		name string
		rep  Report
		want string
	}{
		{"one of each", Report{Status: Valid, Records: 1, Sessions: []*SessionReport{{Intents: 1, Outcomes: 1}}},
			"L: VALID (pinned)\n  1 record, 1 session, 1 intent, 1 outcome\n"},
		{"empty", Report{Status: Incomplete, Gaps: []Problem{{Msg: "no records"}}},
			"L: INCOMPLETE (pinned)\n  0 records, 0 sessions, 0 intents, 0 outcomes\n  incomplete: no records\n"},
		{"a set with a head, findings and notes", Report{
			Status: Invalid, Records: 7, HasHead: true, Head: record.Head{Seq: 6},
			Sessions: []*SessionReport{{Intents: 2, Outcomes: 1}, {Intents: 1}},
			Files:    []FileReport{{Path: "L.1-3.jsonl.zst"}, {Path: "L.4-5.jsonl"}, {Path: "L"}},
			Problems: []Problem{{File: "/d/L", Line: 3, Seq: 2, HasSeq: true, Msg: "bad signature"}},
			Dropped:  4, Notes: []string{"an empty spare"},
		}, "L: INVALID (pinned)\n  7 records, 2 sessions, 3 intents, 1 outcome\n  3 files (1 compressed)\n" +
			"  head 6:" + record.Head{}.Hash.String() + "\n  invalid: L line 3 (seq 2): bad signature\n  … and 4 more\n  note: an empty spare\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		tt.rep.WriteText(&b, "L", "pinned")
		if b.String() != tt.want {
			t.Errorf("%s: WriteText =\n%s\nwant\n%s", tt.name, b.String(), tt.want)
		}
	}
}
