package relay_test

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// lockedBuffer is a writer two goroutines may write at once; each Write
// is kept whole.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestParkedConcurrently: parked calls decided from other goroutines while
// the client's stream flows (run it with -race): the child receives every
// allowed line and every approved line whole, and no denied one; the
// client gets one APPROVAL_DENIED refusal per denial; every intent has
// its outcome once End has run, and an approval record precedes each
// approved call's release.
func TestParkedConcurrently(t *testing.T) {
	j, path := testJournal(t)
	tab := approval.NewTable(time.Hour)
	var client, child lockedBuffer
	r := relay.New(relay.Config{Journal: j, Gate: policy.NewGate(mustPolicy(t, "version: 1\ndefault: allow\nrules:\n  - tool: write_file\n    action: approve\n")),
		Client: &client, Approvals: tab, Server: "s", Caller: gate.Caller{Principal: "uid:7"}})
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.Upstream(pr, &child) }()
	const n = 40
	parkedLine := func(i int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"write_file","arguments":{"n":` + strconv.Itoa(i) + `}}}` + "\n"
	}
	allowedLine := func(i int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(1000+i) + `,"method":"tools/call","params":{"name":"echo"}}` + "\n"
	}
	decided := make(chan struct{})
	var approved, denied []string
	go func() {
		defer close(decided)
		seen := map[string]bool{}
		for len(seen) < n {
			for _, p := range tab.List() {
				if seen[p.ID] {
					continue
				}
				seen[p.ID] = true
				d := approval.Decision{Verdict: record.ApprovalApproved, HasBy: true, UID: 7}
				if len(seen)%2 == 0 {
					d.Verdict, d.Reason = record.ApprovalDenied, "no"
				}
				if err := tab.Decide(p.ID, d); err != nil {
					t.Errorf("Decide(%s): %v", p.ID, err)
				}
				if d.Verdict == record.ApprovalApproved {
					approved = append(approved, p.Args)
				} else {
					denied = append(denied, p.Args)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for i := range n {
		io.WriteString(pw, parkedLine(i))
		io.WriteString(pw, allowedLine(i))
	}
	<-decided
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	counts, err := r.End(record.StatusUnanswered, "session ended")
	if err != nil {
		t.Fatal(err)
	}
	got := child.String()
	for i := range n {
		if !strings.Contains(got, allowedLine(i)) {
			t.Errorf("the child lacks allowed line %d", i)
		}
	}
	for _, a := range approved {
		n, _ := strconv.Unquote(a)
		if !strings.Contains(got, n) {
			t.Errorf("the child lacks the approved call %s", a)
		}
	}
	for _, a := range denied {
		n, _ := strconv.Unquote(a)
		if strings.Contains(got, n) {
			t.Errorf("the child received the denied call %s", a)
		}
	}
	if c := strings.Count(client.String(), `"code":"APPROVAL_DENIED"`); c != len(denied) {
		t.Errorf("%d APPROVAL_DENIED refusals; want %d", c, len(denied))
	}
	if strings.Count(got, "\n") != n+len(approved) {
		t.Errorf("the child received %d lines; want %d", strings.Count(got, "\n"), n+len(approved))
	}
	recs := records(t, j, path)
	approvals := 0
	for _, rec := range recs {
		if _, ok := rec.Body.(*record.Approval); ok {
			approvals++
		}
	}
	// No child answers here: End records every released call unanswered.
	if approvals != n || counts.Intents != 2*n || counts.Outcomes != 2*n || counts.Refused != uint64(len(denied)) || len(denied) != n/2 {
		t.Errorf("%d approval records, %d denied, counts %+v; want %d approvals, %d denied, %d intents and outcomes", approvals, len(denied), counts, n, n/2, 2*n)
	}
}
