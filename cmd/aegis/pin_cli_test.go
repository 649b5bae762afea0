package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinCommands: what a careful user meets in aegis pin's commands.
// Help exits 0 and says what SERVER is, what pinning ahead trusts, the
// revisions and the exit statuses. A server with no pin file is named as
// such, and nothing is made for it. aegis pin diff of a rename says it is
// one, and what accepting it does; accept of a tool with no change says
// why (pinned and unchanged, or no such tool) and leaves the pin file as
// it was, byte for byte, and its folder; flags may follow SERVER and TOOL.
func TestPinCommands(t *testing.T) {
	e := newPinEnv(t, "block")
	for _, args := range [][]string{{"pin", "--help"}, {"pin", "help"}, {"pin", "accept", "--help"}} {
		code, out, errOut := e.pinAhead(t, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "--protocol REV") || !strings.Contains(out, "SERVER is the server's name") || !strings.Contains(out, "Exit status: 0; 1 when") {
			t.Errorf("aegis %q = exit %d\n%s%s; want 0 and the help on stdout", args, code, out, errOut)
		}
	}
	code, out, errOut := e.pinAhead(t, "pin", "list", "typo")
	if code != 2 || out != "" || !strings.Contains(errOut, "no pins of typo: no file ") {
		t.Errorf("aegis pin list typo = exit %d\n%s%s; want 2 and no pins of typo", code, out, errOut)
	}
	code, _, errOut = e.pinAhead(t, "pin", "accept", "typo", "echo")
	if _, err := os.Stat(e.state); code != 2 || !os.IsNotExist(err) {
		t.Errorf("aegis pin accept typo echo = exit %d (%s), state folder %v; want 2 and nothing made", code, errOut, err)
	}

	e.setTools(t, toolsV1)
	s := e.start(t, "2025-11-25")
	s.request("tools/list", nil)
	s.end()
	e.setTools(t, toolsRenamed)
	s = e.start(t, "2025-11-25")
	s.request("tools/list", nil)
	s.end()

	code, out, _ = e.pinAhead(t, "pin", "diff", "toolsrv")
	if code != 1 || !strings.HasPrefix(out, "echo2 is renamed from echo: it carries the definition pinned as echo under a new name. aegis pin accept toolsrv echo2 pins it as echo2, and drops echo's pin.\n") ||
		!strings.Contains(out, "-  \"name\": \"echo\"\n+  \"name\": \"echo2\"\n }\n") || strings.HasSuffix(out, "\n \n") {
		t.Errorf("aegis pin diff toolsrv = exit %d\n%s; want 1, the rename said, the names' lines, no blank line at the end", code, out)
	}

	file := filepath.Join(e.state, "aegis", "toolsrv.pins.json")
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	entries := func() string {
		des, _ := os.ReadDir(filepath.Dir(file))
		var names []string
		for _, d := range des {
			names = append(names, d.Name())
		}
		return strings.Join(names, " ")
	}
	had := entries()
	for _, tt := range []struct{ tool, want string }{
		{"nosuch", `aegis pin: no tool "nosuch" among the 1 pinned and 1 changed tools of toolsrv (aegis pin list toolsrv)` + "\n"},
		{"echo", `aegis pin: tool "echo" of toolsrv is pinned, and no wrap has seen it change (aegis pin list toolsrv)` + "\n"},
	} {
		code, out, errOut := e.pinAhead(t, "pin", "accept", "toolsrv", tt.tool)
		if code != 1 || out != "" || errOut != tt.want {
			t.Errorf("aegis pin accept toolsrv %s = exit %d\n%s%s; want 1 and %q", tt.tool, code, out, errOut, tt.want)
		}
		code, _, errOut = e.pinAhead(t, "pin", "diff", "toolsrv", tt.tool)
		if code != 1 || errOut != tt.want {
			t.Errorf("aegis pin diff toolsrv %s = exit %d\n%s; want 1 and %q", tt.tool, code, errOut, tt.want)
		}
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(before, after) || entries() != had {
		t.Errorf("the pin file or its folder changed (%s, was %s)", entries(), had)
	}

	code, out, errOut = e.pinAhead(t, "pin", "accept", "toolsrv", "echo2", "--pins", file)
	if code != 0 || !strings.HasPrefix(out, "accepted echo2 sha256:") {
		t.Fatalf("aegis pin accept toolsrv echo2 --pins FILE = exit %d\n%s%s", code, out, errOut)
	}
	if _, list := e.pinAegis(t, "pin", "list", "toolsrv"); !strings.HasPrefix(list, "echo2\tsha256:") || !strings.Contains(list, "\taccepted by ") || strings.Contains(list, "echo\t") {
		t.Errorf("aegis pin list after accepting the rename:\n%s; want echo2 alone, accepted", list)
	}
}
