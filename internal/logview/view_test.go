package logview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegisrelay/aegis/journal/record"
)

// read returns the lines a View shows of the log in file, with opts.
func read(t *testing.T, file string, opts Options) []Item {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var items []Item
	v := New(opts, func(it Item) { items = append(items, it) })
	if err := v.Read(bytes.NewReader(data), func(n int64) { t.Errorf("long line of %d bytes", n) }); err != nil {
		t.Fatal(err)
	}
	v.EndLog()
	return items
}

var roundsLog = filepath.Join("..", "..", "journal", "record", "testdata", "rounds.jsonl")

// TestViewRounds: the golden log of rounds and tasks shows each call as
// one line, with its final status, its whole latency and the seqs of the
// records it took, in record order between its session's lines.
func TestViewRounds(t *testing.T) {
	items := read(t, roundsLog, Options{Sessions: true})
	var got []string
	for _, it := range items {
		if s := it.Session; s != nil {
			got = append(got, s.JSON.Type+" "+s.JSON.Revision)
			continue
		}
		c := it.Call
		line := c.Call + " " + c.Status
		if c.LatencyNS != nil {
			line += " " + jsonOf(t, *c.LatencyNS)
		}
		if c.Rounds != nil {
			line += " rounds " + jsonOf(t, c.Rounds)
		}
		if c.Task != nil {
			line += " task " + jsonOf(t, c.Task)
		}
		if c.RoundBy != "" {
			line += " round_by " + c.RoundBy
		}
		if c.ResultType != "" {
			line += " result_type " + c.ResultType
		}
		got = append(got, line)
	}
	long := strings.Repeat("t", 64) + "…"
	want := []string{
		"session_start ",
		"protocol 2026-07-28",
		// 3 s of the writer's clock (11 ms + 11 ns a record) from the first intent to the final outcome.
		`1 ok 3000033 rounds [{"n":1,"intent":2,"outcome":3,"status":"input_required","latency_ns":100,"verdict":"pass-through"},{"n":2,"intent":4,"outcome":5,"status":"ok","by":"state","latency_ns":200,"verdict":"pass-through"}]`,
		`3 other 300 round_by unknown_state result_type partial`,
		`4 tool_error 5000 task {"id":"` + long + `","intent":8,"outcome":9,"status":"tool_error","events":[{"seq":10,"event":"input_required","via":"tasks/get"},{"seq":11,"event":"update","via":"tasks/update"},{"seq":12,"event":"end","via":"notifications/tasks","status":"tool_error"}]}`,
		`5 cancelled 6000 task {"id":"task-5","intent":13,"outcome":16,"status":"cancelled","events":[{"seq":17,"event":"cancel","via":"tasks/cancel"},{"seq":18,"event":"end","via":"tasks/cancel","status":"cancelled"}]}`,
		`6 cancelled 600`,
		`7 unfinished 7000 task {"id":"task-7","intent":21,"outcome":22,"status":"unfinished","events":[{"seq":23,"event":"end","via":"session_end","status":"unfinished"}]}`,
		"session_end 2026-07-28",
	}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("View(rounds log) =\n%s\nwant\n%s", g, w)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestViewPending: a call that waits for a retry, or for its task's end,
// holds the lines after it until its session closes; then it is shown as
// it is (input_required, task), and with Follow the lines after it are
// shown as they are done.
func TestViewPending(t *testing.T) {
	sid := [16]byte{7}
	start := &record.Record{Seq: 0, SID: sid, Kind: record.KindSessionStart, Body: &record.SessionStart{PolicySet: record.PassThroughSet}}
	in := func(seq uint64, id string) *record.Record {
		return &record.Record{Seq: seq, SID: sid, Kind: record.KindIntent, Body: &record.Intent{Call: record.Call{Type: record.IDNumber, Text: []byte(id)}, Tool: []byte("t"), HasTool: true}}
	}
	out := func(seq, of uint64, id, status string) *record.Record {
		return &record.Record{Seq: seq, SID: sid, Kind: record.KindOutcome, Body: &record.Outcome{Call: record.Call{Type: record.IDNumber, Text: []byte(id)}, Intent: of, Status: status, HasResponse: true}}
	}
	end := &record.Record{Seq: 5, SID: sid, Kind: record.KindSessionEnd, Body: &record.SessionEnd{Counts: record.Counts{Intents: 2, Outcomes: 2}}}
	recs := []*record.Record{start, in(1, "1"), out(2, 1, "1", record.StatusInputRequired), in(3, "2"), out(4, 3, "2", record.StatusOK), end}
	tests := []struct {
		name   string
		follow bool
		want   string
	}{
		{"in record order", false, "session_start; 1 input_required; 2 ok; session_end"},
		{"follow", true, "session_start; 2 ok; 1 input_required; session_end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			v := New(Options{Sessions: true, Follow: tt.follow}, func(it Item) {
				if it.Session != nil {
					got = append(got, it.Session.JSON.Type)
				} else {
					got = append(got, it.Call.Call+" "+it.Call.Status)
				}
			})
			for _, r := range recs {
				v.Record(r)
			}
			v.EndLog()
			if g := strings.Join(got, "; "); g != tt.want {
				t.Errorf("View = %q; want %q", g, tt.want)
			}
		})
	}
}

// TestCellsExpand: a call's table line gives its seqs (the first
// intent's, and the final outcome's: the seqs aegis prove takes), marks
// its rounds and task, and with expand adds a line per round and task
// record.
func TestCellsExpand(t *testing.T) {
	items := read(t, roundsLog, Options{})
	var lines []string
	for _, it := range items {
		if it.Call == nil {
			continue
		}
		for _, cells := range it.Call.Cells(true) {
			lines = append(lines, strings.Join(cells[2:7], "|"))
		}
	}
	want := []string{
		"2→5|1|book|ok [rounds 2]|3.00ms",
		"||  round 1: intent seq 2|input_required (outcome seq 3)|0.1µs",
		"||  round 2: intent seq 4 (by state)|ok (outcome seq 5)|0.2µs",
		"6→7|3|book [round: unknown_state]|other (resultType partial)|0.3µs",
		"8→9|4|render|tool_error [task]|5.0µs",
	}
	if g := strings.Join(lines[:len(want)], "\n"); g != strings.Join(want, "\n") {
		t.Errorf("Cells(expand) =\n%s\nwant\n%s", g, strings.Join(want, "\n"))
	}
	if got := strings.Join(items[0].Call.Cells(false)[0][2:7], "|"); got != want[0] || len(items[0].Call.Cells(false)) != 1 {
		t.Errorf("Cells(no expand) = %q; want one line %q", got, want[0])
	}
	if len(header) != len(items[0].Call.Cells(false)[0]) {
		t.Errorf("header has %d columns, a call's line %d", len(header), len(items[0].Call.Cells(false)[0]))
	}
}

// TestSessionNameClient: a session_start's server name and client are on
// its line and in its JSON, each only when recorded.
func TestSessionNameClient(t *testing.T) {
	for _, tt := range []struct {
		name, server, client, want string
	}{
		{"both", "server-memory", "claude-desktop", ": server server-memory (client claude-desktop); child npx"},
		{"name only", "server-memory", "", ": server server-memory; child npx"},
		{"client only", "", "vscode", ": (client vscode); child npx"},
		{"neither", "", "", ": child npx"},
	} {
		r := &record.Record{SID: [16]byte{1}, Kind: record.KindSessionStart}
		b := &record.SessionStart{Argv: []string{"npx", "-y", "@modelcontextprotocol/server-memory"}, Name: tt.server, Client: tt.client, PolicySet: record.PassThroughSet}
		s := startLine(r, b)
		if !strings.Contains(s.Text, tt.want) {
			t.Errorf("%s: startLine = %q; want it to hold %q", tt.name, s.Text, tt.want)
		}
		if s.JSON.Name != tt.server || s.JSON.Client != tt.client {
			t.Errorf("%s: startLine JSON name, client = %q, %q; want %q, %q", tt.name, s.JSON.Name, s.JSON.Client, tt.server, tt.client)
		}
	}
}

// TestViewRoundVerdicts: each round is judged as the call it is, and its
// line's rounds say each round's verdict: a retry the policy refuses ends
// the call host_denied, its first round allowed.
func TestViewRoundVerdicts(t *testing.T) {
	sid := [16]byte{9}
	id := func(s string) record.Call { return record.Call{Type: record.IDNumber, Text: []byte(s)} }
	recs := []*record.Record{
		{Seq: 0, SID: sid, Kind: record.KindSessionStart, Body: &record.SessionStart{PolicySet: "sha256:ab"}},
		{Seq: 1, SID: sid, Kind: record.KindIntent, Body: &record.Intent{Call: id("1"), Tool: []byte("pay"), HasTool: true, Verdict: record.VerdictAllowed, Rule: "pay", Set: "sha256:ab"}},
		{Seq: 2, SID: sid, Kind: record.KindOutcome, Body: &record.Outcome{Call: id("1"), Intent: 1, HasResponse: true, Status: record.StatusInputRequired}},
		{Seq: 3, SID: sid, Kind: record.KindIntent, Body: &record.Intent{Call: id("2"), Tool: []byte("pay"), HasTool: true, Verdict: record.VerdictDenied, Rule: "over limit", Set: "sha256:ab", Refused: true,
			Round: record.Round{Of: 2, HasOf: true, By: record.RoundByState, N: 2}}},
		{Seq: 4, SID: sid, Kind: record.KindOutcome, Body: &record.Outcome{Call: id("2"), Intent: 3, Status: record.StatusHostDenied}},
	}
	var calls []*Call
	v := New(Options{}, func(it Item) { calls = append(calls, it.Call) })
	for _, r := range recs {
		v.Record(r)
	}
	v.EndLog()
	if len(calls) != 1 {
		t.Fatalf("View = %d calls; want 1", len(calls))
	}
	c := calls[0]
	got := c.Status
	for _, r := range c.Rounds {
		got += fmt.Sprintf("; %d %s %s (%s)", r.Intent, r.Status, r.Verdict, r.Rule)
	}
	if want := "host_denied; 1 input_required allowed (pay); 3 host_denied denied (over limit)"; got != want {
		t.Errorf("call = %q; want %q", got, want)
	}
}
