package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/userfiles"
	"github.com/aegisrelay/aegis/journal/record"
)

// TestSessionStartNameClient: session_start records the server's name
// (--name, or the one derived from the command) and --client, verify says
// VALID, and a --client that is not a safe name is a usage error before
// anything is written.
func TestSessionStartNameClient(t *testing.T) {
	t.Parallel()
	argv := child("echo")
	tests := []struct {
		name       string
		extra      []string
		wantName   string
		wantClient string
	}{
		{"both", []string{"--name", "notes", "--client", "claude-desktop"}, "notes", "claude-desktop"},
		{"derived name, no client", nil, userfiles.ServerName(argv), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			s := f.start(t, tt.extra, nil, argv...)
			s.send(call("1", "t"))
			s.recv()
			s.stdin.Close()
			if code := s.wait(20 * time.Second); code != 0 {
				t.Fatalf("wrap exit %d; want 0 (%s)", code, s.stderr)
			}
			f.mustVerify(t, 0)
			st, ok := f.records(t)[0].Body.(*record.SessionStart)
			if !ok {
				t.Fatalf("first record is not session_start")
			}
			if st.Name != tt.wantName || st.Client != tt.wantClient {
				t.Errorf("session_start name %q, client %q; want %q, %q", st.Name, st.Client, tt.wantName, tt.wantClient)
			}
			line := readAudit(f.audit)
			if has := bytes.Contains(line, []byte(`"client":`)); has != (tt.wantClient != "") {
				t.Errorf("session_start has a client field: %v; want %v", has, tt.wantClient != "")
			}
		})
	}

	f := newFixture(t)
	cmd := f.wrapCmd([]string{"--client", "claude desktop"}, argv...)
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), `--client "claude desktop"`) {
		t.Errorf("wrap --client 'claude desktop' = exit %d, %q; want exit 2 naming the flag", code, out)
	}
	if _, err := os.Stat(f.audit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("wrap with a bad --client created %s", f.audit)
	}
}
