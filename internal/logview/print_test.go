package logview

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrinterTable: the table puts the column header before the first
// call after every session line and heading, a session's end line its
// summary, and the pass-through legend after the table when a call shown
// said pass-through (genuine.jsonl), none otherwise (decided.jsonl).
func TestPrinterTable(t *testing.T) {
	for _, tt := range []struct {
		log    string
		legend bool
	}{
		{"genuine.jsonl", true},
		{"decided.jsonl", false},
	} {
		var out bytes.Buffer
		p := NewPrinter(&out, false, false)
		p.Heading("audit.jsonl")
		for _, it := range read(t, filepath.Join("..", "..", "journal", "record", "testdata", tt.log), Options{Sessions: true}) {
			p.Show(it)
		}
		p.Close()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if lines[0] != "log audit.jsonl" {
			t.Errorf("%s: first line %q; want the heading", tt.log, lines[0])
		}
		calls, ended := 0, false
		for i, l := range lines {
			if strings.HasPrefix(l, "20") { // a call's TIME
				calls++
				prev := strings.Fields(lines[i-1])
				if prev[0] != "TIME" && !strings.HasPrefix(lines[i-1], "20") {
					t.Errorf("%s: call line %d follows %q; want the header or a call", tt.log, i, lines[i-1])
				}
			}
			if strings.HasPrefix(l, "session ") && strings.Contains(l, " ended ") {
				ended = ended || strings.Contains(l, ", exit ")
			}
		}
		if calls == 0 || !ended {
			t.Errorf("%s: %d calls, an end line with its exit status: %v; want both\n%s", tt.log, calls, ended, out.String())
		}
		hasLegend := strings.HasSuffix(out.String(), "\n\nPOLICY pass-through: no --policy was given, so every call was forwarded unjudged.\n")
		if hasLegend != tt.legend {
			t.Errorf("%s: legend %v; want %v\n%s", tt.log, hasLegend, tt.legend, out.String())
		}
	}
}

// TestPrinterJSON: --json prints one object a line, sessions and calls
// each with its type, and no heading or legend.
func TestPrinterJSON(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, true, false)
	p.Heading("audit.jsonl")
	items := read(t, roundsLog, Options{Sessions: true})
	for _, it := range items {
		p.Show(it)
	}
	p.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(items) {
		t.Fatalf("%d lines for %d items\n%s", len(lines), len(items), out.String())
	}
	for i, l := range lines {
		var v struct{ Type string }
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.Type == "" {
			t.Errorf("line %d = %q (%v); want a JSON object with its type", i, l, err)
		}
	}
}
