package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/journal/record"
)

// TestListenSameIDAnswers: two requests POSTed at once in one session with
// the same id, one allowed (echo) and one refused by the policy
// (delete_all), each receive the answer the log pairs with them: the
// allowed one the child's answer, the refused one aegis's refusal, in
// every round, whichever reaches aegis first, and with the id spelt two
// ways that are one value (7 and 7.0, "a" and "\u0061").
func TestListenSameIDAnswers(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", "version: 1\ndefault: allow\nrules:\n  - tool: \"delete_*\"\n    action: deny\n")
	l := f.listen(t, []string{"--policy", path}, aegisBin, "demo", "--serve")
	sid := l.initialize(t)
	ids := [][2]string{{"7", "7.0"}, {"7.0", "7"}, {`"a"`, `"\u0061"`}, {"-0", "0"}}
	const rounds = 40
	for r := 0; r < rounds; r++ {
		pair := ids[r%len(ids)]
		echo := `{"jsonrpc":"2.0","id":` + pair[0] + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"round ` + fmt.Sprint(r) + `"}}}`
		deny := `{"jsonrpc":"2.0","id":` + pair[1] + `,"method":"tools/call","params":{"name":"delete_all","arguments":{}}}`
		var got [2][]string
		var errs [2]error
		var wg sync.WaitGroup
		for i, body := range []string{echo, deny} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := l.do("POST", sid, body)
				if err != nil {
					errs[i] = err
					return
				}
				got[i], errs[i] = readPayloads(resp)
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v, %v", r, errs[0], errs[1])
		}
		if len(got[0]) != 1 || !strings.Contains(got[0][0], `"round `+fmt.Sprint(r)+`"`) || strings.Contains(got[0][0], "POLICY_DENIED") {
			t.Errorf("round %d: echo with id %s answered %q; want the child's echo of round %d", r, pair[0], got[0], r)
		}
		if want := refusal(pair[1], "POLICY_DENIED", "rules[0] delete_*"); len(got[1]) != 1 || got[1][0] != want {
			t.Errorf("round %d: delete_all with id %s answered %q; want %s", r, pair[1], got[1], want)
		}
	}
	if code := l.stop(t); code != 0 {
		t.Fatalf("exit %d; want 0\n%s", code, l.errText())
	}
	f.mustVerify(t, 0)
	// The log pairs each intent with the outcome its answer says.
	tools := map[uint64]string{}
	var ok, denied int
	for _, rec := range f.records(t) {
		switch b := rec.Body.(type) {
		case *record.Intent:
			tools[rec.Seq] = string(b.Tool)
		case *record.Outcome:
			switch tool := tools[b.Intent]; {
			case tool == "echo" && b.Status == record.StatusOK:
				ok++
			case tool == "delete_all" && b.Status == record.StatusHostDenied:
				denied++
			default:
				t.Errorf("outcome seq %d: %s for a call to %q", rec.Seq, b.Status, tool)
			}
		}
	}
	if ok != rounds || denied != rounds {
		t.Errorf("log: %d echo ok, %d delete_all host_denied; want %d of each", ok, denied, rounds)
	}
}

// TestListenAmbiguousIDsAnswered: under --policy a tools/call whose id is
// ambiguous (a duplicate or case-variant id member, a value of the wrong
// type beside one of the right type) is refused with "id":null, and that
// refusal ends the POST that carried it. A call with the id null, which
// is not ambiguous, is allowed and ends with the child's answer. After
// each, a call with one of the variant's id values is answered as usual.
func TestListenAmbiguousIDsAnswered(t *testing.T) {
	f := newFixture(t)
	path, _ := f.writePolicy(t, "policy.yaml", "version: 1\ndefault: allow\n")
	l := f.listen(t, []string{"--policy", path}, aegisBin, "demo", "--serve")
	l.client = &http.Client{Timeout: 10 * time.Second}
	sid := l.initialize(t)
	for _, tc := range []struct{ name, id, want string }{
		{"duplicate", `"id":1,"id":2`, "null"},
		{"duplicate strings", `"id":"x","id":"y"`, "null"},
		{"case variant", `"id":3,"ID":4`, "null"},
		{"wrong type first", `"id":true,"id":5`, "null"},
		{"escaped duplicate", `"id":"a\u0062","id":"ab"`, "null"},
		{"null", `"id":null`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0",` + tc.id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
			resp, err := l.do("POST", sid, body)
			if err != nil {
				t.Fatalf("POST %s: %v (no answer, no close)", body, err)
			}
			p, err := readPayloads(resp)
			if err != nil {
				t.Fatalf("POST %s: reading: %v (no answer, no close)", body, err)
			}
			want := `{"jsonrpc":"2.0","id":null,"result":{"content":[{"type":"text","text":"x"}]}}`
			if tc.want != "" {
				want = refusal(tc.want, "POLICY_DENIED", "")
			}
			if len(p) != 1 || p[0] != want {
				t.Errorf("POST %s = %q; want %s", body, p, want)
			}
			// The session goes on: a plain call with one of the values.
			resp, err = l.do("POST", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := readPayloads(resp); err != nil || len(p) != 1 || !strings.Contains(p[0], `"after"`) {
				t.Errorf("echo after it = %q, %v; want the child's answer", p, err)
			}
		})
	}
}

// TestListenMaxFrame: --max-frame counts a POSTed line as the relay counts
// it, its '\n' included, whatever line ending the body has: a body whose
// line and '\n' are max bytes is relayed and answered, one byte more is
// 413 and the session goes on (it used to be taken and then end the
// session as too long).
func TestListenMaxFrame(t *testing.T) {
	f := newFixture(t)
	const max = 4096
	l := f.listen(t, []string{"--max-frame", fmt.Sprint(max)}, child("echo")...)
	sid := l.initialize(t)
	// line returns a request line of n bytes.
	line := func(n int) string {
		head, tail := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"`, `"}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		name   string
		body   string
		status int
	}{
		{"line and newline at max", line(max - 1), 200},
		{"line and newline one over", line(max), 413},
		{"CRLF, line and newline at max", line(max-1) + "\r\n", 200},
		{"CRLF, one over", line(max) + "\r\n", 413},
		{"LF, line and newline at max", line(max-1) + "\n", 200},
		{"LF, one over", line(max) + "\n", 413},
		{"far over", line(2 * max), 413},
	} {
		resp, err := l.do("POST", sid, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := readPayloads(resp)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: POST of %d bytes = %d %q; want %d", tc.name, len(tc.body), resp.StatusCode, p, tc.status)
		}
		// The session lives on.
		resp, err = l.do("POST", sid, `{"jsonrpc":"2.0","id":10,"method":"ping"}`)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := readPayloads(resp); err != nil || resp.StatusCode != 200 || len(p) != 1 {
			t.Fatalf("%s: the next request = %d %q, %v; want 200 and its answer\n%s", tc.name, resp.StatusCode, p, err, l.errText())
		}
	}
	if code := l.stop(t); code != 0 {
		t.Fatalf("exit %d; want 0\n%s", code, l.errText())
	}
	f.mustVerify(t, 0)
}

// TestListenBodiesBounded: POST bodies to a child that reads nothing after
// initialize are held back, not buffered: 24 concurrent bodies of a MiB
// (--max-frame 1MiB, so the front holds at most 4 MiB of bodies) leave
// aegis's peak RSS far below the 24 MiB, and three copies of it, that
// reading them all would cost.
func TestListenBodiesBounded(t *testing.T) {
	f := newFixture(t)
	const mib = 1 << 20
	stuck := `IFS= read -r l; printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'; exec sleep 600`
	l := f.listen(t, []string{"--max-frame", "1MiB", "--grace", "100ms"}, "sh", "-c", stuck)
	resp := l.request(t, "POST", "", initializeLine)
	sid := resp.Header.Get("Mcp-Session-Id")
	if p := payloads(t, resp); sid == "" || len(p) != 1 {
		t.Fatalf("initialize = %q, session %q", p, sid)
	}
	base := peakRSS(t, l.cmd.Process.Pid)
	body := `{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"` + strings.Repeat("x", mib-100) + `"}}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 24 {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", l.url, strings.NewReader(body))
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+l.token)
			req.Header.Set("Mcp-Session-Id", sid)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	// Reading every body takes a few milliseconds on loopback; the peak
	// is watched for long enough to see it.
	peak := base
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		peak = max(peak, peakRSS(t, l.cmd.Process.Pid))
	}
	if grew := peak - base; grew > 16*mib {
		t.Errorf("peak RSS grew by %d MiB with 24 bodies of 1 MiB waiting; want at most 16 MiB (4 MiB of bodies, the relay's line and read-ahead, their copies)", grew/mib)
	}
	t.Logf("peak RSS %d MiB, %d MiB before the bodies", peak/mib, base/mib)
	cancel()
}

// peakRSS is the peak resident set of process pid (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}
