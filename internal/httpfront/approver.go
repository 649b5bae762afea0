package httpfront

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aegisrelay/aegis/internal/approval"
	"github.com/aegisrelay/aegis/journal/record"
)

// ApproverPath is where the approvers' page and endpoints are served
// (package documentation, "Approvers").
const ApproverPath = "/approvals/"

// Approver is what the front serves approvers with: the parked calls
// (Table) and the approver's own bearer token, never a client's.
type Approver struct {
	Table *approval.Table
	// Token is the approver token every request to the endpoints must
	// carry; TokenID names it, as "token:<TokenID>", in the approval
	// records of its decisions.
	Token, TokenID string
}

// Bounds of what an approver's request may make the front hold or send.
const (
	// maxDecideBody bounds a decision's body: an id, a verdict and a
	// reason of at most approval.MaxReason bytes, each escaped.
	maxDecideBody = 8 << 10
	// MaxListed bounds the calls one listing sends, oldest first; its
	// total says how many wait.
	MaxListed = 256
)

//go:embed page
var pageFS embed.FS

// pageFiles are the page's files, by their path under ApproverPath.
var pageFiles = map[string]struct{ file, typ string }{
	"":         {"page/index.html", "text/html; charset=utf-8"},
	"page.js":  {"page/page.js", "text/javascript; charset=utf-8"},
	"page.css": {"page/page.css", "text/css; charset=utf-8"},
}

// pagePolicy is the Content-Security-Policy of every approver response:
// the page's own script, style and endpoints only, no frame may hold it,
// and no form or base may point elsewhere.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// serveApprover serves a request under ApproverPath (or ApproverPath
// without its slash): the page's files to anyone the Host check lets
// through, and the endpoints, pending and decide, to the approver token
// alone.
func (s *Server) serveApprover(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", pagePolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if s.cfg.CheckHost && !hostAllowed(r.Host, s.cfg.AllowHosts) {
		closeUnread(w)
		httpError(w, http.StatusForbidden, "Host not allowed: wrap --listen accepts the loopback names and those given with --allow-host NAME")
		return
	}
	if r.URL.Path == strings.TrimSuffix(ApproverPath, "/") {
		http.Redirect(w, r, ApproverPath, http.StatusMovedPermanently)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, ApproverPath)
	if f, ok := pageFiles[name]; ok {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpError(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		b, _ := pageFS.ReadFile(f.file)
		h.Set("Content-Type", f.typ)
		w.Write(b)
		return
	}
	switch name {
	case "pending":
		if !s.approverAdmit(w, r, http.MethodGet) {
			return
		}
		s.approverList(w)
	case "decide":
		if !s.approverAdmit(w, r, http.MethodPost) {
			return
		}
		s.approverDecide(w, r)
	default:
		closeUnread(w)
		http.NotFound(w, r)
	}
}

// approverAdmit checks a request to an approver endpoint: its method, a
// browser's word that it comes from the page itself (Sec-Fetch-Site and
// Origin, when sent: a page of another origin cannot make it, even one
// on this machine), and the approver token. A client's token is refused
// (403): it never decides. A request refused here closes its connection.
func (s *Server) approverAdmit(w http.ResponseWriter, r *http.Request, method string) bool {
	refuse := func(status int, msg string) bool {
		closeUnread(w)
		httpError(w, status, msg)
		return false
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		return refuse(http.StatusMethodNotAllowed, "method not allowed")
	}
	if v := r.Header.Values("Sec-Fetch-Site"); len(v) > 1 || len(v) == 1 && v[0] != "same-origin" {
		return refuse(http.StatusForbidden, "approvals are decided from the approvals page itself: Sec-Fetch-Site must be same-origin")
	}
	if v := r.Header.Values("Origin"); len(v) > 1 || len(v) == 1 && !sameOrigin(v[0], r) {
		return refuse(http.StatusForbidden, "Origin not allowed: approvals are decided from the approvals page itself")
	}
	tok, ok := bearer(r.Header.Values("Authorization"))
	a := s.cfg.Approver
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(a.Token)) != 1 {
		if ok && s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1 {
			return refuse(http.StatusForbidden, "a client's token does not decide approvals: use the approver token")
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="aegis approvals"`)
		return refuse(http.StatusUnauthorized, "the approver token is required")
	}
	if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok && !c.l.prove(c) {
		return false
	}
	if method == http.MethodPost && !contentTypeJSON(r) || method == http.MethodPost && r.Header.Get("Content-Type") == "" {
		// A body a form of another origin could send (text/plain,
		// urlencoded) is not read: JSON alone, which such a form cannot
		// send without the browser asking first.
		httpError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return false
	}
	return true
}

// sameOrigin reports whether origin is the origin of the request's own
// URL: the page the front serves, and no other, on this Host.
func sameOrigin(origin string, r *http.Request) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(origin, scheme+"://"+r.Host)
}

// listing is the pending endpoint's answer.
type listing struct {
	// Total is how many calls wait; Pending the oldest of them, at most
	// MaxListed.
	Total   int                `json:"total"`
	Pending []approval.Pending `json:"pending"`
	Now     time.Time          `json:"now"`
}

// approverList answers with the calls that wait, oldest first: what a
// client sent of each is quoted and bounded (approval.Quote), so that
// the page shows it as text.
func (s *Server) approverList(w http.ResponseWriter) {
	ps := s.cfg.Approver.Table.List()
	l := listing{Total: len(ps), Pending: ps[:min(len(ps), MaxListed)], Now: time.Now()}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(l)
}

// decision is the decide endpoint's body.
type decision struct {
	ID       string `json:"id"`
	Decision string `json:"decision"` // "approve" or "deny"
	Reason   string `json:"reason"`
}

// approverDecide carries out one decision: approve or deny the call
// parked under its id, the approver named by the token's id.
func (s *Server) approverDecide(w http.ResponseWriter, r *http.Request) {
	var d decision
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxDecideBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil || dec.More() {
		rpcError(w, http.StatusBadRequest, codeInvalidRequest, `want {"id":"…","decision":"approve"|"deny","reason":"…"}`)
		return
	}
	a := s.cfg.Approver
	ad := approval.Decision{HasBy: true, Principal: "token:" + a.TokenID, Reason: d.Reason}
	switch d.Decision {
	case "approve":
		ad.Verdict = record.ApprovalApproved
	case "deny":
		ad.Verdict = record.ApprovalDenied
	default:
		httpError(w, http.StatusBadRequest, `decision must be "approve" or "deny"`)
		return
	}
	err := a.Table.Decide(d.ID, ad)
	switch {
	case errors.Is(err, approval.ErrUnknown):
		httpError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, approval.ErrDecided):
		httpError(w, http.StatusConflict, err.Error())
	case err != nil:
		// The call's session ended, or the log failed: nothing was
		// released.
		httpError(w, http.StatusGone, err.Error())
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}` + "\n"))
	}
}
