package logview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/userfiles"
)

// TestWriteServers: the list of servers as a table (heading, a row per
// server, the hint) and as JSON (an object per server); a server whose
// log cannot be listed is passed to skip and left out of both.
func TestWriteServers(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := []userfiles.Server{{Name: "gone", Logs: []string{filepath.Join(dir, "gone.jsonl")}}, {Name: "good", Logs: []string{good}}}
	for _, asJSON := range []bool{false, true} {
		var b strings.Builder
		var skipped []error
		WriteServers(&b, dir, servers, asJSON, func(err error) { skipped = append(skipped, err) })
		out := b.String()
		want := []string{"Logs in " + dir + ":\n", "SERVER  LOGS  FILES  SIZE  LAST WRITTEN\n", "good    1     1      3 B", "\nShow a server's calls with 'aegis log NAME'"}
		if asJSON {
			want = []string{`{"name":"good","logs":["` + good + `"],"files":1,"bytes":3,"modified":`}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("json %v: WriteServers wrote\n%s\nwant %q in it", asJSON, out, w)
			}
		}
		if len(skipped) != 1 || strings.Contains(out, "gone") {
			t.Errorf("json %v: skipped %v, wrote\n%s\nwant the gone server skipped alone and not shown", asJSON, skipped, out)
		}
	}
}
