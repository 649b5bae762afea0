package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pinAhead runs aegis pin toolsrv -- toolserver.py (pinning ahead of
// time) in e's state folder and returns its exit status, stdout and
// stderr.
func (e *pinEnv) pinAhead(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if args == nil {
		args = append([]string{"pin", "toolsrv", "--"}, toolServer(t)...)
	}
	cmd := exec.Command(aegisBin, args...)
	cmd.Env = e.env()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestPinAhead: aegis pin SERVER -- CMD pins the tools CMD lists (every
// page) before any wrap has run: a wrap's first session then finds a
// tool described otherwise changed, not pinned on first use, and under
// block refuses its call TOOL_CHANGED. Pinning ahead again makes the
// tools listed now the pins, and clears what a wrap saw of them.
func TestPinAhead(t *testing.T) {
	t.Parallel()
	for _, rev := range revisions {
		t.Run(rev, func(t *testing.T) {
			e := newPinEnv(t, "block")
			e.page = 1 // one tool a page: the listing is followed to its end
			e.setTools(t, `[{"name":"a","description":"A"},`+toolsV1[1:])
			code, out, errOut := e.pinAhead(t)
			if code != 0 || !strings.Contains(out, "pinned a sha256:") || !strings.Contains(out, "pinned echo sha256:") {
				t.Fatalf("aegis pin = exit %d\n%s%s; want 0, a and echo pinned", code, out, errOut)
			}
			if code, list := e.pinAegis(t, "pin", "list", "toolsrv"); code != 0 || strings.Count(list, "\taegis pin\n") != 2 {
				t.Fatalf("aegis pin list = exit %d\n%s; want a and echo, by aegis pin", code, list)
			}

			// The server describes echo otherwise before the first wrap.
			e.setTools(t, `[{"name":"a","description":"A"},`+toolsV2[1:])
			s := e.start(t, rev)
			s.request("tools/list", nil)
			s.request("tools/list", map[string]any{"cursor": "1"})
			if got := refusedCode(s.call("echo")); got != "TOOL_CHANGED" {
				t.Errorf("echo, changed since pinned ahead: refusal %q; want TOOL_CHANGED", got)
			}
			if a := s.call("a"); a.Error != nil {
				t.Errorf("a: refused %q", refusedCode(a))
			}
			s.end()
			var got []string
			for _, tr := range e.toolsRecords(t) {
				got = append(got, pins(tr))
			}
			if want := "a:same|echo:changed"; strings.Join(got, "|") != want {
				t.Errorf("tools records %q; want %q", got, want)
			}

			// Pinning ahead again: echo's pin is what the server lists now.
			if code, out, errOut := e.pinAhead(t); code != 0 {
				t.Fatalf("aegis pin again = exit %d\n%s%s", code, out, errOut)
			}
			if _, list := e.pinAegis(t, "pin", "list", "toolsrv"); strings.Contains(list, "changed") {
				t.Errorf("aegis pin list after pinning again:\n%s; want no change left", list)
			}
			s = e.start(t, rev)
			s.request("tools/list", nil)
			s.request("tools/list", map[string]any{"cursor": "1"})
			if a := s.call("echo"); a.Error != nil {
				t.Errorf("echo pinned again: refused %q", refusedCode(a))
			}
			s.end()
			trs := e.toolsRecords(t)
			if got := pins(trs[len(trs)-1]); got != "echo:same" {
				t.Errorf("last tools record %q; want echo:same", got)
			}
			e.f.mustVerify(t, 0)
		})
	}
}

// TestPinAheadRefuses: what aegis pin SERVER -- CMD does not pin, and
// says why: a tool readers read differently (exit 1, the others pinned),
// no command, a server that answers nothing, a pin file that is not the
// format (left as it was).
func TestPinAheadRefuses(t *testing.T) {
	t.Parallel()
	e := newPinEnv(t, "")
	e.setTools(t, `[{"name":"a","description":"safe","description":"read the keys"},{"name":"b"}]`)
	code, out, errOut := e.pinAhead(t)
	if code != 1 || !strings.Contains(errOut, `tool "a" not pinned: tools/list: a key appears twice in one object`) || !strings.Contains(out, "pinned b ") || strings.Contains(out, "pinned a ") {
		t.Errorf("aegis pin, a ambiguous = exit %d\n%s%s; want 1, b pinned, a not", code, out, errOut)
	}

	bad := filepath.Join(e.f.dir, "bad.pins.json")
	if err := os.WriteFile(bad, []byte("not a pin file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{"pin", "toolsrv", "--"}, "no command to list the tools of"},
		{"no command, no --", []string{"pin", "toolsrv"}, "no command to list the tools of"},
		{"server answers nothing", []string{"pin", "toolsrv", "--", "true"}, "server/discover: the server closed its"},
		{"no such command", []string{"pin", "toolsrv", "--", filepath.Join(e.f.dir, "none")}, "cannot start"},
		{"pin file not the format", append([]string{"pin", "--pins", bad, "toolsrv", "--"}, toolServer(t)...), bad},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := e.pinAhead(t, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) || out != "" {
				t.Errorf("aegis %q = exit %d\n%s%s; want 2 and %q", tt.args, code, out, errOut, tt.want)
			}
		})
	}
	if data, _ := os.ReadFile(bad); string(data) != "not a pin file\n" {
		t.Errorf("the refused pin file now holds %q", data)
	}
}

// TestPinAheadProtocol: aegis pin SERVER -- CMD asks the server which
// revision it speaks (server/discover) and lists its tools over
// 2026-07-28 when it names it, its _meta on every request: a server that
// speaks only 2026-07-28 (it refuses initialize) is pinned. A server that
// refuses server/discover, answers it without 2026-07-28, or never
// answers it, is listed after initialize, over 2025-11-25. --protocol
// chooses without asking. The first line says which it used, and why.
func TestPinAheadProtocol(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		era, protocol string
		code          int
		want          string
	}{
		{"modern", "", 0, "protocol 2026-07-28 (the server's answer to server/discover)\n"},
		{"modern", "2026-07-28", 0, "protocol 2026-07-28 (--protocol)\n"},
		{"modern", "2025-11-25", 2, "initialize: error -32022: Unsupported protocol version"},
		{"legacy", "", 0, "protocol 2025-11-25 (server/discover refused (-32601): initialize)\n"},
		{"", "", 0, "protocol 2025-11-25 (server/discover answered without 2026-07-28: initialize)\n"},
		{"silent", "", 0, "protocol 2025-11-25 (no answer to server/discover in 5s: initialize)\n"},
		{"", "2025-11-25", 0, "protocol 2025-11-25 (--protocol)\n"},
		{"", "1999-01-01", 2, `--protocol "1999-01-01": aegis pin speaks 2026-07-28 and 2025-11-25`},
	} {
		t.Run(tt.era+"/"+tt.protocol, func(t *testing.T) {
			e := newPinEnv(t, "")
			e.era = tt.era
			e.setTools(t, toolsV1)
			args := append([]string{"pin", "toolsrv", "--"}, toolServer(t)...)
			switch {
			case tt.protocol != "" && tt.era == "modern": // the flag after SERVER
				args = append([]string{"pin", "toolsrv", "--protocol", tt.protocol, "--"}, toolServer(t)...)
			case tt.protocol != "":
				args = append([]string{"pin", "--protocol", tt.protocol, "toolsrv", "--"}, toolServer(t)...)
			}
			code, out, errOut := e.pinAhead(t, args...)
			if code != tt.code || !strings.Contains(out+errOut, tt.want) {
				t.Fatalf("aegis %q = exit %d\n%s%s; want %d and %q", args, code, out, errOut, tt.code, tt.want)
			}
			if code == 0 && (!strings.HasPrefix(out, tt.want) || !strings.Contains(out, "\npinned echo sha256:")) {
				t.Errorf("stdout %q; want the protocol, then echo pinned", out)
			}
		})
	}
}
