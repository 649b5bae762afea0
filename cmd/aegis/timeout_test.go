package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// The session of the call-timeout tests, against the demo server (aegis
// __demo-server), whose slow tool answers after ms milliseconds and whose
// batches are answered whole, once their slowest call is done.
const (
	toSlowMS   = 3000
	toTimeout  = time.Second
	toSlowCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":3000}}}`
	toEcho     = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"in time"}}}`
	toBatch    = `[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"ms":3000}}},` +
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"held"}}}]`
)

// toLine is a line the client read, and when.
type toLine struct {
	text string
	at   time.Time
}

// toClient runs cmd (a demo server, wrapped or not) with pipes, and
// returns its stdin and the lines of its stdout as they come; the channel
// closes at EOF.
func toClient(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, <-chan toLine) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan toLine, 16)
	go func() {
		defer close(lines)
		br := bufio.NewReader(out)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- toLine{strings.TrimSuffix(l, "\n"), time.Now()}
		}
	}()
	return in, lines
}

func toWrite(t *testing.T, w io.Writer, line string) time.Time {
	t.Helper()
	at := time.Now()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatal(err)
	}
	return at
}

func toNext(t *testing.T, lines <-chan toLine) toLine {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the client's stream ended")
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatal("the client got nothing for 20s")
	}
	return toLine{}
}

// toRest returns every line left until EOF.
func toRest(t *testing.T, lines <-chan toLine) []string {
	t.Helper()
	var rest []string
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return rest
			}
			rest = append(rest, l.text)
		case <-deadline:
			t.Fatalf("no EOF after 30s; got %q", rest)
		}
	}
}

// toAnswers is what the demo server itself writes for the session's slow
// call and batch, by id ("1", and "3" for the batch's array): run without
// aegis, the very lines that aegis must record as late and drop.
func toAnswers(t *testing.T) map[string]string {
	t.Helper()
	in, lines := toClient(t, exec.Command(aegisBin, "__demo-server"))
	toWrite(t, in, toSlowCall)
	toWrite(t, in, toBatch)
	in.Close()
	got := map[string]string{}
	for _, l := range toRest(t, lines) {
		switch {
		case strings.HasPrefix(l, `{"jsonrpc":"2.0","id":1,`):
			got["1"] = l
		case strings.HasPrefix(l, `[{"jsonrpc":"2.0","id":3,`):
			got["3"] = l
		}
	}
	if len(got) != 2 {
		t.Fatalf("the demo server alone answered %q; want an answer to 1 and an array for 3 and 4", got)
	}
	return got
}

// TestWrapCallTimeout drives aegis wrap --call-timeout around the demo
// server: the slow call gets aegis's CALL_TIMEOUT answer with its id at
// about the timeout, long before the tool answers; an echo call meanwhile
// is answered by the server as usual; the calls of a batch held back by a
// slow one time out one by one; the server's late answers are recorded as
// anomalies with their digests and never reach the client; the log
// verifies. Without the flag the same session gets the server's answers.
func TestWrapCallTimeout(t *testing.T) {
	t.Parallel()
	late := toAnswers(t)
	f := newFixture(t)
	wrap := f.wrapCmd([]string{"--call-timeout", toTimeout.String()}, aegisBin, "__demo-server")
	in, lines := toClient(t, wrap)

	sent := toWrite(t, in, toSlowCall)
	first := toNext(t, lines)
	if want := string(relay.AppendRefusal(nil, []byte("1"), relay.CodeCallTimeout, "", 0)); first.text != want {
		t.Fatalf("the client's first line = %s; want %s", first.text, want)
	}
	var env struct {
		ID    int `json:"id"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Aegis struct {
					Code string `json:"code"`
				} `json:"aegis"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(first.text), &env); err != nil || env.ID != 1 || env.Error.Code != relay.RefusalCode || env.Error.Data.Aegis.Code != "CALL_TIMEOUT" {
		t.Fatalf("the timeout answer decodes to %+v (%v); want id 1, code %d, data.aegis.code CALL_TIMEOUT", env, err, relay.RefusalCode)
	}
	if waited := first.at.Sub(sent); waited < toTimeout || waited >= toSlowMS*time.Millisecond {
		t.Errorf("the timeout answer came %v after the call; want at least %v and before the tool's %dms", waited, toTimeout, toSlowMS)
	}

	toWrite(t, in, toEcho)
	if got, want := toNext(t, lines).text, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"in time"}]}}`; got != want {
		t.Fatalf("the echo call's answer = %s; want %s", got, want)
	}

	toWrite(t, in, toBatch)
	for _, id := range []string{"3", "4"} {
		if got, want := toNext(t, lines).text, string(relay.AppendRefusal(nil, []byte(id), relay.CodeCallTimeout, "", 0)); got != want {
			t.Fatalf("the batch's answer = %s; want %s", got, want)
		}
	}
	// The server answers the slow calls once they are done, then exits at
	// its stdin's EOF; aegis relays to the end.
	in.Close()
	if rest := toRest(t, lines); len(rest) > 0 {
		t.Errorf("after the timeouts the client got %q; want nothing: the late answers are dropped", rest)
	}
	if err := wrap.Wait(); err != nil {
		t.Fatalf("aegis wrap: %v; want exit 0", err)
	}

	var got []string
	for _, r := range f.records(t) {
		switch b := r.Body.(type) {
		case *record.Outcome:
			got = append(got, "outcome "+string(b.Call.Text)+" "+b.Status)
		case *record.Anomaly:
			what := "unknown digest"
			for id, l := range late {
				if b.Digest == sha256.Sum256([]byte(l)) {
					what = "late " + id
				}
			}
			if b.Reason != relay.ReasonLateAnswer || b.Forwarded || !b.Response {
				what += " (" + b.Reason + ")"
			}
			got = append(got, "anomaly "+what)
		}
	}
	// Both late lines come once the slow tool is done, in either order.
	want := strings.Join([]string{"outcome 1 timeout", "outcome 2 ok", "outcome 3 timeout", "outcome 4 timeout"}, ",")
	if s := strings.Join(got, ","); s != want+",anomaly late 1,anomaly late 3" && s != want+",anomaly late 3,anomaly late 1" {
		t.Errorf("records = %q; want %s, then anomalies for the late lines 1 and 3", got, want)
	}
	if c := f.sessionEnd(t).Counts; c.Unanswered != 3 || c.Anomalies != 2 {
		t.Errorf("session_end counts = %+v; want 3 unanswered (timeouts) and 2 anomalies", c)
	}
	f.mustVerify(t, 0)
	// aegis log shows a timed-out call's latency: until aegis answered it.
	logOut, err := exec.Command(aegisBin, "log", "--json", f.audit).Output()
	if err != nil {
		t.Fatalf("aegis log --json: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(logOut)), "\n") {
		if strings.Contains(l, `"status":"timeout"`) && !strings.Contains(l, `"latency_ns":`) || strings.Contains(l, `"latency_ns":null`) {
			t.Errorf("aegis log --json row without its latency: %s", l)
		}
	}

	t.Run("without the flag", func(t *testing.T) {
		f := newFixture(t)
		wrap := f.wrapCmd(nil, aegisBin, "__demo-server")
		in, lines := toClient(t, wrap)
		toWrite(t, in, toSlowCall)
		if got := toNext(t, lines).text; got != late["1"] {
			t.Fatalf("the client's first line = %s; want the server's answer %s", got, late["1"])
		}
		in.Close()
		toRest(t, lines)
		if err := wrap.Wait(); err != nil {
			t.Fatalf("aegis wrap: %v; want exit 0", err)
		}
		var statuses []string
		for _, r := range f.records(t) {
			if o, ok := r.Body.(*record.Outcome); ok {
				statuses = append(statuses, o.Status)
			}
		}
		if len(statuses) != 1 || statuses[0] != record.StatusOK {
			t.Errorf("outcome statuses = %v; want [ok]", statuses)
		}
		f.mustVerify(t, 0)
	})
}
