package clientconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/exitcode"
)

// TestReport: what aegis config prints of each file and the status it
// exits with: a refusal is a usage error and an unwritten rewrite an I/O
// one, both leaving the file as it was; a dry run shows the diff and
// writes nothing; a list shows the entries alone.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	src := "{\"mcpServers\": {\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"server-fs\"]}}}\n"
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{Aegis: "/bin/aegis", Client: "cursor"}
	dry, err := Apply(file, DoWrap, o, true, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		a         *Applied
		err       error
		dry, list bool
		code      int
		why, out  string // substrings; out "" wants no output
	}{
		{"refused", nil, &RefusedError{Path: file, Err: ErrSyntax}, false, false, exitcode.Usage, file + ": refused, left as it was: ", ""},
		{"unreadable", nil, os.ErrNotExist, false, false, exitcode.Usage, "; left as it was", ""},
		{"no client", dry, ErrNoClient, false, false, exitcode.Usage, "name it with --client ID", ""},
		{"list", dry, nil, false, true, exitcode.OK, "", "  wraps    mcpServers.fs: "},
		{"dry run", dry, nil, true, false, exitcode.OK, "", "  --dry-run: not written\n"},
		{"moved", dry, ErrMoved, false, false, exitcode.Usage, "moved while it was read?", "(wrapped)"},
		{"changed", dry, ErrChanged, false, false, exitcode.AuditIO, "its client wrote it?", "(wrapped)"},
		{"write failed", dry, errors.New("disk full"), false, false, exitcode.AuditIO, "writing " + dry.Path + ": disk full", "(wrapped)"},
	}
	for _, tt := range tests {
		var b strings.Builder
		wrote, code, why := Report(&b, "wrap", tt.a, tt.err, tt.dry, tt.list)
		if wrote || code != tt.code || (why == nil) != (tt.why == "") || why != nil && !strings.Contains(why.Error(), tt.why) {
			t.Errorf("%s: Report = %v, %d, %v; want false, %d, %q", tt.name, wrote, code, why, tt.code, tt.why)
		}
		if tt.out == "" && b.Len() > 0 || !strings.Contains(b.String(), tt.out) {
			t.Errorf("%s: Report printed %q; want %q in it", tt.name, b.String(), tt.out)
		}
	}
	var b strings.Builder
	a, err := Apply(file, DoWrap, o, false, "")
	if wrote, code, why := Report(&b, "wrap", a, err, false, false); !wrote || code != exitcode.OK || why != nil ||
		!strings.HasSuffix(b.String(), "  written; no backup kept (--no-backup)\n") {
		t.Errorf("written: Report = %v, %d, %v, %q; want it written", wrote, code, why, b.String())
	}
}
