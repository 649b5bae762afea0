package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of aegis log on calls of several rounds and calls that became
// tasks, through the real binary, on the golden log of rounds and tasks
// that the journal's writer wrote (journal/record/testdata/rounds.jsonl).

var roundsLog = filepath.Join("..", "..", "journal", "record", "testdata", "rounds.jsonl")

// runLog runs aegis log with args in UTC and returns its stdout.
func runLogUTC(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(aegisBin, append([]string{"log"}, args...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aegis log %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestLogRounds: a call retried in rounds, or that became a task, is one
// line with its final status and markers; --expand adds a line per round
// and task record; the session's revision shows.
func TestLogRounds(t *testing.T) {
	table := runLogUTC(t, roundsLog)
	expanded := runLogUTC(t, "--expand", roundsLog)
	tests := []struct {
		name string
		out  string
		want []string // each a line's fields, in order, on one line
	}{
		{"one line for two rounds", table, []string{"c3010203  2→5", "1", "book", "ok [rounds 2]", "3.00ms"}},
		{"a retry of unknown state", table, []string{"c3010203  6→7", "3", "book [round: unknown_state]", "other (resultType partial)"}},
		{"a task", table, []string{"c3010203  8→9", "4", "render", "tool_error [task]"}},
		{"a task cancelled", table, []string{"c3010203  13→16", "5", "slow", "cancelled (cancelled by the client) [task]"}},
		{"a call cancelled", table, []string{"c3010203  19→20", "6", "slow", "cancelled  "}},
		{"a task unfinished", table, []string{"c3010203  21→22", "7", "render", "unfinished [task]"}},
		{"the revision settled", table, []string{"session c3010203 at", "revision 2026-07-28 (settled by initialize)"}},
		{"the revision at the end", table, []string{"session c3010203 (revision 2026-07-28) ended"}},
		{"round 1 expanded", expanded, []string{"round 1: intent seq 2", "input_required (outcome seq 3)"}},
		{"round 2 expanded", expanded, []string{"round 2: intent seq 4 (by state)", "ok (outcome seq 5)"}},
		{"task end expanded", expanded, []string{"task task-5: seq 18 via tasks/cancel", "end cancelled"}},
		{"task unfinished expanded", expanded, []string{"task task-7: seq 23 via session_end", "end unfinished"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, l := range strings.Split(tt.out, "\n") {
				if inOrder(l, tt.want) {
					return
				}
			}
			t.Errorf("aegis log has no line holding %q in order:\n%s", tt.want, tt.out)
		})
	}
	if n := strings.Count(table, " book "); n != 2 {
		t.Errorf("aegis log shows %d lines of tool book; want 2 (the call of two rounds, the unlinked retry):\n%s", n, table)
	}
	if strings.Contains(table, "round 1:") {
		t.Errorf("aegis log without --expand shows rounds:\n%s", table)
	}
}

// inOrder reports whether s holds each of parts, in order.
func inOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// TestLogRoundsJSON: --json gives each call's links: its rounds' intent
// and outcome seqs, its task's id, intent, outcome and records' seqs.
func TestLogRoundsJSON(t *testing.T) {
	type round struct {
		N       int     `json:"n"`
		Intent  uint64  `json:"intent"`
		Outcome *uint64 `json:"outcome"`
		Status  string  `json:"status"`
		By      string  `json:"by"`
	}
	type call struct {
		Type     string  `json:"type"`
		Seq      uint64  `json:"seq"`
		Call     string  `json:"call"`
		Status   string  `json:"status"`
		Latency  *int64  `json:"latency_ns"`
		Revision string  `json:"revision"`
		Rounds   []round `json:"rounds"`
		Task     *struct {
			ID      string `json:"id"`
			Intent  uint64 `json:"intent"`
			Outcome uint64 `json:"outcome"`
			Status  string `json:"status"`
			Events  []struct {
				Seq   uint64 `json:"seq"`
				Event string `json:"event"`
			} `json:"events"`
		} `json:"task"`
	}
	out := runLogUTC(t, "--json", roundsLog)
	byID := map[string]call{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var c call
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("log --json line %q: %v", l, err)
		}
		if _, dup := byID[c.Call]; dup {
			t.Errorf("log --json shows call %s twice", c.Call)
		}
		byID[c.Call] = c
	}
	if len(byID) != 7-1 {
		t.Errorf("log --json = %d calls; want 6 (7 intents, one a round of another)", len(byID))
	}
	c := byID["1"]
	if c.Status != "ok" || c.Latency == nil || *c.Latency != 3000033 || c.Revision != "2026-07-28" || len(c.Rounds) != 2 ||
		c.Rounds[0].Intent != 2 || c.Rounds[0].Outcome == nil || *c.Rounds[0].Outcome != 3 || c.Rounds[0].Status != "input_required" ||
		c.Rounds[1].Intent != 4 || c.Rounds[1].Outcome == nil || *c.Rounds[1].Outcome != 5 || c.Rounds[1].By != "state" || c.Rounds[1].N != 2 {
		t.Errorf("call 1 = %+v; want ok over 3000033 ns, rounds 2→3 input_required and 4→5 ok by state", c)
	}
	k := byID["5"].Task
	if k == nil || k.ID != "task-5" || k.Intent != 13 || k.Outcome != 16 || k.Status != "cancelled" || len(k.Events) != 2 ||
		k.Events[0].Seq != 17 || k.Events[0].Event != "cancel" || k.Events[1].Seq != 18 || k.Events[1].Event != "end" {
		t.Errorf("call 5's task = %+v; want task-5 of intent 13, outcome 16, cancelled, records 17 cancel and 18 end", k)
	}
	if byID["6"].Rounds != nil || byID["6"].Task != nil {
		t.Errorf("call 6 = %+v; want no rounds and no task", byID["6"])
	}
}
