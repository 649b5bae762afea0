package witness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport: verify --witness's lines and verdicts: all cosigned is one
// line and neither flag; a missing cosignature is bad; a file that cannot
// be read is unread, whatever else is found.
func TestReport(t *testing.T) {
	pub, _, a, _, cosigned, plain := quorumFixture(t)
	dir := t.TempDir()
	good, history := filepath.Join(dir, "good"), filepath.Join(dir, "history")
	if err := os.WriteFile(good, cosigned, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(history, append(append([]byte{}, cosigned...), plain...), 0o644); err != nil {
		t.Fatal(err)
	}
	q := Quorum{[]Witness{a}, 1}
	tests := []struct {
		name        string
		files       []string
		want        []string // each line's start
		bad, unread bool
	}{
		{"all cosigned", []string{good, good}, []string{"witnesses: all 2 checkpoints carry valid cosignatures by 1 of the 1 witnesses given"}, false, false},
		{"one not cosigned", []string{history}, []string{"witnesses: " + history + ", checkpoint 2"}, true, false},
		{"unreadable and not cosigned", []string{filepath.Join(dir, "missing"), history}, []string{"witnesses: ", "witnesses: " + history}, true, true},
	}
	for _, tt := range tests {
		lines, bad, unread := q.Report(tt.files, pub)
		if len(lines) != len(tt.want) || bad != tt.bad || unread != tt.unread {
			t.Errorf("%s: Report = %q, bad %v, unread %v; want %d lines, bad %v, unread %v", tt.name, lines, bad, unread, len(tt.want), tt.bad, tt.unread)
			continue
		}
		for i, w := range tt.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%s: line %d = %q; want it to start %q", tt.name, i, lines[i], w)
			}
		}
	}
}
