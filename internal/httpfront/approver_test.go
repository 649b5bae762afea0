package httpfront

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/journal/record"
)

// resolver records the decisions a Table hands it.
type resolver struct {
	mu  sync.Mutex
	got map[string]approval.Decision
}

func (r *resolver) Resolve(id string, d approval.Decision) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[string]approval.Decision{}
	}
	r.got[id] = d
	return nil
}

func (r *resolver) decision(id string) (approval.Decision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.got[id]
	return d, ok
}

const (
	clientToken   = "client-token-0123456789"
	approverToken = "approver-token-0123456789"
)

// approverFront is a front with a client token and an approver, and one
// call parked under each of ids.
func approverFront(t *testing.T, ids ...string) (*front, *resolver, string) {
	t.Helper()
	tab := approval.NewTable(time.Minute)
	res := &resolver{}
	for _, id := range ids {
		tab.Park(approval.Pending{ID: id, Server: "srv", Tool: approval.Quote([]byte("rm")),
			Args: approval.Quote([]byte(`{"path":"<img src=x onerror=alert(1)>"}`)), Caller: "token:c", Since: time.Now()}, res)
	}
	f := newFront(t, Config{CheckHost: true, Token: clientToken, TokenID: "c",
		Approver: &Approver{Table: tab, Token: approverToken, TokenID: "a1"}})
	return f, res, strings.TrimSuffix(f.url, Path) + ApproverPath
}

func approverDo(t *testing.T, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Add(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestApproverRefusals: the approver endpoints take the approver token
// alone (a client's is 403, none or another 401), and refuse what a page
// of another origin could make a browser send: a cross-site
// Sec-Fetch-Site, a foreign Origin, a body that is not JSON; the MCP
// endpoint takes no approver token; every response forbids framing.
// Nothing refused decides anything.
func TestApproverRefusals(t *testing.T) {
	f, res, base := approverFront(t, "00000000000000aa")
	auth := "Authorization: Bearer " + approverToken
	decide := `{"id":"00000000000000aa","decision":"approve"}`
	json := "Content-Type: application/json"
	for _, tt := range []struct {
		name, method, path, body string
		hdr                      []string
		want                     int
	}{
		{"no token", "GET", "pending", "", nil, 401},
		{"client token lists", "GET", "pending", "", []string{"Authorization: Bearer " + clientToken}, 403},
		{"client token decides", "POST", "decide", decide, []string{"Authorization: Bearer " + clientToken, json}, 403},
		{"other token", "POST", "decide", decide, []string{"Authorization: Bearer nope", json}, 401},
		{"two authorizations", "POST", "decide", decide, []string{auth, auth, json}, 401},
		{"cross-site fetch", "POST", "decide", decide, []string{auth, json, "Sec-Fetch-Site: cross-site"}, 403},
		{"same-site fetch", "POST", "decide", decide, []string{auth, json, "Sec-Fetch-Site: same-site"}, 403},
		{"foreign origin", "POST", "decide", decide, []string{auth, json, "Origin: http://evil.example"}, 403},
		{"loopback origin of another port", "POST", "decide", decide, []string{auth, json, "Origin: http://127.0.0.1:1"}, 403},
		{"null origin", "POST", "decide", decide, []string{auth, json, "Origin: null"}, 403},
		{"form body", "POST", "decide", "id=00000000000000aa&decision=approve", []string{auth, "Content-Type: application/x-www-form-urlencoded"}, 415},
		{"text body", "POST", "decide", decide, []string{auth, "Content-Type: text/plain"}, 415},
		{"no content type", "POST", "decide", decide, []string{auth}, 415},
		{"GET decides", "GET", "decide", "", []string{auth}, 405},
		{"unknown field", "POST", "decide", `{"id":"00000000000000aa","decision":"approve","by":"root"}`, []string{auth, json}, 400},
		{"two values", "POST", "decide", decide + decide, []string{auth, json}, 400},
		{"big body", "POST", "decide", `{"id":"00000000000000aa","decision":"deny","reason":"` + strings.Repeat("x", 9<<10) + `"}`, []string{auth, json}, 400},
		{"other verdict", "POST", "decide", `{"id":"00000000000000aa","decision":"expire"}`, []string{auth, json}, 400},
		{"foreign host", "GET", "", "", []string{"Host: evil.example"}, 403},
		{"unknown path", "GET", "secret", "", []string{auth}, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := approverDo(t, tt.method, base+tt.path, tt.body, tt.hdr...)
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s = %d %s; want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
			}
			if fa := resp.Header.Get("Content-Security-Policy"); !strings.Contains(fa, "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("CSP %q, X-Frame-Options %q; want framing forbidden", fa, resp.Header.Get("X-Frame-Options"))
			}
		})
	}
	if d, ok := res.decision("00000000000000aa"); ok {
		t.Fatalf("a refused request decided: %+v", d)
	}
	resp := f.do(t, t.Context(), "POST", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`, "Authorization: Bearer "+approverToken)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("the approver token on the MCP endpoint: %d; want 401", resp.StatusCode)
	}
}

// TestApproverDecide: the approver token lists the calls that wait, with
// what a client sent quoted as text, and decides each once; the decision
// names the approver by the token's id, and carries a denial's reason.
func TestApproverDecide(t *testing.T) {
	_, res, base := approverFront(t, "00000000000000aa", "00000000000000bb")
	auth, ct, same := "Authorization: Bearer "+approverToken, "Content-Type: application/json", "Sec-Fetch-Site: same-origin"
	resp, body := approverDo(t, "GET", base+"pending", "", auth, same)
	var l listing
	if err := json.Unmarshal([]byte(body), &l); err != nil || resp.StatusCode != 200 || l.Total != 2 || len(l.Pending) != 2 {
		t.Fatalf("pending = %d %s; want the two calls", resp.StatusCode, body)
	}
	if p := l.Pending[0]; p.Tool != `"rm"` || p.Args != `"{\"path\":\"<img src=x onerror=alert(1)>\"}"` {
		t.Errorf("listed %+v; want the tool and arguments quoted", p)
	}
	origin := "Origin: " + strings.TrimSuffix(base, ApproverPath)
	for _, tt := range []struct {
		body string
		want int
	}{
		{`{"id":"00000000000000aa","decision":"approve"}`, 200},
		{`{"id":"00000000000000aa","decision":"deny","reason":"late"}`, 409},
		{`{"id":"00000000000000bb","decision":"deny","reason":"not \"now\" <b>"}`, 200},
		{`{"id":"00000000000000cc","decision":"approve"}`, 404},
	} {
		if resp, body := approverDo(t, "POST", base+"decide", tt.body, auth, ct, same, origin); resp.StatusCode != tt.want {
			t.Errorf("decide %s = %d %s; want %d", tt.body, resp.StatusCode, body, tt.want)
		}
	}
	want := map[string]approval.Decision{
		"00000000000000aa": {Verdict: record.ApprovalApproved, HasBy: true, Principal: "token:a1"},
		"00000000000000bb": {Verdict: record.ApprovalDenied, HasBy: true, Principal: "token:a1", Reason: `not "now" <b>`},
	}
	for id, w := range want {
		if d, _ := res.decision(id); d != w {
			t.Errorf("%s decided %+v; want %+v", id, d, w)
		}
	}
	if _, body := approverDo(t, "GET", base+"pending", "", auth); !strings.Contains(body, `"total":0`) {
		t.Errorf("pending after both decisions: %s", body)
	}
}

// TestApproverPage: the page and its files are served to anyone past the
// Host check (they hold no data), with a policy that runs the page's own
// script alone and forbids framing; /approvals redirects to it.
func TestApproverPage(t *testing.T) {
	_, _, base := approverFront(t)
	for _, tt := range []struct{ path, typ, holds string }{
		{"", "text/html", `<script src="page.js"`},
		{"page.js", "text/javascript", "textContent"},
		{"page.css", "text/css", "table"},
	} {
		resp, body := approverDo(t, "GET", base+tt.path, "")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.typ) || !strings.Contains(body, tt.holds) {
			t.Errorf("GET %s = %d %s; want %s holding %s", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.typ, tt.holds)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: CSP %q", tt.path, csp)
		}
	}
	if strings.Contains(string(must(pageFS.ReadFile("page/page.js"))), "innerHTML") {
		t.Error("page.js sets innerHTML: a client's text must reach the page as text alone")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(strings.TrimSuffix(base, "/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 301 || resp.Header.Get("Location") != ApproverPath {
		t.Errorf("GET /approvals = %d to %q; want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), ApproverPath)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
