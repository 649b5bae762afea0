package relay_test

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/internal/gate"
	"github.com/aegisrelay/aegis/internal/policy"
	"github.com/aegisrelay/aegis/internal/relay"
	"github.com/aegisrelay/aegis/journal/record"
)

// lineChan is a writer whose lines arrive on a channel.
type lineChan struct {
	pw *io.PipeWriter
	c  chan string
}

func newLineChan() *lineChan {
	pr, pw := io.Pipe()
	l := &lineChan{pw: pw, c: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			l.c <- sc.Text()
		}
	}()
	return l
}

func (l *lineChan) Write(p []byte) (int, error) { return l.pw.Write(p) }

func (l *lineChan) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case s := <-l.c:
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("no line %s", what)
		return ""
	}
}

// TestApprovalElicitation: with Config.ApprovalURL, a 2026-07-28 call an
// approve rule parks is answered input_required with the elicitation of
// its approval's URL; its retry, presenting the key, sent before the
// decision, waits parked (a later call passes it) and then reaches the
// child byte for byte once approved, or is refused APPROVAL_DENIED; a
// retry presenting another key, or a 2025-11-25 call, is not the
// approval's: it is asked under a new id, or parks unanswered as without
// the option.
func TestApprovalElicitation(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":%ID%,"method":"tools/call","params":{"name":"write_file","arguments":{"p":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"%REV%","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}%RESP%}}`
	line := func(id, rev, key string) string {
		resp := ""
		if key != "" {
			resp = `,"inputResponses":{"` + key + `":{"action":"accept"}}`
		}
		return strings.NewReplacer("%ID%", id, "%REV%", rev, "%RESP%", resp).Replace(call)
	}
	for _, tc := range []struct {
		name    string
		verdict string
	}{{"approved", record.ApprovalApproved}, {"denied", record.ApprovalDenied}} {
		t.Run(tc.name, func(t *testing.T) {
			j, path := testJournal(t)
			tab := approval.NewTable(time.Hour)
			client, child := newLineChan(), newLineChan()
			r := relay.New(relay.Config{Journal: j, Gate: policy.NewGate(mustPolicy(t, "version: 1\ndefault: allow\nrules:\n  - tool: write_file\n    action: approve\n")),
				Client: client, Approvals: tab, Server: "s", Caller: gate.Caller{Principal: "uid:7"},
				ApprovalURL: func(id string) string { return "http://127.0.0.1:1/approvals/#id=" + id }})
			pr, pw := io.Pipe()
			go r.Upstream(pr, child)
			io.WriteString(pw, line("1", "2026-07-28", "")+"\n")
			ask := client.next(t, "answering the parked call")
			ps := tab.List()
			if len(ps) != 1 {
				t.Fatalf("%d approvals pending; want 1", len(ps))
			}
			id := ps[0].ID
			key := record.ElicitKeyPrefix + id
			want := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"` + key + `":{"method":"elicitation/create","params":{"mode":"url","message":"aegis holds this call of write_file for an approver: the approvals page shows it; once approved there it runs, denied it is refused","url":"http://127.0.0.1:1/approvals/#id=` + id + `"}}}}}`
			if ask != want {
				t.Fatalf("the client got\n%s\nwant\n%s", ask, want)
			}
			// A retry presenting another key is a call of its own: asked
			// under a new id.
			io.WriteString(pw, line("2", "2026-07-28", record.ElicitKeyPrefix+"00000000")+"\n")
			if other := client.next(t, "answering a retry with another key"); !strings.Contains(other, `"input_required"`) || strings.Contains(other, id) {
				t.Fatalf("a retry with another key got %s; want an elicitation of a new approval", other)
			}
			// A 2025-11-25 call parks unanswered.
			io.WriteString(pw, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"p":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`+"\n")
			retry := line("4", "2026-07-28", key)
			io.WriteString(pw, retry+"\n")
			io.WriteString(pw, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"}}`+"\n")
			if got := child.next(t, "of the allowed call"); !strings.Contains(got, `"id":5`) {
				t.Fatalf("the child got %s first; want the allowed call, the retry waiting", got)
			}
			if n := len(tab.List()); n != 3 {
				t.Fatalf("%d approvals pending; want 3 (the first, the other key's, the 2025-11-25 call's)", n)
			}
			if err := tab.Decide(id, approval.Decision{Verdict: tc.verdict, HasBy: true, UID: 7, Reason: "no"}); err != nil {
				t.Fatal(err)
			}
			if tc.verdict == record.ApprovalApproved {
				if got := child.next(t, "of the approved retry"); got != retry {
					t.Fatalf("the child got %s; want the retry as sent:\n%s", got, retry)
				}
			} else if got := client.next(t, "refusing the retry"); !strings.Contains(got, `"id":4`) || !strings.Contains(got, "APPROVAL_DENIED") {
				t.Fatalf("the client got %s; want the retry refused APPROVAL_DENIED", got)
			}
			pw.Close()
			if _, err := r.End(record.EndClientEOF, ""); err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, rec := range records(t, j, path) {
				s := rec.Kind.String()
				if o, ok := rec.Body.(*record.Outcome); ok {
					s += ":" + o.Status
				}
				if in, ok := rec.Body.(*record.Intent); ok && in.Approval != nil && in.Approval.Elicit {
					s += ":asked"
				}
				kinds = append(kinds, s)
			}
			got := strings.Join(kinds, " ")
			// Approved, the retry's outcome is the child's (which answers
			// nothing here: it is settled at End).
			wantKinds := "session_start intent:asked outcome:input_required intent:asked outcome:input_required intent intent:asked intent approval"
			if tc.verdict != record.ApprovalApproved {
				wantKinds += " outcome:host_denied"
			}
			if !strings.HasPrefix(got, wantKinds) {
				t.Errorf("records %s; want them to begin %s", got, wantKinds)
			}
		})
	}
}

// TestApprovalElicitationCapability: a 2026-07-28 call is asked inside
// the protocol only when its params._meta clientCapabilities declare
// elicitation.url, an object, each key on the way once and in no other
// case; any other call waits for the approver as without the option: the
// client's first line is the approver's refusal, not an elicitation.
func TestApprovalElicitationCapability(t *testing.T) {
	const rev = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	const caps = `"io.modelcontextprotocol/clientCapabilities"`
	for _, tc := range []struct {
		name, meta string
		asked      bool
	}{
		{"declared", rev + `,` + caps + `:{"elicitation":{"url":{}}}`, true},
		{"declared with form", rev + `,` + caps + `:{"elicitation":{"form":{},"url":{"x":1}}}`, true},
		{"declared escaped", rev + `,` + caps + `:{"elicitation":{"\u0075rl":{}}}`, true},
		{"absent", rev, false},
		{"no elicitation", rev + `,` + caps + `:{}`, false},
		{"elicitation without url", rev + `,` + caps + `:{"elicitation":{}}`, false},
		{"form only", rev + `,` + caps + `:{"elicitation":{"form":{}}}`, false},
		{"url not an object", rev + `,` + caps + `:{"elicitation":{"url":true}}`, false},
		{"url null", rev + `,` + caps + `:{"elicitation":{"url":null}}`, false},
		{"url twice", rev + `,` + caps + `:{"elicitation":{"url":{},"url":{}}}`, false},
		{"elicitation twice", rev + `,` + caps + `:{"elicitation":{"url":{}},"elicitation":{}}`, false},
		{"capabilities twice", rev + `,` + caps + `:{"elicitation":{"url":{}}},` + caps + `:{}`, false},
		{"url case variant", rev + `,` + caps + `:{"elicitation":{"URL":{}}}`, false},
		{"url and a case variant", rev + `,` + caps + `:{"elicitation":{"url":{},"Url":{}}}`, false},
		{"elicitation case variant", rev + `,` + caps + `:{"Elicitation":{"url":{}}}`, false},
		{"capabilities case variant", rev + `,"io.modelcontextprotocol/clientcapabilities":{"elicitation":{"url":{}}}`, false},
		{"capabilities not an object", rev + `,` + caps + `:[{"elicitation":{"url":{}}}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := testJournal(t)
			tab := approval.NewTable(time.Hour)
			client, child := newLineChan(), newLineChan()
			r := relay.New(relay.Config{Journal: j, Gate: policy.NewGate(mustPolicy(t, "version: 1\ndefault: allow\nrules:\n  - tool: write_file\n    action: approve\n")),
				Client: client, Approvals: tab, Server: "s", Caller: gate.Caller{Principal: "uid:7"},
				ApprovalURL: func(id string) string { return "http://127.0.0.1:1/approvals/#id=" + id }})
			pr, pw := io.Pipe()
			go r.Upstream(pr, child)
			defer func() {
				pw.Close()
				r.End(record.EndClientEOF, "")
			}()
			line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"p":1},"_meta":{` + tc.meta + `}}}`
			io.WriteString(pw, line+"\n")
			if tc.asked {
				if got := client.next(t, "asking"); !strings.Contains(got, `"resultType":"input_required"`) || !strings.Contains(got, `"mode":"url"`) {
					t.Fatalf("the client got %s; want the URL-mode elicitation", got)
				}
				return
			}
			// The call waits parked, unanswered, until the approver
			// decides: the client's first line is the refusal.
			io.WriteString(pw, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`+"\n")
			if got := child.next(t, "of the allowed call"); !strings.Contains(got, `"id":2`) {
				t.Fatalf("the child got %s; want the allowed call, the parked one held", got)
			}
			ps := tab.List()
			if len(ps) != 1 {
				t.Fatalf("%d approvals pending; want 1", len(ps))
			}
			if err := tab.Decide(ps[0].ID, approval.Decision{Verdict: record.ApprovalDenied, HasBy: true, UID: 7, Reason: "no"}); err != nil {
				t.Fatal(err)
			}
			if got := client.next(t, "refusing the call"); !strings.Contains(got, `"id":1`) || !strings.Contains(got, "APPROVAL_DENIED") {
				t.Fatalf("the client got %s first; want the call refused APPROVAL_DENIED, never asked", got)
			}
		})
	}
}
