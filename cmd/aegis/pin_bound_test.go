package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/internal/pin"
	"github.com/aegisrelay/aegis/journal/record"
)

// toolsJSON is the tools array of names, each with description desc.
func toolsJSON(t *testing.T, names []string, desc string) string {
	t.Helper()
	tools := make([]map[string]any, len(names))
	for i, n := range names {
		tools[i] = map[string]any{"name": n, "description": desc}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// listAll lists every page of s's tools.
func (s *mcpSession) listAll() {
	s.t.Helper()
	cursor := ""
	for range 100 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			NextCursor string `json:"nextCursor"`
		}
		json.Unmarshal(s.request("tools/list", params).Result, &res)
		if cursor = res.NextCursor; cursor == "" {
			return
		}
	}
	s.t.Fatal("the listing does not end")
}

func (e *pinEnv) anomalies(t *testing.T) []string {
	var out []string
	for _, r := range e.f.records(t) {
		if a, ok := r.Body.(*record.Anomaly); ok && a.Response {
			out = append(out, a.Reason)
		}
	}
	return out
}

// TestPinBoundListed: an answer lists more tools than aegis reads
// (pin.MaxListed); those past the bound are named only, and count as
// changed: under block a pinned tool listed past it, with its pinned
// definition, is refused TOOL_CHANGED, never passed unread. The pin file
// then holds pin.MaxPinned tools: one more listed is not pinned and is
// refused too. The answer's records and stderr say both bounds.
func TestPinBoundListed(t *testing.T) {
	t.Parallel()
	e := newPinEnv(t, "block")
	e.setTools(t, toolsJSON(t, []string{"echo"}, "Echo"))
	s := e.start(t, "2025-11-25")
	s.request("tools/list", nil)
	s.end()

	// echo comes after pin.MaxListed others; 4095 of those are pinned
	// (with echo, the pin file's pin.MaxPinned), the last is not.
	e.setTools(t, toolsJSON(t, append(names("f", pin.MaxListed), "echo"), "Echo"))
	s = e.start(t, "2025-11-25")
	s.request("tools/list", nil)
	for _, tt := range []struct{ tool, want string }{
		{"echo", "TOOL_CHANGED"},                           // past MaxListed
		{fmt.Sprint("f", pin.MaxListed-1), "TOOL_CHANGED"}, // past MaxPinned
		{"f0", ""}, {fmt.Sprint("f", pin.MaxPinned-2), ""}, // pinned on first use
	} {
		if got := refusedCode(s.call(tt.tool)); got != tt.want {
			t.Errorf("%s: refusal %q; want %q", tt.tool, got, tt.want)
		}
	}
	stderr := s.end()
	for _, want := range []string{
		fmt.Sprintf("lists more than %d tools: the 1 past them are not read, not pinned, and count as changed (on_tool_change: block)", pin.MaxListed),
		fmt.Sprintf(`1 tools of toolsrv past what a pin file holds (%d tools,`, pin.MaxPinned),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "\n"); n > 40 {
		t.Errorf("stderr has %d lines for one answer; want a few", n)
	}
	if got, want := e.anomalies(t), []string{pin.ReasonListBound, pin.ReasonPinBound}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("anomalies %q; want %q", got, want)
	}
	trs := e.toolsRecords(t)
	last := trs[len(trs)-1]
	if last.More != 0 || len(last.Tools) != record.MaxTools {
		// The record lists record.MaxTools and counts the rest.
		if len(last.Tools)+last.More != pin.MaxListed+1 {
			t.Errorf("tools record lists %d and %d more; want %d", len(last.Tools), last.More, pin.MaxListed+1)
		}
	}
	if code, out := e.pinAegis(t, "pin", "list", "toolsrv"); code != 0 || strings.Count(out, "\tfirst use\n") != pin.MaxPinned {
		t.Errorf("aegis pin list = exit %d, %d pins; want %d", code, strings.Count(out, "\tfirst use\n"), pin.MaxPinned)
	}
	e.f.mustVerify(t, 0)
}

// TestPinBoundChanged: a server lists, page after page, more renames of a
// pinned tool than a wrap keeps changed tools (pin.MaxChanged) and than a
// pin file keeps seen definitions. Past the bound, every tool without a
// pin counts as changed: under block, a tool never listed is refused too,
// while the pinned echo, unchanged, passes. The pin file stays one a wrap
// reads, and stderr says the bound once.
func TestPinBoundChanged(t *testing.T) {
	t.Parallel()
	e := newPinEnv(t, "block")
	e.page = 2500
	e.setTools(t, toolsJSON(t, []string{"echo"}, "Echo"))
	s := e.start(t, "2025-11-25")
	s.request("tools/list", nil)
	s.end()

	n := 2*pin.MaxPinned + 10 // past what a pin file's tools and seen hold together
	e.setTools(t, toolsJSON(t, names("r", n), "Echo"))
	s = e.start(t, "2026-07-28")
	s.listAll()
	for _, tt := range []struct{ tool, want string }{
		{"r0", "TOOL_CHANGED"},
		{fmt.Sprint("r", n-1), "TOOL_CHANGED"},
		{"never-listed", "TOOL_CHANGED"},
		{"echo", ""},
	} {
		if got := refusedCode(s.call(tt.tool)); got != tt.want {
			t.Errorf("%s: refusal %q; want %q", tt.tool, got, tt.want)
		}
	}
	stderr := s.end()
	if want := fmt.Sprintf("more than %d changed tools without a pin; from now on every tool without a pin counts as changed", pin.MaxChanged); strings.Count(stderr, want) != 1 {
		t.Errorf("stderr does not say %q once:\n%.3000s", want, stderr)
	}
	if !strings.Contains(stderr, "their definitions are not kept for aegis pin diff or accept") {
		t.Errorf("stderr does not say the renames past the pin file's bound are not kept:\n%.3000s", stderr)
	}
	code, out := e.pinAegis(t, "pin", "list", "toolsrv")
	if code != 0 || strings.Count(out, "renamed from echo") != pin.MaxPinned {
		t.Errorf("aegis pin list = exit %d, %d renames; want 0 and %d\n%.500s", code, strings.Count(out, "renamed from echo"), pin.MaxPinned, out)
	}
	// A wrap still starts on the pin file.
	s = e.start(t, "2025-11-25")
	s.request("tools/list", nil)
	s.end()
	e.f.mustVerify(t, 0)
}

// TestPinBoundBytes: definitions that a pin file lays out one member a
// line take many times their canonical bytes; a wrap pins on first use
// only what keeps the file under pin.MaxFileSize. The one past it is not
// pinned, is refused under block, and the next wrap starts on the file.
func TestPinBoundBytes(t *testing.T) {
	t.Parallel()
	e := newPinEnv(t, "block")
	// Arrays nested 120 deep around 100,000 numbers: about 200 kB in
	// canonical form, over 25 MB indented: the file holds two.
	deep := strings.Repeat("[", 120) + strings.TrimSuffix(strings.Repeat("1,", 100000), ",") + strings.Repeat("]", 120)
	var tools []string
	for _, n := range []string{"a", "b", "c"} {
		tools = append(tools, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object","default":%s}}`, n, deep))
	}
	e.setTools(t, "["+strings.Join(tools, ",")+"]")
	s := e.start(t, "2025-11-25")
	s.request("tools/list", nil)
	refused := 0
	for _, n := range []string{"a", "b", "c"} {
		if refusedCode(s.call(n)) == "TOOL_CHANGED" {
			refused++
		}
	}
	stderr := s.end()
	if refused != 1 || !strings.Contains(stderr, "past what a pin file holds") {
		t.Errorf("%d of 3 refused; want 1, and stderr to say why:\n%s", refused, stderr)
	}
	st, err := os.Stat(e.state + "/aegis/toolsrv.pins.json")
	if err != nil || st.Size() > pin.MaxFileSize {
		t.Fatalf("pin file: %v, %d bytes; want at most %d", err, st.Size(), pin.MaxFileSize)
	}
	s = e.start(t, "2025-11-25") // starts only on a pin file it reads
	s.request("tools/list", nil)
	s.end()
	e.f.mustVerify(t, 0)
}
