package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

// TestListenMissingCommand: wrap --listen of a command that cannot be
// found says so at start, as a stdio wrap does, and exits 127 without
// serving or opening its log.
func TestListenMissingCommand(t *testing.T) {
	f := newFixture(t)
	cmd := f.wrapCmd([]string{"--listen", "127.0.0.1:0"}, "aegis-listen-no-such-command")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runBounded(t, cmd, 20*time.Second)
	got := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != 127 {
		t.Errorf("wrap --listen of a missing command = exit %d; want 127\n%s", code, got)
	}
	for _, w := range []string{`cannot start "aegis-listen-no-such-command"`, "check the command's spelling and PATH"} {
		if !strings.Contains(got, w) {
			t.Errorf("wrap's stderr lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "serving MCP") {
		t.Errorf("wrap served a command that cannot start:\n%s", got)
	}
	if _, err := os.Stat(f.audit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("wrap opened %s for a command that cannot start (%v)", f.audit, err)
	}
}

// TestListenAnyAddress: --listen 0.0.0.0:PORT says at start that it
// serves every address and that the Host check applies, and a request
// whose Host is no loopback name is refused with a 403 that names
// --allow-host.
func TestListenAnyAddress(t *testing.T) {
	f := newFixture(t)
	l := f.listen(t, []string{"--listen", "0.0.0.0:0"}, aegisBin, "demo", "--serve")
	for _, w := range []string{"--listen 0.0.0.0:0: serving on every network address", "--allow-host"} {
		if !strings.Contains(l.errText(), w) {
			t.Errorf("wrap's stderr lacks %q:\n%s", w, l.errText())
		}
	}
	resp := l.request(t, "POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		"Host: mcp.example:80")
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 403 || !strings.Contains(string(body), "--allow-host") {
		t.Errorf("a request with Host mcp.example = %d %s; want 403 naming --allow-host", resp.StatusCode, body)
	}
}
