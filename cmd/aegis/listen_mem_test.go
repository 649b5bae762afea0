package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
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

// floodChild is a shell MCP server for the memory tests: it answers
// initialize; a line naming "flood" gets 64 notifications of 1,000,000
// bytes and then (when it has an id) its answer; any other line with an
// id is answered at once.
const floodChild = `IFS= read -r l
printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}\n'
pad=$(head -c 1000000 /dev/zero | tr '\0' x)
note='{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'$pad'"}}'
while IFS= read -r l; do
  id=${l#*'"id":'}; id=${id%%,*}
  case $l in *'"flood"'*) i=0; while [ $i -lt 64 ]; do printf '%s\n' "$note"; i=$((i+1)); done;; esac
  case $l in *'"id":'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}\n' "$id";; esac
done`

// slowClient is an HTTP client whose connections take 64 KiB before its
// reader does (a fixed receive buffer, which the kernel does not grow),
// so that one that reads nothing holds the server back at once.
func slowClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10)
		})
		return err
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestListenOutBounded: a server that writes 64 MB of notifications
// during a call (--max-frame 1MiB: the front holds 2 MiB a session, 4 MiB
// in all) to a client that stops reading, to a client that is gone, or
// to a standalone stream that a GET reads: aegis's peak RSS grows by a
// few MiB, not by what the server wrote. A client that stops reading for
// a while holds the server back (not aegis's memory) and then gets every
// event; another session is answered meanwhile; a client that is gone
// lets the session go on at once, long before the write timeout (30s).
// The log records each call's answer.
func TestListenOutBounded(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name   string
		client string // stalls, gone, standalone
	}{
		{"client stalls, then reads", "stalls"},
		{"client gone", "gone"},
		{"standalone stream read", "standalone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			l := f.listen(t, []string{"--max-frame", "1MiB"}, "sh", "-c", floodChild)
			sid, other := l.initialize(t), l.initialize(t)
			base := peakRSS(t, l.cmd.Process.Pid)
			orig := l.client
			l.client = slowClient()
			var resp *http.Response
			if tc.client == "standalone" {
				resp = l.request(t, "GET", sid, "")
				l.client = orig
				l.request(t, "POST", sid, `{"jsonrpc":"2.0","method":"flood"}`).Body.Close()
			} else {
				resp = l.request(t, "POST", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{}}}`)
				l.client = orig
			}
			defer resp.Body.Close()
			br := bufio.NewReaderSize(resp.Body, 2*mib)
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatalf("the stream's first line: %v", err)
			}
			switch tc.client {
			case "stalls":
				time.Sleep(time.Second) // the client reads nothing meanwhile
				if p := payloads(t, l.request(t, "POST", other, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)); len(p) != 1 {
					t.Errorf("another session's ping while the client stalls = %.200q; want its answer", p)
				}
			case "gone":
				time.Sleep(time.Second)
				resp.Body.Close()
			}
			if tc.client != "gone" {
				want := 64
				if tc.client == "stalls" {
					want++ // the answer
				}
				n := 0
				for n < want {
					line, err := br.ReadSlice('\n')
					if err != nil && err != bufio.ErrBufferFull {
						break
					}
					if bytes.HasPrefix(line, []byte("data: {")) {
						n++
					}
				}
				if n != want {
					t.Errorf("the client read %d events; want %d", n, want)
				}
			}
			// The session goes on; for a gone client, long before the write
			// timeout (30s) would drop its stream. The ping takes JSON only:
			// what is left of the flood goes to no stream of its.
			start := time.Now()
			if p := payloads(t, l.request(t, "POST", sid, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, "Accept: application/json")); len(p) != 1 || p[0] != `{"jsonrpc":"2.0","id":4,"result":{"content":[]}}` {
				t.Errorf("ping after the flood = %.200q; want its answer", p)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("ping after the flood answered after %v; want long before the write timeout, 30s", took)
			}
			peak := peakRSS(t, l.cmd.Process.Pid)
			if grew := peak - base; grew > 24*mib {
				t.Errorf("peak RSS grew by %d MiB while the server wrote 64 MB; want at most 24 MiB (4 MiB of events, the relay's 1 MiB line and read-ahead, the runtime's slack)", grew/mib)
			}
			t.Logf("peak RSS %d MiB, %d MiB before the flood", peak/mib, base/mib)
			resp.Body.Close()
			if code := l.stop(t); code != 0 {
				t.Errorf("exit %d; want 0\n%s", code, l.errText())
			}
			f.mustVerify(t, 0)
			if tc.client != "standalone" {
				ok := 0
				for _, rec := range f.records(t) {
					if o, isOutcome := rec.Body.(*record.Outcome); isOutcome && o.Status == record.StatusOK {
						ok++
					}
				}
				if ok != 1 {
					t.Errorf("log: %d outcomes ok; want 1, the flood's call, answered whatever its client read", ok)
				}
			}
		})
	}
}

// TestListenLongIDsBounded: 1,000 calls in flight with ids of 100 kB,
// which the server never answers (each POST closed once its stream has
// begun: the call stays in flight), raise aegis's peak RSS by a bounded
// few MiB: the front holds each id as its SHA-256, as the relay's table
// of calls in flight does, not the 100 MB of the ids.
func TestListenLongIDsBounded(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	f := newFixture(t)
	silent := `IFS= read -r l; printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'; exec cat >/dev/null`
	l := f.listen(t, []string{"--max-frame", "1MiB"}, "sh", "-c", silent)
	sid := l.initialize(t)
	base := peakRSS(t, l.cmd.Process.Pid)
	id := strings.Repeat("i", 100_000)
	next := make(chan int)
	var wg sync.WaitGroup
	var failed sync.Map
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				resp, err := l.do("POST", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s%d","method":"tools/call","params":{"name":"echo","arguments":{}}}`, id, i))
				if err != nil || resp.StatusCode != 200 {
					failed.Store(i, err)
				}
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	for i := range 1000 {
		next <- i
	}
	close(next)
	wg.Wait()
	failed.Range(func(k, v any) bool {
		t.Errorf("call %v: %v; want 200", k, v)
		return false
	})
	peak := peakRSS(t, l.cmd.Process.Pid)
	if grew := peak - base; grew > 32*mib {
		t.Errorf("peak RSS grew by %d MiB with 1,000 calls of 100 kB ids in flight; want at most 32 MiB", grew/mib)
	}
	t.Logf("peak RSS %d MiB, %d MiB before the calls", peak/mib, base/mib)
}
