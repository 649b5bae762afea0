package record

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Tests of the rounds and tasks part of the format (rounds.go): the
// golden log testdata/rounds.jsonl (written by the journal's writer in
// package verify's TestRoundsGolden) decodes, encodes back, and reads the
// same by the scanner and the general decoder; the lines the encoder
// never writes are rejected; lists are bounded.

func roundsLines(t *testing.T) [][]byte {
	t.Helper()
	return bytes.Split(bytes.TrimSuffix(readTestdata(t, "rounds.jsonl"), []byte("\n")), []byte("\n"))
}

// roundsLine returns the golden line that holds all of marks.
func roundsLine(t *testing.T, marks ...string) string {
	t.Helper()
	for _, l := range roundsLines(t) {
		all := true
		for _, m := range marks {
			all = all && bytes.Contains(l, []byte(m))
		}
		if all {
			return string(l)
		}
	}
	t.Fatalf("the rounds log has no line holding %q", marks)
	return ""
}

// TestRoundsDecode: every line of the rounds log decodes, both decoders
// agree on it, and the scanner takes every intent and outcome; the kinds
// and fields decode to what was written.
func TestRoundsDecode(t *testing.T) {
	kinds := map[Kind]int{}
	for _, line := range roundsLines(t) {
		var d Decoder
		r, err := d.Decode(line)
		if err != nil {
			t.Fatalf("Decode(%.200s) = %v", line, err)
		}
		kinds[r.Kind]++
		scanned := checkAgree(t, line)
		if want := r.Kind == KindIntent || r.Kind == KindOutcome; scanned != want {
			t.Errorf("scanned(%.200s) = %v; want %v", line, scanned, want)
		}
	}
	for _, k := range []Kind{KindProtocol, KindTask, KindServerRequest, KindClientAnswer} {
		if kinds[k] == 0 {
			t.Errorf("the rounds log holds no %s record", k)
		}
	}

	decode := func(line string) Body {
		t.Helper()
		var d Decoder
		r, err := d.Decode([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return r.Body
	}
	o := decode(roundsLine(t, `"status":"input_required"`)).(*Outcome)
	if len(o.InputRequests) != MaxListEntries || o.InputRequestsMore != 2 || !o.HasRequestState || string(o.ResultType.Text) != "input_required" {
		t.Errorf("input_required outcome = %d requests, more %d, state %v, result_type %q; want %d, 2, true, input_required",
			len(o.InputRequests), o.InputRequestsMore, o.HasRequestState, o.ResultType.Text, MaxListEntries)
	}
	if r := o.InputRequests[1]; string(r.Key.Text) != "kb" || r.HasMethod {
		t.Errorf("input_requests[1] = %q, method %v; want kb, null", r.Key.Text, r.HasMethod)
	}
	in := decode(roundsLine(t, `"by":"state"`)).(*Intent)
	if in.Round != (Round{Of: 3, HasOf: true, By: RoundByState, N: 2}) || len(in.InputResponses) != 2 || in.InputResponsesMore != 3 ||
		in.InputResponses[0].Action != ActionAccept || in.InputResponses[1].Action != "" || string(in.Revision.Text) != "2026-07-28" {
		t.Errorf("retry intent = %+v", in)
	}
	tk := decode(roundsLine(t, `"event":"end"`, `"tool_error"`)).(*Task)
	if !tk.TaskID.Abbreviated() || tk.TaskID.Len != MaxValueBytes+1 || tk.Status != StatusToolError || tk.LatencyNS != 5000 || !tk.HasDigest {
		t.Errorf("task end = %+v", tk)
	}
	u := decode(roundsLine(t, `"via":"session_end"`)).(*Task)
	if u.HasDigest || u.Status != StatusUnfinished {
		t.Errorf("unfinished end = %+v; want digest null, status unfinished", u)
	}
	sr := decode(roundsLine(t, `"kind":"server_request"`)).(*ServerRequest)
	if string(sr.Method.Text) != "elicitation/create" || len(sr.Calls) != 1 || sr.CallsMore != 0 {
		t.Errorf("server_request = %+v", sr)
	}
	ca := decode(roundsLine(t, `"kind":"client_answer"`)).(*ClientAnswer)
	if ca.Request != 14 || ca.Status != StatusOK || ca.Action != ActionCancel {
		t.Errorf("client_answer = %+v", ca)
	}
}

// TestRoundsRejects: a line of a new kind or with a new field that is not
// exactly what the encoder writes is rejected, by both decoders alike.
func TestRoundsRejects(t *testing.T) {
	tests := []struct {
		name     string
		marks    []string
		old, new string
	}{
		{"more zero", []string{`"more":3`}, `"more":3`, `"more":0`},
		{"more negative", []string{`"more":3`}, `"more":3`, `"more":-3`},
		{"more without a list", []string{`"more":3`}, `"input_responses":[{"key":"ka","action":"accept"},{"key":"kb","action":null}],`, ``},
		{"list of 33", []string{`"more":2`}, `"input_requests":[`, `"input_requests":[{"key":"x","method":null},`},
		{"more before the list", []string{`"more":3`}, `"input_responses":[{"key":"ka","action":"accept"},{"key":"kb","action":null}],"more":3`,
			`"more":3,"input_responses":[{"key":"ka","action":"accept"},{"key":"kb","action":null}]`},
		{"action empty", []string{`"more":3`}, `"action":null`, `"action":""`},
		{"method missing", []string{`"more":2`}, `{"key":"kb","method":null}`, `{"key":"kb"}`},
		{"by empty", []string{`"by":"state"`}, `"by":"state"`, `"by":""`},
		{"round of negative", []string{`"by":"state"`}, `"of":3`, `"of":-3`},
		{"round without n", []string{`"by":"unknown_state"`}, `,"n":0}`, `}`},
		{"principal empty", []string{`"principal"`}, `"principal":"token:0123456789abcdef"`, `"principal":""`},
		{"revision after principal", []string{`"principal"`}, `"revision":"2026-07-28","principal":"token:0123456789abcdef"`,
			`"principal":"token:0123456789abcdef","revision":"2026-07-28"`},
		{"request_state upper-case", []string{`"by":"state"`}, `"request_state":"sha256:f3`, `"request_state":"sha256:F3`},
		{"result_type before latency", []string{`"result_type":"complete"`}, `"latency_ns":200,"result_type":"complete"`, `"result_type":"complete","latency_ns":200`},
		{"result_type null", []string{`"result_type":"complete"`}, `"result_type":"complete"`, `"result_type":null`},
		{"task_id abbreviated to nothing", []string{`"kind":"outcome"`, `"task_id":{`}, `"bytes":257`, `"bytes":0`},
		{"task event unknown", []string{`"event":"cancel"`}, `"event":"cancel"`, `"event":"poll"`},
		{"task end without latency", []string{`"event":"end"`, `"tool_error"`}, `,"latency_ns":5000`, ``},
		{"task cancel with execution", []string{`"event":"cancel"`}, `"digest":"sha256:d0bf3e6ee1d668de18c9ca200a4f152062f345283ee68cadfe41204f215d75e9"`,
			`"digest":"sha256:d0bf3e6ee1d668de18c9ca200a4f152062f345283ee68cadfe41204f215d75e9","execution":{"status":"ok","reason":null}`},
		{"task digest empty", []string{`"via":"session_end"`}, `"digest":null`, `"digest":""`},
		{"calls not seqs", []string{`"kind":"server_request"`}, `"calls":[13]`, `"calls":["13"]`},
		{"calls negative", []string{`"kind":"server_request"`}, `"calls":[13]`, `"calls":[-13]`},
		{"answer with a reason", []string{`"kind":"client_answer"`}, `{"status":"ok"}`, `{"status":"ok","reason":null}`},
		{"kind unknown", []string{`"kind":"protocol"`}, `"kind":"protocol"`, `"kind":"protocols"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := roundsLine(t, tt.marks...)
			if !strings.Contains(line, tt.old) {
				t.Fatalf("line holds no %q: %s", tt.old, line)
			}
			bad := strings.Replace(line, tt.old, tt.new, 1)
			var d Decoder
			if _, err := d.Decode([]byte(bad)); !errors.Is(err, ErrRecord) {
				t.Errorf("Decode(%s) = %v; want ErrRecord", tt.name, err)
			}
			checkAgree(t, []byte(bad))
		})
	}
}

// TestListBounds: a list a peer controls writes at most MaxListEntries
// entries and counts the rest, and those a caller counted without
// keeping, in "more"; a record of each new kind with the longest values
// the encoder writes whole, in full lists, stays well under MaxLine.
func TestListBounds(t *testing.T) {
	worst := strings.Repeat("\x01", MaxValueBytes) // 6× as written
	key := BoundedOf([]byte(worst))
	reqs := make([]InputRequest, 100)
	resps := make([]InputResponse, 100)
	for i := range reqs {
		reqs[i] = InputRequest{Key: key, Method: key, HasMethod: true}
		resps[i] = InputResponse{Key: key, Action: ActionDecline}
	}
	seqs := make([]uint64, 100)
	for i := range seqs {
		seqs[i] = ^uint64(0)
	}
	id := Call{Type: IDString, Text: []byte(worst)}
	tests := []struct {
		name     string
		body     Body
		wantMore string
	}{
		{"outcome", &Outcome{Call: id, HasResponse: true, Status: StatusInputRequired, ResultType: key, HasResultType: true, TaskID: key, HasTaskID: true,
			InputRequests: reqs, InputRequestsMore: 5, HasRequestState: true}, `,"more":73`},
		{"intent", &Intent{Call: id, Tool: []byte(worst), HasTool: true, Revision: key, HasRevision: true, Principal: "token:0123456789abcdef",
			Round: Round{Of: ^uint64(0), HasOf: true, By: RoundByMatch, N: 1 << 30}, HasRequestState: true, InputResponses: resps, Rule: worst}, `,"more":68`},
		{"intent with only counted responses", &Intent{InputResponsesMore: 7}, `"input_responses":[],"more":7`},
		{"task input_required", &Task{TaskID: key, Event: TaskInputRequired, Via: "tasks/get", InputRequests: reqs[:33]}, `,"more":1`},
		{"task update", &Task{TaskID: key, Event: TaskUpdate, Via: "tasks/update", InputResponses: resps[:32]}, ``},
		{"task end", &Task{TaskID: key, Event: TaskEnd, Via: "tasks/result", HasDigest: true, Status: StatusFailed, Reason: "failed"}, ``},
		{"server_request", &ServerRequest{Call: id, Method: key, Calls: seqs, CallsMore: 1}, `,"more":69`},
		{"client_answer", &ClientAnswer{Call: id, Status: StatusRPCError}, ``},
		{"protocol", &Protocol{Revision: key}, ``},
	}
	var sc boundScratch
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields := string(tt.body.AppendFields(nil))
			if n := strings.Count(fields, `{"key":`); n > MaxListEntries {
				t.Errorf("AppendFields writes %d list entries; want at most %d", n, MaxListEntries)
			}
			if n := strings.Count(fields, `18446744073709551615,`); n > MaxListEntries {
				t.Errorf("AppendFields writes %d calls; want at most %d", n, MaxListEntries)
			}
			if tt.wantMore != "" && !strings.Contains(fields, tt.wantMore) {
				t.Errorf("AppendFields = %.300s…; want it to hold %s", fields, tt.wantMore)
			}
			if tt.wantMore == "" && strings.Contains(fields, `"more"`) {
				t.Errorf("AppendFields = %.300s…; want no more", fields)
			}
			if line := worstLine(tt.body); len(line) > MaxLine/4 {
				t.Errorf("the longest %s line is %d bytes; want well under MaxLine (%d)", tt.name, len(line), MaxLine)
			}
			checkBounded(t, &sc, tt.body, true)
		})
	}
}
