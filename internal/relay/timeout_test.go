package relay_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/internal/vfs"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

// toSession is a Relay with both pumps running in process over pipes: the
// test writes the client's lines (send) and the child's (answer), reads
// what the child receives (childLine) and what the client receives
// (clientLine).
type toSession struct {
	t        *testing.T
	r        *relay.Relay
	j        *journal.Journal
	path     string
	clientW  *io.PipeWriter
	childR   *bufio.Reader
	childW   *io.PipeWriter
	toClient chan clientLine
	done     chan error
}

// clientLine is a line the client received, and the audit file as it was
// when the line arrived.
type clientLine struct {
	line  string
	audit []byte
}

func toJournal(t *testing.T, level journal.Level, fs vfs.FS) (*journal.Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("aegis timeout test"))
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: level}, Key: ed25519.NewKeyFromSeed(seed[:]), FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"x"}, Durability: "strict", PolicySet: "pass-through"})
	if err == nil {
		err = j.Wait(seq, journal.BeforeResponse)
	}
	if err != nil {
		t.Fatal(err)
	}
	return j, path
}

// startTimeoutSession starts a session with a CallTimeout, and with a
// Gate if one is given.
func startTimeoutSession(t *testing.T, timeout time.Duration, gates ...gate.Gate) *toSession {
	t.Helper()
	return startSession(t, func(cfg *relay.Config) {
		cfg.CallTimeout = timeout
		if len(gates) > 0 {
			cfg.Gate = gates[0]
		}
	})
}

// startSession starts a session whose Config config completes (Journal
// and Client are the session's).
func startSession(t *testing.T, config func(*relay.Config)) *toSession {
	t.Helper()
	j, path := toJournal(t, journal.Strict, nil)
	clientR, clientW := io.Pipe()
	childInR, childInW := io.Pipe()
	childOutR, childOutW := io.Pipe()
	outR, outW := io.Pipe()
	s := &toSession{t: t, j: j, path: path, clientW: clientW, childR: bufio.NewReader(childInR), childW: childOutW,
		toClient: make(chan clientLine, 64), done: make(chan error, 2)}
	cfg := relay.Config{Journal: j, Client: outW}
	config(&cfg)
	s.r = relay.New(cfg)
	go func() { s.done <- s.r.Upstream(clientR, childInW); childInW.Close() }()
	go func() { s.done <- s.r.Downstream(childOutR, outW); outW.Close() }()
	go func() {
		defer close(s.toClient)
		br := bufio.NewReader(outR)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			// What the audit file holds once the line has reached the
			// client: its records must be there already.
			s.toClient <- clientLine{l, readAuditFile(path)}
		}
	}()
	t.Cleanup(func() {
		clientW.Close()
		childOutW.Close()
		childInR.Close()
		for range 2 {
			<-s.done
		}
		j.Close()
	})
	return s
}

func readAuditFile(path string) []byte {
	data, _ := os.ReadFile(path)
	return bytes.TrimRight(data, "\x00")
}

func (s *toSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.clientW, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *toSession) answer(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.childW, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// childLine returns the next line the child reads.
func (s *toSession) childLine() string {
	s.t.Helper()
	l, err := s.childR.ReadString('\n')
	if err != nil {
		s.t.Fatalf("the child's read: %v", err)
	}
	return strings.TrimSuffix(l, "\n")
}

// clientLine returns the next line the client reads, failing after 10s.
func (s *toSession) clientLine() clientLine {
	s.t.Helper()
	select {
	case l, ok := <-s.toClient:
		if !ok {
			s.t.Fatal("the client's stream ended")
		}
		l.line = strings.TrimSuffix(l.line, "\n")
		return l
	case <-time.After(10 * time.Second):
		s.t.Fatal("the client got nothing for 10s")
	}
	return clientLine{}
}

// records returns the records of the audit file after session_start.
func (s *toSession) records() []*record.Record {
	s.t.Helper()
	return decodeAudit(s.t, readAuditFile(s.path))[1:]
}

func decodeAudit(t *testing.T, data []byte) []*record.Record {
	t.Helper()
	var d record.Decoder
	var out []*record.Record
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

func timeoutFrame(id string) string {
	return string(relay.AppendRefusal(nil, []byte(id), relay.CodeCallTimeout, "", 0))
}

func lineDigest(line string) record.Digest { return sha256.Sum256([]byte(line)) }

// TestCallTimeout: a call the child does not answer in time gets, at its
// deadline, the CALL_TIMEOUT refusal with its own id as sent, after its
// timeout outcome is in the log; the child's late answer is recorded as
// an anomaly with its digest and never reaches the client; calls answered
// in time, before and after, are relayed and recorded as without a
// timeout.
func TestCallTimeout(t *testing.T) {
	const d = 500 * time.Millisecond
	for _, id := range []string{`7`, `"a\u0062"`, `1.0`, `-0`} {
		t.Run(id, func(t *testing.T) {
			s := startTimeoutSession(t, d)
			fast := `{"jsonrpc":"2.0","id":"fast","result":{"content":[]}}`
			s.send(tcall(`"fast"`, "echo"))
			s.childLine()
			s.answer(fast)
			if got := s.clientLine().line; got != fast {
				t.Fatalf("the client got %s; want the answer in time %s", got, fast)
			}

			slow := tcall(id, "slow")
			sent := time.Now()
			s.send(slow)
			if got := s.childLine(); got != slow {
				t.Fatalf("the child got %s; want %s", got, slow)
			}
			got := s.clientLine()
			waited := time.Since(sent)
			if want := timeoutFrame(id); got.line != want {
				t.Fatalf("the client got %s; want %s", got.line, want)
			}
			if waited < d {
				t.Errorf("the timeout came after %v; want at least %v", waited, d)
			}
			// The outcome was in the log when the frame reached the client.
			recs := decodeAudit(t, got.audit)
			o, ok := recs[len(recs)-1].Body.(*record.Outcome)
			if !ok || o.Status != record.StatusTimeout || o.HasResponse || o.Intent != recs[len(recs)-2].Seq {
				t.Fatalf("the log's last record when the timeout reached the client = %+v; want the slow call's timeout outcome", recs[len(recs)-1].Body)
			}
			if o.LatencyNS < d.Nanoseconds() {
				t.Errorf("timeout outcome latency_ns = %d; want at least %d", o.LatencyNS, d.Nanoseconds())
			}

			late := `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"late"}]}}`
			s.answer(late)
			// A call after it is unaffected, and the client's next line is
			// its answer: the late one was dropped.
			after := `{"jsonrpc":"2.0","id":8,"result":{"content":[]}}`
			s.send(tcall("8", "echo"))
			s.childLine()
			s.answer(after)
			if got := s.clientLine().line; got != after {
				t.Fatalf("the client got %s; want %s (the late answer dropped)", got, after)
			}

			var statuses []string
			var anomalies []*record.Anomaly
			for _, rec := range s.records() {
				switch b := rec.Body.(type) {
				case *record.Outcome:
					statuses = append(statuses, b.Status)
				case *record.Anomaly:
					anomalies = append(anomalies, b)
				}
			}
			if want := []string{"ok", "timeout", "ok"}; fmt.Sprint(statuses) != fmt.Sprint(want) {
				t.Errorf("outcome statuses = %v; want %v", statuses, want)
			}
			want := record.Anomaly{Digest: lineDigest(late), Response: true, Bytes: len(late) + 1, Reason: relay.ReasonLateAnswer, Forwarded: false}
			if len(anomalies) != 1 || *anomalies[0] != want {
				for _, a := range anomalies {
					t.Errorf("anomaly %+v", *a)
				}
				t.Errorf("want one anomaly %+v", want)
			}
			if c := s.r.Counts(); c.Unanswered != 1 || c.Outcomes != 3 {
				t.Errorf("counts = %+v; want 3 outcomes, 1 unanswered", c)
			}
		})
	}
}

// TestCallTimeoutBatch: the calls of a batch time out one by one. The
// child answers one call of a batch of two in time; the other times out.
// Then a batch answer that holds the late answer and the answer to a call
// still in flight is relayed, since the client waits for the second, and
// recorded as an anomaly that says so.
func TestCallTimeoutBatch(t *testing.T) {
	const d = 500 * time.Millisecond
	s := startTimeoutSession(t, d)
	s.send("[" + tcall("1", "a") + "," + tcall("2", "b") + "]")
	s.childLine()
	one := `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
	s.answer(one)
	if got := s.clientLine().line; got != one {
		t.Fatalf("the client got %s; want %s", got, one)
	}
	if got, want := s.clientLine().line, timeoutFrame("2"); got != want {
		t.Fatalf("the client got %s; want %s", got, want)
	}
	s.send(tcall("3", "c"))
	s.childLine()
	both := `[{"jsonrpc":"2.0","id":2,"result":{"content":[]}},{"jsonrpc":"2.0","id":3,"result":{"content":[]}}]`
	s.answer(both)
	if got := s.clientLine().line; got != both {
		t.Fatalf("the client got %s; want the batch answer %s", got, both)
	}
	var got []string
	for _, rec := range s.records() {
		switch b := rec.Body.(type) {
		case *record.Outcome:
			got = append(got, fmt.Sprintf("outcome %s %s", b.Call.Text, b.Status))
		case *record.Anomaly:
			got = append(got, fmt.Sprintf("anomaly %v %q %v", b.Digest == lineDigest(both), b.Reason, b.Forwarded))
		}
	}
	want := []string{"outcome 1 ok", "outcome 2 timeout", "outcome 3 ok", fmt.Sprintf("anomaly true %q true", relay.ReasonLateAnswer)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records = %q; want %q", got, want)
	}
}

// TestCallTimeoutOnlyTimeable: only calls whose answer can name them for
// every client time out. In one line with a call that times out: a
// notification, and calls in lines some reader reads differently or with
// an id longer than 256 bytes, stay in flight; their answers are relayed
// as usual. Requests that are not tools/calls are never timed out.
func TestCallTimeoutOnlyTimeable(t *testing.T) {
	const d = 500 * time.Millisecond
	s := startTimeoutSession(t, d)
	long := `"` + strings.Repeat("x", 300) + `"`
	// One write, one run: every call below is released at the same
	// instant, so when the timeable one times out every deadline is past.
	lines := []string{
		tcall(long, "long"),
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"note"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
		tcall("5", "dup") + `  {"x":1}`, // two values: an anomaly line
		tcall("6", "timed"),
	}
	if _, err := io.WriteString(s.clientW, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	for range lines {
		s.childLine()
	}
	if got, want := s.clientLine().line, timeoutFrame("6"); got != want {
		t.Fatalf("the client got %s; want %s", got, want)
	}
	for _, id := range []string{long, "4", "5"} {
		a := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
		s.answer(a)
		if got := s.clientLine().line; got != a {
			t.Fatalf("the client got %s; want the answer %s relayed", got, a)
		}
	}
	var statuses []string
	for _, rec := range s.records() {
		if o, ok := rec.Body.(*record.Outcome); ok {
			statuses = append(statuses, o.Status)
		}
	}
	if want := []string{"timeout", "ok", "ok"}; fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Errorf("outcome statuses = %v; want %v", statuses, want)
	}
}

// TestCallTimeoutSameID: a call that reuses the id of one that timed out
// (a client's retry) is a new call. The child's answer to the first is
// its late answer, dropped; the answer after it is the retry's.
func TestCallTimeoutSameID(t *testing.T) {
	const d = 500 * time.Millisecond
	s := startTimeoutSession(t, d)
	s.send(tcall("1", "slow"))
	s.childLine()
	if got, want := s.clientLine().line, timeoutFrame("1"); got != want {
		t.Fatalf("the client got %s; want %s", got, want)
	}
	s.send(tcall("1", "slow"))
	s.childLine()
	first := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"first"}]}}`
	second := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"second"}]}}`
	s.answer(first + "\n" + second)
	if got := s.clientLine().line; got != second {
		t.Fatalf("the client got %s; want %s", got, second)
	}
	var got []string
	for _, rec := range s.records() {
		switch b := rec.Body.(type) {
		case *record.Outcome:
			got = append(got, b.Status)
		case *record.Anomaly:
			got = append(got, fmt.Sprintf("anomaly %v", b.Digest == lineDigest(first)))
		}
	}
	if want := []string{"timeout", "anomaly true", "ok"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records = %v; want %v", got, want)
	}
}

// TestCallTimeoutWithPolicy: under a policy, a refused call is refused at
// once and never times out (it never reached the child); an allowed one
// times out as without a policy. Refusal and timeout frames share the
// client's stream, each a whole line.
func TestCallTimeoutWithPolicy(t *testing.T) {
	const d = 500 * time.Millisecond
	p, err := policy.Parse("p.yaml", []byte("version: 1\ndefault: allow\nrules:\n  - tool: \"delete_*\"\n    action: deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := startTimeoutSession(t, d, policy.NewGate(p))
	s.send(tcall("1", "slow"))
	if got := s.childLine(); got != tcall("1", "slow") {
		t.Fatalf("the child got %s; want call 1", got)
	}
	s.send(tcall("2", "delete_all"))
	if got, want := s.clientLine().line, string(relay.AppendRefusal(nil, []byte("2"), relay.CodePolicyDenied, "rules[0] delete_*", 0)); got != want {
		t.Fatalf("the client got %s; want the refusal %s", got, want)
	}
	if got, want := s.clientLine().line, timeoutFrame("1"); got != want {
		t.Fatalf("the client got %s; want %s", got, want)
	}
	var got []string
	for _, rec := range s.records() {
		if o, ok := rec.Body.(*record.Outcome); ok {
			got = append(got, string(o.Call.Text)+" "+o.Status)
		}
	}
	if want := []string{"2 host_denied", "1 timeout"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcomes = %q; want %q", got, want)
	}
}

// TestCallTimeoutEnd: a call still in flight when the session ends is
// recorded unanswered, as without a timeout, and the timer answers
// nothing after End.
func TestCallTimeoutEnd(t *testing.T) {
	const d = 500 * time.Millisecond
	s := startTimeoutSession(t, d)
	s.send(tcall("1", "slow"))
	s.childLine()
	counts, err := s.r.End(record.StatusUnanswered, "test")
	if err != nil {
		t.Fatal(err)
	}
	if counts.Outcomes != 1 || counts.Unanswered != 1 {
		t.Errorf("counts = %+v; want 1 outcome, unanswered", counts)
	}
	// Past the deadline, nothing more: the client's stream holds nothing.
	select {
	case l := <-s.toClient:
		t.Errorf("the client got %q after End", l.line)
	case <-time.After(3 * d):
	}
	// End appends; session_end would have the outcome written.
	seq, err := s.j.Append(&record.SessionEnd{Reason: record.EndClientEOF, Counts: counts})
	if err == nil {
		err = s.j.Wait(seq, journal.BeforeResponse)
	}
	if err != nil {
		t.Fatal(err)
	}
	recs := s.records()
	recs = recs[:len(recs)-1]
	if o, ok := recs[len(recs)-1].Body.(*record.Outcome); !ok || o.Status != record.StatusUnanswered {
		t.Errorf("last record = %+v; want the unanswered outcome", recs[len(recs)-1].Body)
	}
}

// BenchmarkCallTimeout is the relay's own cost of a recorded tools/call
// and its answer (classify, append intent and outcome at level none, track
// the call in flight and match its answer; 256 calls a run through
// Upstream, then their 256 answers through Downstream, each as one read),
// with call timeouts on, against the same without them (the floor):
// on=1h never fires (a call's deadline-queue links, the timer armed once
// per session); on=1s fires about every second while calls are in
// flight, and re-arms, the calls answered in time all the same (a run
// takes a few milliseconds, more on a loaded machine); off=0 is the floor against itself, the
// noise of the method. The measured relay and the floor's run
// alternately, in blocks of 16 runs, the timer stopped for the floor;
// ratio is ns/call over the floor's.
// In process, so that the figure is not lost in the noise of pipes and
// scheduling.
//
//	go test -run XXX -bench CallTimeout -count 6 ./internal/relay/
func BenchmarkCallTimeout(b *testing.B) {
	const calls = 256
	var req, resp strings.Builder
	for i := range calls {
		fmt.Fprintf(&req, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`+"\n", i+1)
		fmt.Fprintf(&resp, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hello"}]}}`+"\n", i+1)
	}
	in, out := []byte(req.String()), []byte(resp.String())
	for _, bc := range []struct {
		name    string
		timeout time.Duration
	}{{"off=0", 0}, {"on=1h", time.Hour}, {"on=1s", time.Second}} {
		b.Run(bc.name, func(b *testing.B) {
			floor, on := newBenchRelay(b, 0), newBenchRelay(b, bc.timeout)
			const block = 16
			var floorNS, ns int64
			n := 0
			b.SetBytes(int64(len(in) + len(out)))
			b.ReportAllocs()
			for n < b.N {
				k := min(block, b.N-n)
				b.StopTimer()
				start := time.Now()
				floor.runs(b, k, in, out)
				floorNS += time.Since(start).Nanoseconds()
				b.StartTimer()
				start = time.Now()
				on.runs(b, k, in, out)
				ns += time.Since(start).Nanoseconds()
				n += k
			}
			perCall := float64(ns) / float64(n*calls)
			floorPerCall := float64(floorNS) / float64(n*calls)
			b.ReportMetric(perCall, "ns/call")
			b.ReportMetric(floorPerCall, "off-ns/call")
			b.ReportMetric(perCall/floorPerCall, "ratio")
			for _, r := range []*benchRelay{floor, on} {
				if c := r.r.Counts(); c.Outcomes != c.Intents || c.Unanswered != 0 || c.Anomalies != 0 {
					b.Fatalf("counts %+v; want every call answered by the child, none timed out", c)
				}
			}
		})
	}
}

// benchRelay is a relay at level none, for BenchmarkCallTimeout.
type benchRelay struct {
	r      *relay.Relay
	rd     bytes.Reader
	client io.Writer
}

func newBenchRelay(b *testing.B, timeout time.Duration) *benchRelay {
	b.Helper()
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("bench"))
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return &benchRelay{r: relay.New(relay.Config{Journal: j, Client: io.Discard, CallTimeout: timeout})}
}

// runs relays k runs of calls (in) and of their answers (out).
func (br *benchRelay) runs(b *testing.B, k int, in, out []byte) {
	for range k {
		br.rd.Reset(in)
		if err := br.r.Upstream(&br.rd, io.Discard); err != nil {
			b.Fatal(err)
		}
		br.rd.Reset(out)
		if err := br.r.Downstream(&br.rd, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
