package logview

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestToolChanged: a call refused because its tool changed since it was
// pinned (testdata/tool_changed.jsonl, written by aegis wrap under
// on_tool_change: block: one session pins echo, the next finds it
// described otherwise and refuses its call) shows its code, TOOL_CHANGED,
// and the aegis pin commands to run, with the session's server name,
// in the table and in --json (testdata/tool_changed.txt, .json).
func TestToolChanged(t *testing.T) {
	local := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = local })
	for _, tt := range []struct {
		golden string
		json   bool
	}{
		{"tool_changed.txt", false},
		{"tool_changed.json", true},
	} {
		var out bytes.Buffer
		p := NewPrinter(&out, tt.json, false)
		for _, it := range read(t, filepath.Join("testdata", "tool_changed.jsonl"), Options{Sessions: !tt.json}) {
			p.Show(it)
		}
		p.Close()
		golden := filepath.Join("testdata", tt.golden)
		if os.Getenv("AEGIS_UPDATE_GOLDEN") != "" {
			os.WriteFile(golden, out.Bytes(), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s:\n%s\nwant\n%s", tt.golden, out.Bytes(), want)
		}
	}
}

// TestShellWord: a server or tool name in a hint is one word to a shell.
func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"echo":      "echo",
		"fs_read-2": "fs_read-2",
		"a b":       "'a b'",
		"it's":      `'it'\''s'`,
		"$(rm)":     "'$(rm)'",
		"":          "''",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %q; want %q", in, got, want)
		}
	}
}
