package relay_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/frame"
	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal"
	"github.com/aegisrelay/aegis/journal/record"
)

func TestAppendRefusal(t *testing.T) {
	tests := []struct {
		id    []byte
		code  string
		rule  string
		retry time.Duration
		want  string
	}{
		{[]byte("1"), relay.CodePolicyDenied, "", 0,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"POLICY_DENIED"}}}}`},
		{[]byte(`"a\u0062"`), relay.CodePolicyDenied, "rules[1] delete_*", 0,
			`{"jsonrpc":"2.0","id":"a\u0062","error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"POLICY_DENIED","rule":"rules[1] delete_*"}}}}`},
		{nil, relay.CodePendingApproval, "rules[0] \"odd\\name", 0,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"PENDING_APPROVAL","rule":"rules[0] \"odd\\name"}}}}`},
		{[]byte("7"), relay.CodeRateLimited, "rules[3] search", 20*time.Second + time.Microsecond,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"RATE_LIMITED","rule":"rules[3] search","retry_after_ms":20001}}}}`},
		{[]byte("8"), relay.CodeRateLimited, "r", 0,
			`{"jsonrpc":"2.0","id":8,"error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"RATE_LIMITED","rule":"r","retry_after_ms":1}}}}`},
		{[]byte("9.0"), relay.CodeHostDenied, "", time.Second,
			`{"jsonrpc":"2.0","id":9.0,"error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"HOST_DENIED"}}}}`},
	}
	for _, tt := range tests {
		if got := string(relay.AppendRefusal(nil, tt.id, tt.code, tt.rule, tt.retry)); got != tt.want {
			t.Errorf("AppendRefusal(%s, %s, %q, %v) =\n%s\nwant\n%s", tt.id, tt.code, tt.rule, tt.retry, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		relay.AppendRefusal(make([]byte, 0, 512), []byte("1"), relay.CodeRateLimited, "rules[0] x", time.Second)
	}); n > 1 {
		t.Errorf("AppendRefusal allocates %v times into a big enough buffer; want at most the buffer", n)
	}
}

// testJournal opens a journal at level none in a temp folder.
func testJournal(t testing.TB) (*journal.Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	seed := sha256.Sum256([]byte("aegis gate test"))
	j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(&record.SessionStart{Aegis: "test", Argv: []string{"x"}, Durability: "none", PolicySet: "sha256:x"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j, path
}

func records(t testing.TB, j *journal.Journal, path string) []*record.Record {
	t.Helper()
	seq, err := j.Append(&record.PolicyReload{Set: "sha256:flush", Status: "applied"})
	if err == nil {
		err = j.Wait(seq, journal.BeforeRequest)
	}
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var d record.Decoder
	var out []*record.Record
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		r, err := d.Decode(l)
		if err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out[:len(out)-1]
}

func mustPolicy(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const testPolicy = "version: 1\ndefault: allow\nrules:\n  - tool: \"delete_*\"\n    action: deny\n  - tool: s\n    action: allow\n    rate: 2/h\n"

func tcall(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `"}}`
}

// TestUpstreamGate runs Upstream in process under a Gate: the child gets
// exactly the lines that are allowed, the client exactly the refusals, and
// rate tokens are taken only by frames that are relayed.
func TestUpstreamGate(t *testing.T) {
	j, path := testJournal(t)
	var child, client bytes.Buffer
	r := relay.New(relay.Config{Journal: j, Gate: policy.NewGate(mustPolicy(t, testPolicy)), Client: &client})
	lines := []struct {
		line     string
		relayed  bool
		answered string
	}{
		{tcall("1", "read"), true, ""},
		{`{"jsonrpc":"2.0","id":2,"method":"ping"}`, true, ""},
		{tcall("3", "delete_all"), false, refusalStr("3", relay.CodePolicyDenied, "rules[0] delete_*")},
		{"", false, ""}, // not one JSON value: dropped, nothing recorded
		{"not json", false, ""},
		{"[" + tcall("4", "s") + "," + tcall("5", "delete_x") + "]", false,
			"[" + refusalStr("4", relay.CodeHostDenied, "") + "," + refusalStr("5", relay.CodePolicyDenied, "rules[0] delete_*") + "]"},
		{"[" + tcall("6", "s") + "," + tcall("7", "s") + "]", true, ""}, // the refused batch took no token of 2/h
		{tcall("8", "s"), false, ""},                                    // this one is over the rate
		{tcall("9", "echo") + "\r", true, ""},
	}
	var in, wantChild, wantClient strings.Builder
	for _, l := range lines {
		in.WriteString(l.line + "\n")
		if l.relayed {
			wantChild.WriteString(l.line + "\n")
		}
		if l.answered != "" {
			wantClient.WriteString(l.answered + "\n")
		}
	}
	if err := r.Upstream(strings.NewReader(in.String()), &child); err != nil {
		t.Fatalf("Upstream = %v", err)
	}
	if child.String() != wantChild.String() {
		t.Errorf("child read\n%s\nwant\n%s", child.String(), wantChild.String())
	}
	got := client.String()
	wantPrefix := wantClient.String()
	// The rate-limited call's refusal ends the client stream; its retry is
	// whatever the clock says.
	if !strings.HasPrefix(got, wantPrefix) || !strings.HasPrefix(got[len(wantPrefix):], `{"jsonrpc":"2.0","id":8,"error":{"code":-32042,"message":"aegis wrap refused this tools/call","data":{"aegis":{"layer":"wrap","code":"RATE_LIMITED","rule":"rules[1] s","retry_after_ms":`) {
		t.Errorf("client read\n%s\nwant\n%s…RATE_LIMITED for 8", got, wantPrefix)
	}
	c := r.Counts()
	if c.Refused != 4 || c.Intents != 8 || c.Anomalies != 1 || c.FramesIn != uint64(len(lines)) {
		t.Errorf("Counts = %+v; want 4 refused, 8 intents, 1 anomaly, %d frames in", c, len(lines))
	}
	recs := records(t, j, path)
	var kinds []string
	for _, rec := range recs[1:] {
		switch b := rec.Body.(type) {
		case *record.Intent:
			kinds = append(kinds, "intent "+b.Verdict+" "+strconv.FormatBool(b.Refused))
		case *record.Outcome:
			kinds = append(kinds, "outcome "+b.Status+" "+b.Reason)
		case *record.Anomaly:
			kinds = append(kinds, "anomaly forwarded="+strconv.FormatBool(b.Forwarded))
		}
	}
	want := []string{
		"intent allowed false",
		"intent denied true", "outcome host_denied not executed",
		"anomaly forwarded=false",
		"intent allowed true", "intent denied true", "outcome host_denied " + relay.ReasonSibling, "outcome host_denied not executed",
		"intent allowed false", "intent allowed false",
		"intent rate_limited true", "outcome host_denied not executed",
		"intent allowed false",
	}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
}

// TestClientWritesDoNotInterleave: refusals written by the Upstream pump
// and the child's lines written by the Downstream pump reach the client as
// whole lines, never mixed.
func TestClientWritesDoNotInterleave(t *testing.T) {
	j, _ := testJournal(t)
	cr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r := relay.New(relay.Config{Journal: j, Gate: policy.NewGate(mustPolicy(t, testPolicy)), Client: cw})
	childLine := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("z", 100<<10) + `"}}`
	const n = 200
	// Every buffer of these 20 MB is sized once: grown by doubling, and
	// copied again into a string to split, the copies cost more than the
	// relay's own work under the race detector.
	var up, down strings.Builder
	down.Grow(n * (len(childLine) + 1))
	for i := range n {
		up.WriteString(tcall(strconv.Itoa(i), "delete_all") + "\n")
		down.WriteString(childLine + "\n")
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := r.Upstream(strings.NewReader(up.String()), io.Discard); err != nil {
			t.Errorf("Upstream = %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := r.Downstream(strings.NewReader(down.String()), cw); err != nil {
			t.Errorf("Downstream = %v", err)
		}
	}()
	read := make(chan []byte)
	go func() {
		// Room for every line the client should read (a refusal is
		// under 300 bytes) and ReadFrom's last read, so that reading to
		// the end makes no copy.
		b := bytes.NewBuffer(make([]byte, 0, down.Len()+n*300+bytes.MinRead))
		b.ReadFrom(cr)
		read <- b.Bytes()
	}()
	wg.Wait()
	cw.Close()
	got := <-read
	refusals, children := 0, 0
	for _, l := range bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n")) {
		switch {
		case string(l) == childLine:
			children++
		case bytes.HasPrefix(l, []byte(`{"jsonrpc":"2.0","id":`)) && bytes.HasSuffix(l, []byte(`"rule":"rules[0] delete_*"}}}}`)) && len(l) < 300:
			refusals++
		default:
			t.Fatalf("client read a mixed line of %d bytes: %.120q…", len(l), l)
		}
	}
	if refusals != n || children != n {
		t.Errorf("client read %d refusals and %d child lines; want %d of each", refusals, children, n)
	}
}

func TestNewGateWithoutClient(t *testing.T) {
	j, _ := testJournal(t)
	defer func() {
		if recover() == nil {
			t.Error("New with a Gate and no Client did not panic")
		}
	}()
	relay.New(relay.Config{Journal: j, Gate: policy.NewGate(mustPolicy(t, testPolicy))})
}

func refusalStr(id, code, rule string) string {
	return string(relay.AppendRefusal(nil, []byte(id), code, rule, 0))
}

// FuzzGate runs Upstream under a policy that denies delete_* over any
// client stream and holds it to both halves of the gate's contract
// (package documentation, "Byte identity" and "Gating and refusals").
//
// Safety: what reaches the child is lines of the input, whole and in
// order, and none is anything but one JSON value, nor carries a tools/call
// that names a denied tool under encoding/json, read both as Go structs
// read it (keys matched case-insensitively, the last duplicate winning)
// and as a map (case-sensitive).
//
// Liveness: every line is accounted for, in order. It reaches the child;
// or it is white space only, dropped without a record; or it is dropped
// with a record naming it (its digest): an anomaly not forwarded, or its
// refused intents with a host_denied outcome for each call with an id;
// and if it holds a request, it is answered with one refusal frame (an
// array for a batch) carrying each request's id, or null. The client
// reads nothing else and the journal holds nothing else.
func FuzzGate(f *testing.F) {
	for _, s := range []string{
		tcall("1", "delete_all"),
		tcall("1", `de\u006cete_all`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","name":"delete_all"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","NAME":"delete_all"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"},"paramſ":{"name":"delete_all"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"delete_all"}}`,
		`[` + tcall("1", "read") + `,` + tcall("2", "delete_x") + `]`,
		tcall("1", "read") + " " + tcall("2", "delete_all"),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call",` + "\n" + `"params":{"name":"delete_all"}}`,
		tcall("1", "s") + "\n" + tcall("2", "s") + "\n" + tcall("3", "s") + "\n \t\r\n" + `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_x"}}`,
		`[{"jsonrpc":"2.0","id":"a","method":"ping"},` + tcall("2", "delete_x") + `,{"jsonrpc":"2.0","method":"tools/call","params":{"name":"s"}}]`,
	} {
		f.Add([]byte(s + "\n"))
	}
	// One journal and one parsed policy for every exec of the process:
	// both cost more to make than an exec. The policy's rate buckets are
	// its state; each exec runs a day after the last, when every bucket
	// of testPolicy is full again, so that an exec's verdicts depend on
	// its input alone.
	fj := openFuzzJournal(f, "FuzzGate")
	pol := mustPolicy(f, testPolicy)
	now := fuzzEpoch
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<16 {
			return
		}
		now = now.Add(24 * time.Hour)
		at := now
		var child, client bytes.Buffer
		r := relay.New(relay.Config{Journal: fj.j, Gate: policy.NewGate(pol), Client: &client,
			Clock: func() time.Time { return at }})
		if err := r.Upstream(bytes.NewReader(in), &child); err != nil {
			t.Fatalf("Upstream = %v", err)
		}
		recs, err := fj.records()
		if err != nil {
			t.Fatalf("reading the journal back: %v", err)
		}
		checkGate(t, in, child.Bytes(), client.Bytes(), recs)
	})
}

// checkGate holds one run of Upstream under testPolicy over in to the
// contract FuzzGate states: out is what the child read, answers what the
// client read, recs the records the run appended.
func checkGate(t *testing.T, in, out, answers []byte, recs []*record.Record) {
	t.Helper()
	for rest := in; len(rest) > 0; {
		line, next := frame.NextLine(rest)
		rest = next
		d := digest(line)
		// A line the child reads next is relayed. A dropped line equal to
		// a later relayed one cannot be: verdicts depend on the bytes, and
		// a rate only ever turns an allowed line into a refused one.
		if bytes.HasPrefix(out, line) {
			out = out[len(line):]
			if len(bytes.Trim(line, " \t\r\n")) == 0 {
				t.Fatalf("the child read %q, a line of white space, which is no JSON value", line)
			}
			checkForwarded(t, line)
			// A line's intents are its calls': a later line with the
			// same digest (the same bytes, its '\n' aside) has its own.
			for calls := lineCalls(line); len(recs) > 0 && calls > 0; calls-- {
				in, ok := recs[0].Body.(*record.Intent)
				if !ok || in.RequestDigest != d {
					break
				}
				if in.Refused {
					t.Fatalf("line %.200q reached the child, and its intent says refused", line)
				}
				recs = recs[1:]
			}
			continue
		}
		if len(bytes.Trim(line, " \t\r\n")) == 0 {
			continue // white space carries nothing: dropped without a record
		}
		if len(recs) == 0 {
			t.Fatalf("line %.200q did not reach the child, and no record says why", line)
		}
		switch b := recs[0].Body.(type) {
		case *record.Anomaly:
			if b.Digest != d || b.Bytes != len(line) || b.Forwarded || b.Response {
				t.Fatalf("line %.200q (sha256 %x, %d bytes) did not reach the child; the next record is %s", line, d, len(line), render(recs[0].Kind, b))
			}
			recs = recs[1:]
		case *record.Intent:
			refused := map[uint64]bool{}
			for calls := lineCalls(line); len(recs) > 0 && calls > 0; calls-- {
				in, ok := recs[0].Body.(*record.Intent)
				if !ok || in.RequestDigest != d {
					break
				}
				if !in.Refused {
					t.Fatalf("line %.200q did not reach the child; its intent %s does not say refused", line, render(recs[0].Kind, in))
				}
				if in.Call.Type != record.IDNull {
					refused[recs[0].Seq] = true
				}
				recs = recs[1:]
			}
			for len(recs) > 0 {
				o, ok := recs[0].Body.(*record.Outcome)
				if !ok || !refused[o.Intent] {
					break
				}
				if o.Status != record.StatusHostDenied {
					t.Fatalf("refused line %.200q: outcome %s; want host_denied", line, render(recs[0].Kind, o))
				}
				delete(refused, o.Intent)
				recs = recs[1:]
			}
			if len(refused) > 0 {
				t.Fatalf("refused line %.200q: %d of its calls with an id have no host_denied outcome", line, len(refused))
			}
			answers = checkAnswered(t, line, answers)
		default:
			t.Fatalf("line %.200q did not reach the child; the next record is %s, which does not name it", line, render(recs[0].Kind, recs[0].Body))
		}
	}
	if len(out) > 0 {
		t.Fatalf("the child read %.200q, which is no line of the input in its place", out)
	}
	if len(answers) > 0 {
		t.Fatalf("the client read %.200q, which answers no refused line", answers)
	}
	if len(recs) > 0 {
		t.Fatalf("%d records name no line of the input, the first %s", len(recs), render(recs[0].Kind, recs[0].Body))
	}
}

// lineCalls is the number of tools/calls of line read as one value (a
// fresh Classifier's), the intents a judged line gets.
func lineCalls(line []byte) int {
	var f frame.Frame
	frame.NewClassifier().Classify(line, &f)
	n := 0
	for i := range f.Msgs {
		if m := &f.Msgs[i]; m.IsToolCall && (m.Type == frame.Request || m.Type == frame.Notification) {
			n++
		}
	}
	return n
}

// checkAnswered checks that the refused line is answered at the head of
// answers, if it holds a request (as a fresh Classifier reads it), and
// returns the rest of answers. The answer is one line: a refusal for a
// single request, an array of one refusal per request for a batch, each
// carrying its request's id as sent, or null.
func checkAnswered(t *testing.T, line, answers []byte) []byte {
	t.Helper()
	var f frame.Frame
	frame.NewClassifier().Classify(line, &f)
	var ids [][]byte
	for i := range f.Msgs {
		if m := &f.Msgs[i]; m.Type == frame.Request {
			ids = append(ids, m.ID.Raw)
		}
	}
	if len(ids) == 0 {
		return answers
	}
	answer, rest, ok := bytes.Cut(answers, []byte{'\n'})
	if !ok {
		t.Fatalf("refused line %.200q holds %d requests; the client read no whole line for it (%.200q)", line, len(ids), answers)
	}
	type refusal struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code int `json:"code"`
			Data struct {
				Aegis struct {
					Layer string `json:"layer"`
					Code  string `json:"code"`
				} `json:"aegis"`
			} `json:"data"`
		} `json:"error"`
	}
	var got []refusal
	var err error
	if f.Kind == frame.Batch {
		err = json.Unmarshal(answer, &got)
	} else {
		got = make([]refusal, 1)
		err = json.Unmarshal(answer, &got[0])
	}
	if err != nil || len(got) != len(ids) {
		t.Fatalf("refused line %.200q holds %d requests; the client read %.300q (%v)", line, len(ids), answer, err)
	}
	for i, g := range got {
		if g.JSONRPC != "2.0" || g.Error.Code != relay.RefusalCode || g.Error.Data.Aegis.Layer != relay.RefusalLayer || g.Error.Data.Aegis.Code == "" ||
			string(g.ID) != "null" && !bytes.Equal(g.ID, ids[i]) {
			t.Fatalf("refused line %.200q: refusal %d is %.300q; want a refusal of the request with id %s (or null)", line, i, answer, ids[i])
		}
	}
	return rest
}

// checkForwarded fails if a line that reached the child could run a
// denied tool under encoding/json, read either way.
func checkForwarded(t *testing.T, line []byte) {
	t.Helper()
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return
	}
	if !json.Valid(trimmed) {
		t.Fatalf("the child read %q, which is not one JSON value", line)
	}
	var msgs []json.RawMessage
	if trimmed[0] == '[' {
		json.Unmarshal(trimmed, &msgs)
	} else {
		msgs = []json.RawMessage{trimmed}
	}
	for _, m := range msgs {
		var s struct {
			Method string
			Params struct{ Name string }
		}
		json.Unmarshal(m, &s) // Go's reading: case-insensitive keys, last wins
		var mp map[string]any
		json.Unmarshal(m, &mp) // a case-sensitive reading
		name, _ := mp["params"].(map[string]any)
		mName, _ := name["name"].(string)
		mMethod, _ := mp["method"].(string)
		for _, c := range [][2]string{{s.Method, s.Params.Name}, {mMethod, mName}} {
			// A method is matched exactly by every SDK's dispatcher: a
			// "lettools/call" is no tools/call, whatever its params.
			if c[0] == "tools/call" && strings.HasPrefix(strings.TrimLeft(c[1], "\x00"), "delete_") {
				t.Fatalf("the child read %q: a tools/call of %q", line, c[1])
			}
		}
	}
}

// BenchmarkUpstreamPolicy is the relay's own cost of a recorded tools/call
// (classify, decide, append the intent, write the records at level none,
// relay the lines; 256 calls a run, as one read) with no policy, under one rule, and under 1,000 rules of
// every shape the policy index treats differently, the deciding one last.
// In process, so that the figure is not lost in the noise of pipes and
// processes (cmd/aegis's BenchmarkPolicyCost is the end-to-end figure).
//
//	go test -run XXX -bench UpstreamPolicy ./internal/relay/
func BenchmarkUpstreamPolicy(b *testing.B) {
	var thousand strings.Builder
	thousand.WriteString("version: 1\ndefault: deny\nrules:\n")
	for i := range 999 {
		pat := []string{"tool_%03d", "ns%03d_*", "*_adm%03d", "*x%03d*"}[i%4]
		thousand.WriteString("  - tool: \"" + strings.Replace(pat, "%03d", strconv.Itoa(1000+i), 1) + "\"\n    action: deny\n")
	}
	thousand.WriteString("  - tool: echo\n    action: allow\n")
	const calls = 256
	var in strings.Builder
	// Notifications: recorded like requests, but with no answer to wait
	// for, the pending table stays empty however long the benchmark runs.
	for range calls {
		in.WriteString(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n")
	}
	input := []byte(in.String())
	for _, bc := range []struct {
		name   string
		policy string
	}{{"no-policy", ""}, {"rules=1", "version: 1\ndefault: deny\nrules:\n  - tool: echo\n    action: allow\n"}, {"rules=1000", thousand.String()}} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "audit.jsonl")
			seed := sha256.Sum256([]byte("bench"))
			j, err := journal.Open(path, journal.Options{Durability: journal.Durability{Level: journal.None}, Key: ed25519.NewKeyFromSeed(seed[:])})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			cfg := relay.Config{Journal: j}
			if bc.policy != "" {
				cfg.Gate, cfg.Client = policy.NewGate(mustPolicy(b, bc.policy)), io.Discard
			}
			r := relay.New(cfg)
			rd := bytes.NewReader(input)
			b.SetBytes(int64(len(input)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(input)
				if err := r.Upstream(rd, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls), "ns/call")
			if c := r.Counts(); c.Refused != 0 || c.Intents != uint64(b.N*calls) {
				b.Fatalf("counts %+v; want every call recorded and none refused", c)
			}
		})
	}
}
